package client_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/server"
)

// TestSyncFullStateReplacesView: after a reconnect the server's full state
// replaces the session's output, and what the new server no longer has is
// delivered as removals; a stream whose first answer is not a full state is
// dropped and reopened rather than mixed into the output.
func TestSyncFullStateReplacesView(t *testing.T) {
	cluster := func(name, version string) *tributaryv1.Resource {
		return resource(t, &clusterv3.Cluster{Name: name}, name, version)
	}
	cla := func(name, version string) *tributaryv1.Resource {
		return resource(t, &endpointv3.ClusterLoadAssignment{ClusterName: name}, name, version)
	}
	st := func(name string) *tributaryv1.ExtensionServiceStatus {
		return &tributaryv1.ExtensionServiceStatus{Namespace: "ns", Name: name, Conditions: []*tributaryv1.DetailedCondition{{Type: "Valid", Status: "True"}}}
	}
	breakFirst := make(chan struct{})
	fake := &scripted{script: func(n int, recv func() *tributaryv1.SyncBatch, send func(*tributaryv1.SyncResponse)) error {
		b := recv()
		if b == nil {
			return nil
		}
		switch n {
		case 1:
			send(delta(&tributaryv1.SyncDelta{BatchId: b.GetId(), FullState: true, Version: "1",
				Clusters:               []*tributaryv1.Resource{cluster("a", "ca1"), cluster("b", "cb1")},
				ClusterLoadAssignments: []*tributaryv1.Resource{cla("a", "la1"), cla("b", "lb1")},
				Statuses:               []*tributaryv1.ExtensionServiceStatus{st("a"), st("b")},
			}))
			select {
			case <-breakFirst:
			case <-t.Context().Done():
			}
			return status.Error(codes.Unavailable, "going away")
		case 2:
			// A delta that is not a full state cannot start a stream.
			send(delta(&tributaryv1.SyncDelta{BatchId: b.GetId(), Version: "2", RemovedClusters: []string{"a"}}))
		default:
			send(delta(&tributaryv1.SyncDelta{BatchId: b.GetId(), FullState: true, Version: "3",
				Clusters:               []*tributaryv1.Resource{cluster("a", "ca1")},
				ClusterLoadAssignments: []*tributaryv1.Resource{cla("a", "la2")},
				Statuses:               []*tributaryv1.ExtensionServiceStatus{st("a")},
			}))
		}
		return nil
	}}
	sb := newSwitchboard(t)
	gs := grpc.NewServer()
	tributaryv1.RegisterTranslationServiceServer(gs, fake)
	sb.serve(gs)
	rec := newRecorder()
	s := client.New(sb.conn()).Sync(t.Context(), nil, client.WithUpdateHandler(rec.handle), client.WithLogger(quietLogger()),
		client.WithBackoff(time.Millisecond, 10*time.Millisecond))
	defer s.Close()

	objs := []*tributaryv1.KubernetesObject{extension("a", target("v1", 1)), extension("b", target("v1", 1)), service("v1")}
	s.Upsert(objs...)
	flush(t, s)
	first := rec.take()
	diffShapes(t, "first stream", []updateShape{{FullState: true, Clusters: []string{"a", "b"}, ClusterLoadAssignments: []string{"a", "b"}, Statuses: []string{"ns/a:True", "ns/b:True"}}}, first)
	close(breakFirst)

	third := rec.await(t)
	diffShapes(t, "third stream", []updateShape{{FullState: true,
		ClusterLoadAssignments:        []string{"a"},
		RemovedClusters:               []string{"b"},
		RemovedClusterLoadAssignments: []string{"b"},
		RemovedStatuses:               []string{"ns/b"},
	}}, []client.Update{third})
	if third.Version != "3" || third.ClusterLoadAssignmentVersions["a"] != "la2" {
		t.Errorf("third update: version %q, CLA version %q; want 3 and la2", third.Version, third.ClusterLoadAssignmentVersions["a"])
	}
	v := s.View()
	if v.Version != "3" || !cmp.Equal(v.ClusterVersions, map[string]string{"a": "ca1"}) || !cmp.Equal(v.ClusterLoadAssignmentVersions, map[string]string{"a": "la2"}) || len(v.Statuses) != 1 {
		t.Errorf("view: version %q, clusters %v, CLAs %v, %d statuses; want 3, a:ca1, a:la2, 1", v.Version, v.ClusterVersions, v.ClusterLoadAssignmentVersions, len(v.Statuses))
	}
	diffViews(t, "replayed updates vs view", v, replay(append(first, third)))

	// Every stream got one batch with the complete acknowledged set: the
	// first as the client's changes, the others as resends.
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.streams != 3 {
		t.Errorf("%d streams, want 3", fake.streams)
	}
	for i, bs := range fake.batches {
		if len(bs) != 1 {
			t.Errorf("stream %d got %d batches, want 1", i+1, len(bs))
			continue
		}
		want := &tributaryv1.SyncBatch{Id: uint64(i + 1), Upserts: []*tributaryv1.KubernetesObject{objs[0], objs[1], objs[2]}}
		if d := cmp.Diff(want, bs[0], protocmp.Transform()); d != "" {
			t.Errorf("stream %d batch (-want +got):\n%s", i+1, d)
		}
	}
}

