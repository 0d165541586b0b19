package endpoints

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/workload"
)

// TestCachedSlicesAreSwept churns slices through an index and checks that
// a caching Collector keeps entries for the live slices and a bounded
// number of dead ones, whatever the number of slices that ever existed.
func TestCachedSlicesAreSwept(t *testing.T) {
	http := objectgen.Ports(objectgen.TCPPort("http", 8080))
	x := newTestIndex(nil)
	c := collectorKinds[1].new(x)
	const live = 10
	most := 0
	for i := range 2000 {
		es := objectgen.Slice(fmt.Sprintf("a-%d", i), "a", "IPv4", http, objectgen.ReadyAt(fmt.Sprintf("10.0.%d.%d", i/200, i%200+1)))
		x.put(&es)
		if i >= live {
			x.delete(source.NamespacedName{Namespace: testNamespace, Name: fmt.Sprintf("a-%d", i-live)})
		}
		runs, _ := c.Collect(testNamespace, []Target{{Service: "a", PortName: "http", Port: 80}})
		if n := len(runs[0]); n != min(i+1, live) {
			t.Fatalf("after slice %d: %d endpoints, want %d", i, n, min(i+1, live))
		}
		most = max(most, len(c.cache.entries))
	}
	if bound := 2*live + sweepSlack + 1; most > bound {
		t.Errorf("the cache held up to %d entries for %d live slices, want at most %d", most, live, bound)
	}
}

// TestCachedSlicesOfDeletedSlicesGo: after most of a Service's slices are
// deleted, collecting with the rest, replaced again and again, drops the
// deleted ones; and SweepSlices drops at once the old versions of slices
// replaced while the Collector was not looking.
func TestCachedSlicesOfDeletedSlicesGo(t *testing.T) {
	http := objectgen.Ports(objectgen.TCPPort("http", 8080))
	x := newTestIndex(nil)
	c := collectorKinds[1].new(x)
	slice := func(i, generation int) *source.EndpointSlice {
		es := objectgen.Slice(fmt.Sprintf("a-%d", i), "a", "IPv4", http, objectgen.ReadyAt(fmt.Sprintf("10.0.%d.%d", i/200, i%200+1)))
		es.Generation = int64(generation)
		return &es
	}
	targets := []Target{{Service: "a", PortName: "http", Port: 80}}
	for i := range 200 {
		x.put(slice(i, 0))
	}
	c.Collect(testNamespace, targets)
	for i := 10; i < 200; i++ {
		x.delete(source.NamespacedName{Namespace: testNamespace, Name: fmt.Sprintf("a-%d", i)})
	}
	for generation := 1; generation <= 20; generation++ {
		for i := range 10 {
			x.put(slice(i, generation))
		}
		c.Collect(testNamespace, targets)
	}
	if dead := deadEntries(c); dead != 0 {
		t.Errorf("%d entries of deleted or replaced slices are kept, want none", dead)
	}

	// Replaced behind the Collector's back, as a session's large batch does.
	for i := range 10 {
		x.put(slice(i, 100))
	}
	if dead := deadEntries(c); dead != 10 {
		t.Fatalf("%d entries of replaced slices before the sweep, want 10", dead)
	}
	c.SweepSlices()
	if n, dead := len(c.cache.entries), deadEntries(c); n != 0 || dead != 0 {
		t.Errorf("after the sweep: %d entries, %d of them dead; want none", n, dead)
	}
}

// deadEntries counts c's cache entries for slices its index no longer
// holds as they are.
func deadEntries(c *Collector) int {
	dead := 0
	for name, entry := range c.cache.entries {
		if c.slices.EndpointSlice(name) != entry.slice {
			dead++
		}
	}
	return dead
}

// BenchmarkSliceCacheMemory reports what CacheSlices holds once every
// EndpointSlice of the standard workload (N=10000 ExtensionServices, two
// Services of M=100 endpoints each) has been parsed: the state a Sync
// session's Collector reaches when every slice has changed once.
func BenchmarkSliceCacheMemory(b *testing.B) {
	const n, m = 10000, 100
	objs := workload.Standard(n, m)
	x := newTestIndex(objs.EndpointSlices)
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := collectorKinds[1].new(x)
		for _, es := range objs.ExtensionServices {
			var targets []Target
			for _, t := range es.Spec.Services {
				// Every Service of the workload has one port, "grpc".
				targets = append(targets, Target{Service: t.Name, PortName: "grpc", Port: t.Port})
			}
			c.Collect(es.Namespace, targets)
		}
		c.scratch = scratch{}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(c)
		endpoints := float64(2 * n * m)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc), "bytes")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/endpoints, "bytes/endpoint")
	}
}
