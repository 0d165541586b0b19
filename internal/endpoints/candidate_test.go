package endpoints

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/workload"
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
				wantEps = append(wantEps, Endpoint{Address: ap.Addr().String(), Port: uint32(ap.Port())})
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

// FuzzParseDottedQuad holds the IPv4 fast path to netip: whatever it
// accepts, netip.ParseAddr reads as the same unzoned IPv4 address, and every
// IPv4 address netip prints it accepts.
func FuzzParseDottedQuad(f *testing.F) {
	for _, s := range []string{
		"10.0.0.1", "0.0.0.0", "255.255.255.255", "256.0.0.1", "01.2.3.4", "1.2.3", "1.2.3.4.5",
		"1..2.3", ".1.2.3", "1.2.3.", "1.2.3.04", "1.2.3.4%eth0", "::ffff:1.2.3.4", "", "1.2.3.4 ", "999.1.1.1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v4, ok := parseDottedQuad(s)
		addr, err := netip.ParseAddr(s)
		netipIPv4 := err == nil && addr.Is4() && addr.Zone() == ""
		if ok && (!netipIPv4 || addr.As4() != [4]byte{byte(v4 >> 24), byte(v4 >> 16), byte(v4 >> 8), byte(v4)}) {
			t.Fatalf("parseDottedQuad(%q) = %08x, but netip gives %v, %v", s, v4, addr, err)
		}
		if netipIPv4 && addr.String() == s && !ok {
			t.Fatalf("parseDottedQuad(%q) refused an address netip prints that way", s)
		}
	})
}

// TestParseDottedQuadMatchesNetip holds the fast path to netip on many
// strings near dotted quads, which the fuzz target's seeds alone do not
// reach in CI: every string of digits and dots it is given, of every
// length around the valid ones, some with a stray byte.
func TestParseDottedQuadMatchesNetip(t *testing.T) {
	const alphabet = "0123456789.....x"
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		b := make([]byte, rng.IntN(18))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		s := string(b)
		v4, ok := parseDottedQuad(s)
		addr, err := netip.ParseAddr(s)
		want := err == nil && addr.Is4() && addr.Zone() == ""
		if ok != want || ok && addr.As4() != [4]byte{byte(v4 >> 24), byte(v4 >> 16), byte(v4 >> 8), byte(v4)} {
			t.Fatalf("parseDottedQuad(%q) = %08x, %v; netip gives %v, %v", s, v4, ok, addr, err)
		}
	}
	for i := range uint32(100_000) {
		a := netip.AddrFrom4([4]byte{byte(i * 2654435761 >> 24), byte(i >> 8), byte(i * 7), byte(i)})
		if v4, ok := parseDottedQuad(a.String()); !ok || v4 != binary.BigEndian.Uint32(a.AsSlice()) {
			t.Fatalf("parseDottedQuad(%q) = %08x, %v", a, v4, ok)
		}
	}
}

// BenchmarkParseDottedQuad parses the pod addresses of the standard
// workload, scattered over 10.0.0.0/8.
func BenchmarkParseDottedQuad(b *testing.B) {
	addresses := make([]string, 1000)
	for i := range addresses {
		addresses[i] = workload.PodAddress(uint32(i)).String()
	}
	b.SetBytes(int64(len(addresses)))
	for b.Loop() {
		for _, s := range addresses {
			if _, ok := parseDottedQuad(s); !ok {
				b.Fatalf("%q refused", s)
			}
		}
	}
}
