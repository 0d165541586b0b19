package server

import (
	"net"
	"runtime"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/workload"
)

// BenchmarkSyncRoundTrip measures what a controller waits for when one pod
// comes or goes: over real loopback TCP, a session holds the standard
// workload of N ExtensionServices × 2 Services × M endpoints; each
// iteration sends a batch replacing one EndpointSlice with one endpoint
// changed, and waits for the delta answering it (one CLA). Loading the
// workload is not timed, and the client keeps only the slices it changes. Besides ns/op it reports the median and 99th
// percentile of the round trips.
func BenchmarkSyncRoundTrip(b *testing.B) {
	const n, m = 10000, 100
	extensionServices, services, endpointSlices := workload.APIObjects(workload.Standard(n, m))
	if len(services) != 2*n || len(endpointSlices) != 2*n {
		b.Fatalf("workload shape: %d ExtensionServices, %d Services, %d EndpointSlices", len(extensionServices), len(services), len(endpointSlices))
	}

	conn := dialLoopback(b)
	stream, err := tributaryv1.NewTranslationServiceClient(conn).Sync(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	if err := stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}}); err != nil {
		b.Fatal(err)
	}
	roundTrip := func(batch *tributaryv1.SyncBatch) *tributaryv1.SyncDelta {
		if err := stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: batch}}); err != nil {
			b.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			b.Fatal(err)
		}
		d := resp.GetDelta()
		if d.GetBatchId() != batch.GetId() {
			b.Fatalf("batch %d: got %v", batch.GetId(), resp)
		}
		return d
	}

	// Load: the workload in batches of whole ExtensionServices (an
	// ExtensionService i owns Services and EndpointSlices 2i and 2i+1).
	const perBatch = 500
	id := uint64(0)
	for lo := 0; lo < n; lo += perBatch {
		hi := min(lo+perBatch, n)
		batch := &tributaryv1.SyncBatch{Upserts: slices.Concat(extensionServices[lo:hi], services[2*lo:2*hi], endpointSlices[2*lo:2*hi])}
		id++
		batch.Id = id
		if got := len(roundTrip(batch).GetClusterLoadAssignments()); got != hi-lo {
			b.Fatalf("loading ExtensionServices %d..%d gave %d CLAs", lo, hi, got)
		}
	}

	// Keep every tenth EndpointSlice to change, and drop the rest of the
	// client's copy of the workload: in production the client is another
	// process, and this one's heap should be the server's. Then start the
	// loop without the loading's garbage.
	churn := make([]*tributaryv1.KubernetesObject, 0, len(endpointSlices)/10)
	for i := 0; i < len(endpointSlices); i += 10 {
		churn = append(churn, endpointSlices[i])
	}
	extensionServices, services, endpointSlices = nil, nil, nil
	runtime.GC()

	durations := make([]time.Duration, 0, 1<<16)
	pod := uint32(2 * n * m) // past the workload's pods
	for b.Loop() {
		// Rotate through the slices so that no one object stays hot.
		s := churn[int(id)%len(churn)]
		s.GetEndpointSlice().Endpoints[0].Addresses[0] = workload.PodAddress(pod).String()
		pod++
		id++
		start := time.Now()
		d := roundTrip(&tributaryv1.SyncBatch{Id: id, Upserts: []*tributaryv1.KubernetesObject{s}})
		durations = append(durations, time.Since(start))
		if len(d.GetClusterLoadAssignments()) != 1 || len(d.GetClusters()) != 0 || len(d.GetStatuses()) != 0 {
			b.Fatalf("batch %d: got %d Clusters, %d CLAs, %d statuses; want one CLA",
				id, len(d.GetClusters()), len(d.GetClusterLoadAssignments()), len(d.GetStatuses()))
		}
	}
	b.StopTimer()
	slices.Sort(durations)
	percentile := func(p float64) float64 {
		return float64(durations[int(p*float64(len(durations)-1))].Nanoseconds())
	}
	b.ReportMetric(percentile(0.50), "p50-ns")
	b.ReportMetric(percentile(0.99), "p99-ns")
	if err := stream.CloseSend(); err != nil {
		b.Fatal(err)
	}
	if _, err := stream.Recv(); err == nil {
		b.Fatal("the stream did not end after CloseSend")
	}
}

// dialLoopback serves a production server on 127.0.0.1 and returns a client
// connection taking responses up to the server's own size limit; both stop
// when the benchmark ends.
func dialLoopback(b *testing.B) *grpc.ClientConn {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := NewGRPCServer(quietOptions())
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	b.Cleanup(func() {
		s.Stop()
		if err := <-done; err != nil {
			b.Errorf("Serve: %v", err)
		}
	})
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(DefaultMaxMsgSize)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return conn
}
