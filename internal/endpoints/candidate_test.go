package endpoints

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
)

// TestCollectOrdersLargeTargets checks ordering and deduplication on
// targets large enough to matter, on both sorting paths (packed IPv4 keys,
// and the general one that more than 65536 spellings force), against an
// order computed independently with netip.
func TestCollectOrdersLargeTargets(t *testing.T) {
	for _, n := range []int{5000, 70000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var endpoints []source.Endpoint
			want := map[netip.AddrPort]bool{}
			for i := range n {
				// Scattered, with every 10th address repeated.
				h := uint32(i) * 0x9E3779B1 & (1<<24 - 1)
				if i%10 == 9 {
					h = uint32(i-1) * 0x9E3779B1 & (1<<24 - 1)
				}
				addr := netip.AddrFrom4([4]byte{10, byte(h >> 16), byte(h >> 8), byte(h)})
				endpoints = append(endpoints, objectgen.ReadyAt(addr.String()))
				want[netip.AddrPortFrom(addr, 8080)] = true
				want[netip.AddrPortFrom(addr, 8081)] = true
			}
			x := newTestIndex([]source.EndpointSlice{objectgen.Slice("a-1", "a", "IPv4",
				objectgen.Ports(objectgen.TCPPort("b", 8081), objectgen.TCPPort("a", 8080)), endpoints...)})
			sorted := slices.SortedFunc(maps.Keys(want), func(a, b netip.AddrPort) int { return a.Compare(b) })
			var wantEps []Endpoint
			for _, ap := range sorted {
				wantEps = append(wantEps, Endpoint{Address: source.MakeAddress(ap.Addr().String()), Port: uint32(ap.Port())})
			}
			for _, kind := range collectorKinds {
				runs, warnings := kind.new(x).Collect(testNamespace, []Target{{Service: "a", Port: 80}})
				if len(warnings) > 0 {
					t.Fatalf("%s: unexpected warnings: %+v", kind.name, warnings)
				}
				if len(runs) != 1 {
					t.Fatalf("%s: got %d runs, want 1", kind.name, len(runs))
				}
				if diff := cmp.Diff(wantEps, runs[0]); diff != "" {
					t.Errorf("%s: endpoints (-want +got):\n%s", kind.name, diff)
				}
			}
		})
	}
}