// TestSyncResendRejected: a server that refuses the objects an earlier
// server accepted ends the session: retrying would be refused again. A
// Flush waiting for the restore returns the rejection.
func TestSyncResendRejected(t *testing.T) {
	breakFirst, gotResend, reject := make(chan struct{}), make(chan struct{}), make(chan struct{})
	wait := func(c chan struct{}) {
		select {
		case <-c:
		case <-t.Context().Done():
		}
	}
	fake := &scripted{script: func(n int, recv func() *tributaryv1.SyncBatch, send func(*tributaryv1.SyncResponse)) error {
		b := recv()
		if b == nil {
			return nil
		}
		if n == 1 {
			send(delta(&tributaryv1.SyncDelta{BatchId: b.GetId(), FullState: true, Version: "1"}))
			wait(breakFirst)
			return status.Error(codes.Unavailable, "going away")
		}
		close(gotResend)
		wait(reject)
		send(&tributaryv1.SyncResponse{Message: &tributaryv1.SyncResponse_Rejected{Rejected: &tributaryv1.BatchRejected{BatchId: b.GetId(), Message: "no"}}})
		return nil
	}}
	sb := newSwitchboard(t)
	gs := grpc.NewServer()
	tributaryv1.RegisterTranslationServiceServer(gs, fake)
	sb.serve(gs)
	s := client.New(sb.conn()).Sync(t.Context(), nil, client.WithLogger(quietLogger()), client.WithBackoff(time.Millisecond, 10*time.Millisecond))
	defer s.Close()
	s.Upsert(service("v1"))
	flush(t, s)

	close(breakFirst)
	wait(gotResend)
	// A change made while the resend is in flight waits for it, and ends
	// with the session (whether Flush starts before or after the end).
	s.Upsert(service("v2"))
	flushed := make(chan error, 1)
	go func() { flushed <- s.Flush(t.Context()) }()
	close(reject)
	var rejected *client.BatchRejectedError
	if err := <-flushed; !errors.As(err, &rejected) || rejected.BatchID != 2 {
		t.Errorf("Flush of a change made during the resend: got %v, want batch 2 rejected", err)
	}
	<-s.Done()
	if err := s.Err(); !errors.As(err, &rejected) || rejected.BatchID != 2 {
		t.Fatalf("Err() = %v, want batch 2 rejected", err)
	}
	if err := s.Flush(t.Context()); !errors.As(err, &rejected) {
		t.Errorf("Flush after the end: got %v, want the rejection", err)
	}
}

