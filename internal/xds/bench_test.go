package xds_test

import (
	"fmt"
	"testing"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/xds"
	"github.com/tributary-dev/tributary/internal/xdstest"
)

// BenchmarkApplyOneEndpoint publishes one moved endpoint to a group holding
// n ExtensionServices of the standard workload (10 endpoints per Service),
// with no client watching: the Publisher's own cost per change (decoding,
// validation, cache update), which every Sync batch pays before its answer.
func BenchmarkApplyOneEndpoint(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			p := xds.NewPublisher(xds.Options{Logger: quietLogger()})
			defer p.Shutdown()
			pub, err := p.Open("bench", xds.PublicationOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer pub.Close()
			objs, res := translated(n, 10)
			pub.Apply(everything(res))
			// Two versions of one ClusterLoadAssignment to alternate between.
			moveEndpoint(objs, 0, "10.200.0.1")
			moved := translate.Translate(objs, source.Settings{})
			steps := []translate.Changes{changes(res, moved), changes(moved, res)}
			if len(steps[0].ClusterLoadAssignments) != 1 {
				b.Fatalf("test setup: %d changes", len(steps[0].ClusterLoadAssignments))
			}
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				pub.Apply(steps[i%2])
				i++
			}
		})
	}
}

// BenchmarkChangeToAck publishes one moved endpoint to a group of n
// ExtensionServices (10 endpoints per Service) with one ADS client of each
// variant subscribed to all n ClusterLoadAssignments, in one process over
// loopback gRPC, and waits until the client has received it and sent its
// ACK: the whole xDS path of a change, for profiles (-cpuprofile) of the
// cache and go-control-plane's server together. A State-of-the-World ACK
// names all n resources, so its cost grows with n; a Delta one must not.
func BenchmarkChangeToAck(b *testing.B) {
	for _, variant := range []xds.Variant{xds.SotW, xds.Delta} {
		for _, n := range []int{100, 10000} {
			b.Run(fmt.Sprintf("%s/N=%d", variant, n), func(b *testing.B) {
				benchmarkChangeToAck(b, variant, n)
			})
		}
	}
}

// servedGroup serves a group "edge" of n ExtensionServices of the standard
// workload (10 endpoints per Service) and returns its Publication, a
// connection to the server, the names of its ClusterLoadAssignments, and
// two Changes that move one endpoint there and back.
func servedGroup(b *testing.B, n int) (pub *xds.Publication, conn *grpc.ClientConn, all []string, steps [2]translate.Changes) {
	p, conn := startServer(b, xds.Options{Logger: quietLogger()})
	pub, err := p.Open("edge", xds.PublicationOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pub.Close)
	objs, res := translated(n, 10)
	pub.Apply(everything(res))
	moveEndpoint(objs, 0, "10.200.0.1")
	moved := translate.Translate(objs, source.Settings{})
	return pub, conn, names(res.ClusterLoadAssignments), [2]translate.Changes{changes(res, moved), changes(moved, res)}
}

func benchmarkChangeToAck(b *testing.B, variant xds.Variant, n int) {
	pub, conn, all, steps := servedGroup(b, n)
	var roundTrip func() int
	if variant == xds.SotW {
		c := xdstest.NewSotW(b, conn)
		c.Subscribe(node("sotw"), resourcev3.EndpointType, all...)
		roundTrip = func() int {
			resp := c.Recv()
			c.Ack(resp, all...)
			return len(resp.GetResources())
		}
	} else {
		c := xdstest.NewDelta(b, conn)
		c.Subscribe(node("delta"), resourcev3.EndpointType, all...)
		roundTrip = func() int {
			resp := c.Recv()
			c.Ack(resp)
			return len(resp.GetResources())
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		pub.Apply(steps[i%2])
		i++
		if got := roundTrip(); got != 1 {
			b.Fatalf("sent %d resources, want 1", got)
		}
	}
}

// BenchmarkDeltaFanOut publishes one moved endpoint to a group of 100
// ExtensionServices with 100 Delta clients subscribed to all of them, each
// on a connection of its own, and waits until every client has received it
// and sent its ACK: the per-client cost of a change (ns/op over 100), for
// profiles of the server side (focus on the server's goroutines).
func BenchmarkDeltaFanOut(b *testing.B) {
	const n, clients = 100, 100
	pub, conn, all, steps := servedGroup(b, n)

	acked := make(chan struct{}, clients)
	for i := range clients {
		cc, err := grpc.NewClient(conn.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cc.Close() })
		c, err := discoveryv3.NewAggregatedDiscoveryServiceClient(cc).DeltaAggregatedResources(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node(fmt.Sprintf("delta-%d", i)), TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: all}); err != nil {
			b.Fatal(err)
		}
		go func() { // ACKs everything, the first response included
			for {
				resp, err := c.Recv()
				if err != nil {
					return
				}
				if c.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce()}) != nil {
					return
				}
				acked <- struct{}{}
			}
		}()
	}
	for range clients { // the first responses
		<-acked
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		pub.Apply(steps[i%2])
		i++
		for range clients {
			<-acked
		}
	}
}
