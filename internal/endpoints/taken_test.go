package endpoints

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
)

// manyTargets gives n targets, one Service each, whose single slices hold
// two endpoints: one of their own, and one of the address 10.255.0.<i%7>,
// which seven earlier targets hold first. Every family of slice the
// Collector has a path for is covered by ipv6.
func manyTargets(n int, ipv6 bool) (*testIndex, []Target) {
	family, own, shared := "IPv4", "10.%d.%d.%d", "10.255.0.%d"
	if ipv6 {
		family, own, shared = "IPv6", "fd00::%d:%d:%d", "fd00::ff:%d"
	}
	slices := make([]source.EndpointSlice, 0, n)
	targets := make([]Target, 0, n)
	for i := range n {
		svc := fmt.Sprintf("svc-%d", i)
		slices = append(slices, objectgen.Slice(svc+"-a", svc, family, objectgen.Ports(objectgen.TCPPort("-", 8080)),
			objectgen.ReadyAt(fmt.Sprintf(own, i>>16, i>>8&0xff, i&0xff)),
			objectgen.ReadyAt(fmt.Sprintf(shared, i%7))))
		targets = append(targets, Target{Service: svc, Port: 80})
	}
	return newTestIndex(slices), targets
}

// TestCollectManyTargets: the address:ports later targets share with
// earlier ones are found by one merge over every target; the result is
// Reference's, warnings in place, on every path.
func TestCollectManyTargets(t *testing.T) {
	for _, ipv6 := range []bool{false, true} {
		x, targets := manyTargets(300, ipv6)
		wantRuns, wantWarnings := Reference(x, testNamespace, targets)
		if len(wantWarnings) != 300-7 {
			t.Fatalf("ipv6=%v: the reference gives %d warnings, want one per target after the seventh", ipv6, len(wantWarnings))
		}
		for _, kind := range collectorKinds {
			c := kind.new(x)
			for round := range 2 {
				runs, warnings := c.Collect(testNamespace, targets)
				if diff := cmp.Diff(wantRuns, runs, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("ipv6=%v, %s, round %d: endpoints (-reference +collector):\n%s", ipv6, kind.name, round, diff)
				}
				if diff := cmp.Diff(wantWarnings, warnings, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("ipv6=%v, %s, round %d: warnings (-reference +collector):\n%s", ipv6, kind.name, round, diff)
				}
			}
		}
	}
	// The exact wording, once: the eighth target loses its shared address
	// to the first.
	x, targets := manyTargets(8, false)
	_, warnings := NewCollector(x).Collect(testNamespace, targets)
	want := []Warning{{Reason: ReasonDuplicateEndpoint, Message: `1 endpoint(s) of port 80 of Service "ns/svc-7", first 10.255.0.0:8080, already belong to an earlier Service in spec.services and are left out of this one`}}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// BenchmarkCollectManyTargets: one ExtensionService with n targets. Each
// target used to be compared with every earlier one, a quadratic cost:
// 40,000 targets took close to a minute.
func BenchmarkCollectManyTargets(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000, 20000, 40000} {
		x, targets := manyTargets(n, false)
		for _, kind := range collectorKinds {
			b.Run(fmt.Sprintf("targets=%d/%s", n, kind.name), func(b *testing.B) {
				c := kind.new(x)
				b.ReportAllocs()
				for b.Loop() {
					c.Collect(testNamespace, targets)
				}
			})
		}
	}
}