// TestSyncXDSPublishing: the xDS options reach the server in SyncStart, and
// an XdsNack answer goes to the handler without breaking the stream.
func TestSyncXDSPublishing(t *testing.T) {
	nack := &tributaryv1.XdsNack{NodeId: "envoy-1", NodeGroup: "projectcontour", TypeUrl: "type.googleapis.com/envoy.config.cluster.v3.Cluster",
		ResourceNames: []string{"extension/ns/a"}, ErrorDetail: "refused"}
	fake := &scripted{script: func(n int, recv func() *tributaryv1.SyncBatch, send func(*tributaryv1.SyncResponse)) error {
		b := recv()
		if b == nil {
			return nil
		}
		send(&tributaryv1.SyncResponse{Message: &tributaryv1.SyncResponse_XdsNack{XdsNack: nack}})
		send(delta(&tributaryv1.SyncDelta{BatchId: b.GetId(), FullState: true, Version: "1"}))
		return nil
	}}
	sb := newSwitchboard(t)
	gs := grpc.NewServer()
	tributaryv1.RegisterTranslationServiceServer(gs, fake)
	sb.serve(gs)
	var got []*tributaryv1.XdsNack
	var mu sync.Mutex
	s := client.New(sb.conn()).Sync(t.Context(), nil, client.WithLogger(quietLogger()),
		client.WithXDSPublishing("projectcontour", true),
		client.WithXDSNackHandler(func(n *tributaryv1.XdsNack) { mu.Lock(); got = append(got, n); mu.Unlock() }))
	defer s.Close()
	s.Upsert(service("v1"))
	flush(t, s)

	mu.Lock()
	defer mu.Unlock()
	if d := cmp.Diff([]*tributaryv1.XdsNack{nack}, got, protocmp.Transform()); d != "" {
		t.Errorf("NACKs delivered (-want +got):\n%s", d)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	want := []*tributaryv1.SyncStart{{XdsNodeGroup: "projectcontour", PublishListeners: true}}
	if d := cmp.Diff(want, fake.starts, protocmp.Transform()); d != "" {
		t.Errorf("SyncStart (-want +got):\n%s", d)
	}
}

// TestSyncOversizedBatchEndsSession: a batch over the server's message size
// limit would be refused on every retry, so it ends the session and Flush
// returns the error instead of waiting for a reconnect that cannot help.
func TestSyncOversizedBatchEndsSession(t *testing.T) {
	sb := newSwitchboard(t)
	sb.serve(server.NewGRPCServer(server.Options{Logger: quietLogger(), MaxRecvMsgSize: 4096}))
	s := client.New(sb.conn()).Sync(t.Context(), nil, client.WithLogger(quietLogger()),
		client.WithBackoff(time.Millisecond, 10*time.Millisecond))
	defer s.Close()

	s.Upsert(&tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Secret{Secret: &tributaryv1.Secret{
		Metadata: &tributaryv1.ObjectMeta{Namespace: "ns", Name: "big"}, CaCrt: make([]byte, 8192)}}})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := s.Flush(ctx)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "larger than max") {
		t.Fatalf("Flush of an oversized batch: got %v, want ResourceExhausted (larger than max)", err)
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatal("the session did not end")
	}
	if status.Code(s.Err()) != codes.ResourceExhausted {
		t.Errorf("Err: got %v, want ResourceExhausted", s.Err())
	}
}

// TestSyncUpsertAndDeleteReportChanges: Upsert and Delete report whether
// the desired set changed, so that a caller that flushes after every change
// (the Contour adapter) starts no flush for a resync or the echo of its own
// status write.
func TestSyncUpsertAndDeleteReportChanges(t *testing.T) {
	sb := newSwitchboard(t)
	gs := grpc.NewServer()
	tributaryv1.RegisterTranslationServiceServer(gs, &scripted{script: func(int, func() *tributaryv1.SyncBatch, func(*tributaryv1.SyncResponse)) error { return nil }})
	sb.serve(gs)
	s := client.New(sb.conn()).Sync(t.Context(), nil, client.WithLogger(quietLogger()))
	defer s.Close()
	steps := []struct {
		what string
		do   func() bool
		want bool
	}{
		{"a new object", func() bool { return s.Upsert(service("v1")) }, true},
		{"an equal object again", func() bool { return s.Upsert(service("v1")) }, false},
		{"another object", func() bool { return s.Upsert(service("v2")) }, true},
		{"delete that one", func() bool { return s.Delete(client.Reference(service("v2"))) }, true},
		{"delete that one again", func() bool { return s.Delete(client.Reference(service("v2"))) }, false},
	}
	for _, step := range steps {
		if got := step.do(); got != step.want {
			t.Errorf("%s: reported a change %v, want %v", step.what, got, step.want)
		}
	}
}
