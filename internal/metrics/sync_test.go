package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"google.golang.org/grpc"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/metrics"
)

// syncStream opens a Sync session with include_json as given.
func syncStream(t *testing.T, client tributaryv1.TranslationServiceClient, includeJSON bool) grpc.BidiStreamingClient[tributaryv1.SyncRequest, tributaryv1.SyncResponse] {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	stream, err := client.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{IncludeJson: includeJSON}}}); err != nil {
		t.Fatal(err)
	}
	return stream
}

func sendBatch(t *testing.T, stream grpc.BidiStreamingClient[tributaryv1.SyncRequest, tributaryv1.SyncResponse], b *tributaryv1.SyncBatch) {
	t.Helper()
	if err := stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: b}}); err != nil {
		t.Fatal(err)
	}
}

func recv(t *testing.T, stream grpc.BidiStreamingClient[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) *tributaryv1.SyncResponse {
	t.Helper()
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// finish half-closes stream and waits for the server to end it with OK.
func finish(t *testing.T, stream grpc.BidiStreamingClient[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) {
	t.Helper()
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if resp, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after half-close: %v, %v; want the end of the stream", resp, err)
	}
}

// malformed is a batch the server rejects: a delete of no kind.
func malformed(id uint64) *tributaryv1.SyncBatch {
	return &tributaryv1.SyncBatch{Id: id, Deletes: []*tributaryv1.ObjectReference{{Namespace: "auth", Name: "x"}}}
}

func TestSyncSession(t *testing.T) {
	m := metrics.New()
	client := serveTranslation(t, m)
	reg := m.Registry()
	objects := func(es, svc, slices float64) map[string]float64 {
		return map[string]float64{
			"tributary_sync_session_objects kind=ExtensionService":         es,
			"tributary_sync_session_objects kind=Service":                  svc,
			"tributary_sync_session_objects kind=EndpointSlice":            slices,
			"tributary_sync_session_objects kind=Secret":                   0,
			"tributary_sync_session_objects kind=TLSCertificateDelegation": 0,
		}
	}
	expect(t, reg, "before the session", map[string]float64{"tributary_sync_sessions_active": 0})
	expect(t, reg, "before the session", objects(0, 0, 0))

	stream := syncStream(t, client, false)
	sendBatch(t, stream, &tributaryv1.SyncBatch{Id: 1, Upserts: example(t).GetObjects()})
	if d := recv(t, stream).GetDelta(); d.GetBatchId() != 1 || len(d.GetClusters()) != 1 {
		t.Fatalf("first answer: %v", d)
	}
	// The gauges are set before the answer is sent, the resources sent are
	// counted once it is.
	waitFor(t, func() bool {
		return sample(t, reg, "tributary_resources_sent_total", "rpc", "sync", "type", claType) == 1
	})
	expect(t, reg, "after the full state", map[string]float64{
		"tributary_sync_sessions_active":                              1,
		"tributary_translation_duration_seconds rpc=sync":             1,
		"tributary_resources_sent_total rpc=sync type=" + clusterType: 1,
		"tributary_resources_sent_total rpc=sync type=" + claType:     1,
		"tributary_sync_batches_rejected_total":                       0,
	})
	expect(t, reg, "after the full state", objects(1, 2, 2))

	// Dropping the canary's slice changes the ClusterLoadAssignment only;
	// upserting the stable Service again changes no count.
	req := example(t)
	var stable *tributaryv1.KubernetesObject
	for _, o := range req.GetObjects() {
		if o.GetService().GetMetadata().GetName() == "authz-stable" {
			stable = o
		}
	}
	sendBatch(t, stream, &tributaryv1.SyncBatch{Id: 2, Upserts: []*tributaryv1.KubernetesObject{stable}, Deletes: []*tributaryv1.ObjectReference{
		{Kind: tributaryv1.ObjectKind_OBJECT_KIND_ENDPOINT_SLICE, Namespace: "auth", Name: canarySlice(t, req)},
		{Kind: tributaryv1.ObjectKind_OBJECT_KIND_SECRET, Namespace: "auth", Name: "never-sent"},
	}})
	if d := recv(t, stream).GetDelta(); d.GetBatchId() != 2 || len(d.GetClusters()) != 0 || len(d.GetClusterLoadAssignments()) != 1 {
		t.Fatalf("second answer: %v", d)
	}
	sendBatch(t, stream, malformed(3))
	if r := recv(t, stream).GetRejected(); r.GetBatchId() != 3 {
		t.Fatalf("third answer: %v", r)
	}
	expect(t, reg, "after a change and a rejection", map[string]float64{
		"tributary_sync_sessions_active":                              1,
		"tributary_translation_duration_seconds rpc=sync":             2,
		"tributary_resources_sent_total rpc=sync type=" + clusterType: 1,
		"tributary_resources_sent_total rpc=sync type=" + claType:     2,
		"tributary_sync_batches_rejected_total":                       1,
		// Every batch was read before the next was sent.
		"tributary_deltas_coalesced_total": 0,
	})
	expect(t, reg, "after a change and a rejection", objects(1, 2, 1))

	finish(t, stream)
	// The handler has returned before the client sees the end of the stream.
	expect(t, reg, "after the session", map[string]float64{
		"tributary_sync_sessions_active": 0,
		"grpc_server_handled_total grpc_type=bidi_stream grpc_service=tributary.v1.TranslationService grpc_method=Sync grpc_code=OK": 1,
		// The start and three batches in, three answers out.
		"grpc_server_msg_received_total grpc_type=bidi_stream grpc_service=tributary.v1.TranslationService grpc_method=Sync": 4,
		"grpc_server_msg_sent_total grpc_type=bidi_stream grpc_service=tributary.v1.TranslationService grpc_method=Sync":     3,
	})
	expect(t, reg, "after the session", objects(0, 0, 0))
}

// canarySlice is the name of the canary Service's EndpointSlice in req.
func canarySlice(t *testing.T, req *tributaryv1.TranslateRequest) string {
	t.Helper()
	for _, o := range req.GetObjects() {
		if s := o.GetEndpointSlice(); s.GetMetadata().GetLabels()["kubernetes.io/service-name"] == "authz-canary" {
			return s.GetMetadata().GetName()
		}
	}
	t.Fatal("the example has no canary EndpointSlice")
	return ""
}

// TestSyncCoalescesForSlowReader has a client write several batches
// while it reads nothing: the server's first answer is larger than the
// client's flow-control window, so its sender stays blocked on it, and the
// batches applied meanwhile are answered together. Which batches the first
// answer covers depends on scheduling; the count of merged batches is
// exact for either.
func TestSyncCoalescesForSlowReader(t *testing.T) {
	m := metrics.New()
	// A fixed 64 KiB window (it turns off BDP estimation, which would widen
	// it).
	client := serveTranslation(t, m, grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	reg := m.Registry()

	// About 1 MiB of ClusterLoadAssignment: 20,000 endpoints in the stable
	// Service's slice.
	req := example(t)
	for _, o := range req.GetObjects() {
		if s := o.GetEndpointSlice(); s.GetMetadata().GetLabels()["kubernetes.io/service-name"] == "authz-stable" {
			for i := range 20000 {
				s.Endpoints = append(s.Endpoints, &tributaryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 100+i/65536, i/256%256, i%256)}})
			}
		}
	}
	stream := syncStream(t, client, false)
	sendBatch(t, stream, &tributaryv1.SyncBatch{Id: 1, Upserts: req.GetObjects()})
	// Batches 2 to 6 each add a Service no ExtensionService targets: each
	// is acknowledged with an empty delta, or merged into a later one.
	const batches = 6
	for id := uint64(2); id <= batches; id++ {
		sendBatch(t, stream, &tributaryv1.SyncBatch{Id: id, Upserts: []*tributaryv1.KubernetesObject{{Kind: &tributaryv1.KubernetesObject_Service{Service: &tributaryv1.Service{
			Metadata: &tributaryv1.ObjectMeta{Namespace: "auth", Name: fmt.Sprintf("unused-%d", id)},
		}}}}})
	}
	// The receiver handles batches in order, so once it has rejected this
	// one, every earlier batch is in the outbox.
	sendBatch(t, stream, malformed(batches+1))
	waitFor(t, func() bool { return sample(t, reg, "tributary_sync_batches_rejected_total") == 1 })

	// gRPC lets one message past its write quota, so the first answer
	// (batch 1, and maybe more) leaves at once and the second one holds
	// the sender until the client reads; by then every batch is applied,
	// so at most one more delta answers the rest: five batches in at most
	// two deltas.
	var deltas []*tributaryv1.SyncDelta
	for len(deltas) == 0 || deltas[len(deltas)-1].GetBatchId() != batches {
		deltas = append(deltas, recv(t, stream).GetDelta())
	}
	if len(deltas) > 3 {
		t.Fatalf("%d deltas for %d batches; want at most 3", len(deltas), batches)
	}
	if cla := deltas[0].GetClusterLoadAssignments(); len(cla) != 1 || len(cla[0].GetResource().GetValue()) < 256<<10 {
		t.Fatalf("the first answer has no ClusterLoadAssignment large enough to fill the window: %d", len(cla))
	}
	if r := recv(t, stream).GetRejected(); r.GetBatchId() != batches+1 {
		t.Fatalf("after the deltas: %v; want the rejection", r)
	}
	finish(t, stream)
	expect(t, reg, "after the session", map[string]float64{
		// Every batch not answered by a delta of its own was merged.
		"tributary_deltas_coalesced_total":                        float64(batches - len(deltas)),
		"tributary_translation_duration_seconds rpc=sync":         batches,
		"tributary_resources_sent_total rpc=sync type=" + claType: 1,
		"tributary_sync_sessions_active":                          0,
		"tributary_sync_session_objects kind=Service":             0,
	})
}
