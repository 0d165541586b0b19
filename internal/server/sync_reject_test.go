package server

import (
	"fmt"
	"testing"
	"unsafe"

	gocmp "github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
)

// TestSyncRejectsMalformedBatches: each malformed batch is answered with a
// BatchRejected naming every problem, exactly as Translate would word it,
// and changes nothing; the stream goes on.
func TestSyncRejectsMalformedBatches(t *testing.T) {
	const es = tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE
	const svc = tributaryv1.ObjectKind_OBJECT_KIND_SERVICE
	tooMany := make([]*tributaryv1.ObjectReference, DefaultMaxBatchObjects+1)
	for i := range tooMany {
		tooMany[i] = deleteOf(svc, "ns", "x")
	}
	tests := []struct {
		name    string
		batch   *tributaryv1.SyncBatch
		wantMsg string
		want    []violation
	}{{
		// The valid scale-up in the same batch must not be applied.
		name:    "bad upsert beside a good one",
		batch:   batch(10, slice("a", "10.0.0.7"), serviceObject(meta("ns", ""))),
		wantMsg: `batch.upserts[1] (Service): metadata.name is required`,
		want:    []violation{{"batch.upserts[1].service.metadata.name", ReasonRequired, `batch.upserts[1] (Service): metadata.name is required`}},
	}, {
		name:    "upsert without kind",
		batch:   batch(11, &tributaryv1.KubernetesObject{}),
		wantMsg: `batch.upserts[0]: kind is required (one of extensionService, service, endpointSlice, secret, tlsCertificateDelegation)`,
		want: []violation{{"batch.upserts[0]", ReasonRequired,
			`batch.upserts[0]: kind is required (one of extensionService, service, endpointSlice, secret, tlsCertificateDelegation)`}},
	}, {
		name:    "same object upserted twice",
		batch:   batch(12, slice("a", "10.0.0.7"), service("a"), slice("a", "10.0.0.8")),
		wantMsg: `batch.upserts[2] (EndpointSlice "ns/a-1"): metadata.name duplicates batch.upserts[0]: two EndpointSlices have the same namespace and name`,
		want: []violation{{"batch.upserts[2].endpointSlice.metadata.name", ReasonDuplicate,
			`batch.upserts[2] (EndpointSlice "ns/a-1"): metadata.name duplicates batch.upserts[0]: two EndpointSlices have the same namespace and name`}},
	}, {
		name: "same object upserted and deleted",
		batch: &tributaryv1.SyncBatch{Id: 13, Upserts: []*tributaryv1.KubernetesObject{service("a")},
			Deletes: []*tributaryv1.ObjectReference{deleteOf(es, "ns", "a"), deleteOf(svc, "ns", "a")}},
		wantMsg: `batch.deletes[1] (Service "ns/a"): name duplicates batch.upserts[0]: a batch cannot both upsert and delete an object`,
		want: []violation{{"batch.deletes[1].name", ReasonDuplicate,
			`batch.deletes[1] (Service "ns/a"): name duplicates batch.upserts[0]: a batch cannot both upsert and delete an object`}},
	}, {
		name:    "same object deleted twice",
		batch:   &tributaryv1.SyncBatch{Id: 14, Deletes: []*tributaryv1.ObjectReference{deleteOf(svc, "ns", "b"), deleteOf(svc, "ns", "b")}},
		wantMsg: `batch.deletes[1] (Service "ns/b"): name duplicates batch.deletes[0]: two deletes name the same Service`,
		want: []violation{{"batch.deletes[1].name", ReasonDuplicate,
			`batch.deletes[1] (Service "ns/b"): name duplicates batch.deletes[0]: two deletes name the same Service`}},
	}, {
		name: "bad deletes",
		batch: &tributaryv1.SyncBatch{Id: 15, Deletes: []*tributaryv1.ObjectReference{
			deleteOf(tributaryv1.ObjectKind_OBJECT_KIND_UNSPECIFIED, "ns", "b"),
			deleteOf(42, "ns", "b"),
			deleteOf(svc, "", "Bad_Name"),
		}},
		wantMsg: `batch.deletes[0]: kind is required (` + knownObjectKinds + `) (and 3 more problems)`,
		want: []violation{
			{"batch.deletes[0].kind", ReasonRequired, `batch.deletes[0]: kind is required (` + knownObjectKinds + `)`},
			{"batch.deletes[1].kind", ReasonOutOfRange, `batch.deletes[1]: kind 42 is not a known kind (` + knownObjectKinds + `)`},
			{"batch.deletes[2].namespace", ReasonRequired, `batch.deletes[2] (Service): namespace is required`},
			{"batch.deletes[2].name", ReasonInvalidName, `batch.deletes[2] (Service): name "Bad_Name" is not a valid name (` + dns1123SubdomainRule + `)`},
		},
	}, {
		name:    "too many objects",
		batch:   &tributaryv1.SyncBatch{Id: 16, Deletes: tooMany},
		wantMsg: fmt.Sprintf("batch holds %d upserts and deletes; a batch holds at most %d", DefaultMaxBatchObjects+1, DefaultMaxBatchObjects),
		want:    []violation{{"batch", ReasonOutOfRange, fmt.Sprintf("batch holds %d upserts and deletes; a batch holds at most %d", DefaultMaxBatchObjects+1, DefaultMaxBatchObjects)}},
	}}

	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	s := newSyncSession(openSync(t.Context(), t, conn, nil), nil, map[string]bool{})
	s.step(batch(1, fixture(t)...), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
		return &tributaryv1.SyncDelta{BatchId: 1, FullState: true, Clusters: o.Clusters, ClusterLoadAssignments: o.ClusterLoadAssignments, Statuses: o.Statuses}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.send(tt.batch)
			want := &tributaryv1.BatchRejected{BatchId: tt.batch.GetId(), Message: tt.wantMsg}
			for _, v := range tt.want {
				want.Violations = append(want.Violations, &tributaryv1.FieldViolation{Field: v.field, Reason: v.reason, Description: v.description})
			}
			got := s.recv()
			if diff := gocmp.Diff(&tributaryv1.SyncResponse{Message: &tributaryv1.SyncResponse_Rejected{Rejected: want}}, got, protocmp.Transform()); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
	// Nothing changed: the next batch's delta holds its own change alone
	// (and the deltas still add up to Translate of the accepted batches).
	s.step(batch(20, slice("b", "10.0.1.2")), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
		return &tributaryv1.SyncDelta{BatchId: 20, ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, tlsCluster)}
	})
	s.closeAndEnd()
}

