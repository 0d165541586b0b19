package endpoints

import (
	"fmt"
	"testing"

	"github.com/tributary-dev/tributary/internal/cputime"
	"github.com/tributary-dev/tributary/internal/workload"
)

// BenchmarkCollectStandard collects the endpoints of every ExtensionService
// of the standard workload (N=1000 ExtensionServices of two Services with
// one IPv4 EndpointSlice of M endpoints each) with one Collector, as a
// translation does: the common case every fast path is for. One op is the
// whole workload; cpu-ns/op is steadier than ns/op on a busy machine.
func BenchmarkCollectStandard(b *testing.B) {
	const n = 1000
	for _, m := range []int{10, 100, 1000} {
		objs := workload.Standard(n, m)
		x := newTestIndex(objs.EndpointSlices)
		type call struct {
			namespace string
			targets   []Target
		}
		calls := make([]call, 0, n)
		for _, es := range objs.ExtensionServices {
			var targets []Target
			for _, t := range es.Spec.Services {
				// Every Service of the workload has one port, "grpc".
				targets = append(targets, Target{Service: t.Name, PortName: "grpc", Port: t.Port})
			}
			calls = append(calls, call{es.Namespace, targets})
		}
		for _, kind := range collectorKinds {
			b.Run(fmt.Sprintf("M=%d/%s", m, kind.name), func(b *testing.B) {
				c := kind.new(x)
				b.ReportAllocs()
				cpu, ops := cputime.OfProcess(), 0
				for b.Loop() {
					ops++
					for _, call := range calls {
						runs, _ := c.Collect(call.namespace, call.targets)
						if len(runs[0]) != m {
							b.Fatalf("%d endpoints, want %d", len(runs[0]), m)
						}
					}
				}
				b.ReportMetric(cputime.PerOp(cpu, ops), "cpu-ns/op")
			})
		}
	}
}
