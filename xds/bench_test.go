package xds_test

import (
	"fmt"
	"testing"

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