// TestDecodeBatch: deletes of every kind become the session's references,
// and each upserted object gets arrays of its own, so a session that keeps
// one object of a batch keeps nothing else of it.
func TestDecodeBatch(t *testing.T) {
	var refs []*tributaryv1.ObjectReference
	for k := range tributaryv1.ObjectKind_OBJECT_KIND_TLS_CERTIFICATE_DELEGATION {
		refs = append(refs, deleteOf(k+1, "ns", "gone"))
	}
	pb := &tributaryv1.SyncBatch{Upserts: []*tributaryv1.KubernetesObject{slice("a", "10.0.0.1", "10.0.0.2"), slice("b", "10.0.0.3")}, Deletes: refs}
	// Two ports against one: arrays of their own are then of different
	// sizes, which the allocator never places end to end, where carving
	// from one shared array would.
	two := pb.Upserts[0].GetEndpointSlice()
	two.Ports = append(two.Ports, tcpPort("http", 9002))
	var p problems
	b := decodeBatch(pb, nil, &p)
	if p.count != 0 {
		t.Fatalf("problems: %v", p.violations)
	}
	gone := source.NamespacedName{Namespace: "ns", Name: "gone"}
	want := []session.Ref{
		{Kind: source.KindExtensionService, Name: gone},
		{Kind: source.KindService, Name: gone},
		{Kind: source.KindEndpointSlice, Name: gone},
		{Kind: source.KindSecret, Name: gone},
		{Kind: source.KindTLSCertificateDelegation, Name: gone},
	}
	if diff := gocmp.Diff(want, b.Deletes); diff != "" {
		t.Errorf("deletes (-want +got):\n%s", diff)
	}
	// Endpoints are packed per slice (source.Endpoints); ports are the
	// repeated field a shared array would hold.
	first, second := b.Upserts.EndpointSlices[0], b.Upserts.EndpointSlices[1]
	if first.Endpoints.Len() != 2 || second.Endpoints.Len() != 1 {
		t.Fatalf("got %d and %d endpoints, want 2 and 1", first.Endpoints.Len(), second.Endpoints.Len())
	}
	if len(first.Ports) != 2 || len(second.Ports) != 1 {
		t.Fatalf("got %d and %d ports, want 2 and 1", len(first.Ports), len(second.Ports))
	}
	if unsafeAdjacent(first.Ports, second.Ports) {
		t.Error("the two slices' ports share one array")
	}
}

// unsafeAdjacent reports whether b starts right where a ends in memory, as
// carving from one shared array would place them.
func unsafeAdjacent[T any](a, b []T) bool {
	end := uintptr(unsafe.Pointer(unsafe.SliceData(a))) + uintptr(len(a))*unsafe.Sizeof(a[0])
	return end == uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}
