package xds_test

import (
	"fmt"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/tributary-dev/tributary/internal/xdstest"
	"github.com/tributary-dev/tributary/source"
	"github.com/tributary-dev/tributary/translate"
	"github.com/tributary-dev/tributary/xds"
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
			if err := pub.Apply(everything(res)); err != nil {
				b.Fatal(err)
			}
			// Two versions of one ClusterLoadAssignment to alternate between.
			moveEndpoint(objs, 0, "10.200.0.1")
			moved := translate.Translate(objs, source.Settings{})
			steps := []xds.Changes{changes(res, moved), changes(moved, res)}
			if len(steps[0].ClusterLoadAssignments) != 1 {
				b.Fatalf("test setup: %d changes", len(steps[0].ClusterLoadAssignments))
			}
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				if err := pub.Apply(steps[i%2]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkChangeToAck publishes one moved endpoint to a group of n
// ExtensionServices (10 endpoints per Service) with one State-of-the-World
// and one Delta ADS client subscribed to all n ClusterLoadAssignments, in
// one process over loopback gRPC, and waits for both to receive it and ACK:
// the whole xDS path of a change, for profiles (-cpuprofile) of the cache
// and go-control-plane's server together.
func BenchmarkChangeToAck(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			p, conn := startServer(b, xds.Options{Logger: quietLogger()})
			pub, err := p.Open("edge", xds.PublicationOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer pub.Close()
			objs, res := translated(n, 10)
			if err := pub.Apply(everything(res)); err != nil {
				b.Fatal(err)
			}
			moveEndpoint(objs, 0, "10.200.0.1")
			moved := translate.Translate(objs, source.Settings{})
			steps := []xds.Changes{changes(res, moved), changes(moved, res)}
			all := names(res.ClusterLoadAssignments)

			sotw := xdstest.NewSotW(b, conn)
			sotw.Subscribe(node("sotw"), resourcev3.EndpointType, all...)
			delta := xdstest.NewDelta(b, conn)
			delta.Subscribe(node("delta"), resourcev3.EndpointType, all...)
			b.ReportAllocs()
			b.ResetTimer()
			i := 0
			for b.Loop() {
				if err := pub.Apply(steps[i%2]); err != nil {
					b.Fatal(err)
				}
				i++
				s := sotw.Recv()
				sotw.Ack(s, all...)
				d := delta.Recv()
				delta.Ack(d)
				if len(s.GetResources()) != 1 || len(d.GetResources()) != 1 {
					b.Fatalf("sent %d and %d resources, want 1 each", len(s.GetResources()), len(d.GetResources()))
				}
			}
		})
	}
}
