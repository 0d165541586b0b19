package loadtest

import (
	"context"
	"errors"
	"io"
	"testing"

	"google.golang.org/grpc"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/workload"
)

// TestSlowReader: a Sync client that writes batches and does not read the
// answers blocks only its own stream. Each of its 30 batches rewrites all
// 40 of its EndpointSlices (200 endpoints each, about 160 KiB of answer per
// batch, far beyond HTTP/2's window), so the server cannot send what it
// applies; it keeps applying anyway, merges the waiting answers, and serves
// the other sessions meanwhile. When the client finally reads, it gets
// fewer answers than batches, the last one covering batch 30, and the
// answers add up to exactly the translation of its objects.
// (server/sync_test.go proves the merging itself in process.)
func TestSlowReader(t *testing.T) {
	srv := startServer(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 3*hangGuard)
	defer cancel()
	others := startBystanders(ctx, t, dial(t, srv.Address), 0, 4)

	const batches = 30
	w := newTenant(50, 20, 200)
	stream, err := tributaryv1.NewTranslationServiceClient(dial(t, srv.Address)).Sync(ctx, grpc.MaxCallRecvMsgSize(client.DefaultMaxMsgSize))
	if err != nil {
		t.Fatal(err)
	}
	send := func(b *tributaryv1.SyncBatch) {
		t.Helper()
		if err := stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: b}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}}); err != nil {
		t.Fatal(err)
	}
	services := func() float64 {
		v, _ := testproc.Metric(srv.scrape(t), "tributary_sync_session_objects", `kind="Service"`)
		return v
	}
	servicesBefore := services() + float64(len(w.objs.Services))
	send(&tributaryv1.SyncBatch{Id: 1, Upserts: w.all()})
	for id := uint64(2); id <= batches; id++ {
		b := &tributaryv1.SyncBatch{Id: id}
		for i := range w.objs.EndpointSlices {
			slice := &w.objs.EndpointSlices[i]
			slice.Endpoints = withNewFirstPod(w, slice)
			b.Upserts = append(b.Upserts, workload.EndpointSliceObject(slice))
		}
		if id == batches {
			// A Service no ExtensionService uses: the server's count of
			// Services rises when the last batch is applied (the
			// bystanders add none), and batches are applied in order.
			w.objs.Services = append(w.objs.Services, source.Service{Meta: source.Meta{Namespace: "slow", Name: "marker"}, Type: "ClusterIP"})
			b.Upserts = append(b.Upserts, workload.ServiceObject(&w.objs.Services[len(w.objs.Services)-1]))
		}
		send(b)
	}
	// Every batch is applied although nothing is read, and the bystanders
	// are served meanwhile.
	waitFor(t, "the server to apply the slow reader's last batch", func() bool { return services() == servicesBefore+1 })
	others.waitServed(t, 50)
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}

	// Now read: the answers, applied in order, must give the translation.
	clas := map[string]string{} // name → version
	answers, last := 0, uint64(0)
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after %d answers: %v", answers, err)
		}
		d := resp.GetDelta()
		if d == nil {
			t.Fatalf("answer %d is not a delta: %v", answers, resp)
		}
		answers++
		last = d.GetBatchId()
		for _, r := range d.GetClusterLoadAssignments() {
			clas[r.GetName()] = r.GetVersion()
		}
		for _, name := range d.GetRemovedClusterLoadAssignments() {
			delete(clas, name)
		}
	}
	t.Logf("%d batches were answered by %d deltas", batches, answers)
	if answers >= batches || last != batches {
		t.Errorf("%d batches were answered by %d deltas, the last for batch %d: want fewer deltas than batches, the last for batch %d", batches, answers, last, batches)
	}
	if coalesced, _ := testproc.Metric(srv.scrape(t), "tributary_deltas_coalesced_total"); coalesced < 1 {
		t.Errorf("tributary_deltas_coalesced_total = %v, want at least 1", coalesced)
	}
	want := translate.Translate(w.objs, source.Settings{})
	if len(clas) != len(want.ClusterLoadAssignments) {
		t.Errorf("the answers hold %d ClusterLoadAssignments, the translation %d", len(clas), len(want.ClusterLoadAssignments))
	}
	for _, r := range want.ClusterLoadAssignments {
		if clas[r.Name] != r.Version {
			t.Errorf("ClusterLoadAssignment %s: the answers end with version %q, the translation has %q", r.Name, clas[r.Name], r.Version)
		}
	}
	others.finish(ctx, t)
}

// withNewFirstPod returns slice's endpoints with the first replaced by a
// new pod, so every EndpointSlice the slow reader sends changes its output.
func withNewFirstPod(w *tenant, slice *source.EndpointSlice) source.Endpoints {
	eps := slice.Endpoints.Unpack()
	eps[0] = workload.ReadyEndpoint(w.newPod())
	return source.MakeEndpoints(eps...)
}
