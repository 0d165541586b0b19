package source_test

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/tributary-dev/tributary/internal/source"
)

// TestEndpointsRoundTrip: packed endpoints give back exactly the plain ones
// they were made of, by index, by Unpack, through Ready and, when every
// address is a dotted quad, through QuadAt, whatever their
// addresses (dotted quads, held as four bytes, next to spellings as long,
// as short and as nearly quads, empty ones included) and readiness.
func TestEndpointsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	quadsOnly := false // in every third round, no address but dotted quads
	address := func(i int) string {
		kind := r.IntN(4)
		if quadsOnly {
			kind = 1 + 2*r.IntN(2)
		}
		switch kind {
		case 0:
			return strings.Repeat(string(rune('a'+i%26)), r.IntN(5))
		case 1:
			return netip.AddrFrom4([4]byte{byte(r.IntN(256)), byte(r.IntN(256)), 0, byte(r.IntN(3))}).String()
		case 2:
			return pick(r, "01.2.3.4", "1.2.3", "256.0.0.1", "1.2.3.4.5", "::ffff:1.2.3.4", "fd00::1", "1.2.3.4 ")
		}
		return pick(r, "0.0.0.0", "255.255.255.255", "1.2.3.4")
	}
	for round := range 500 {
		quadsOnly = round%3 == 0
		list := make([]source.Endpoint, r.IntN(20))
		for i := range list {
			list[i] = source.Endpoint{Address: address(i), NotReady: r.IntN(3) == 0}
		}
		e := source.MakeEndpoints(list...)
		if e.Len() != len(list) {
			t.Fatalf("round %d: Len %d, want %d", round, e.Len(), len(list))
		}
		longest, bytes := 0, 0
		for i, want := range list {
			if got := e.At(i); got != want {
				t.Fatalf("round %d: At(%d) = %+v, want %+v", round, i, got, want)
			}
			longest, bytes = max(longest, len(want.Address)), bytes+len(want.Address)
		}
		if e.LongestAddress() != longest || e.AddressBytes() != bytes {
			t.Fatalf("round %d: LongestAddress %d, AddressBytes %d; want %d, %d", round, e.LongestAddress(), e.AddressBytes(), longest, bytes)
		}
		allQuads := true
		for i := range list {
			_, isQuad := e.Address(i).Quad()
			allQuads = allQuads && isQuad
		}
		if e.QuadsOnly() != (allQuads && len(list) > 0) {
			t.Fatalf("round %d: QuadsOnly %v of %+v", round, e.QuadsOnly(), list)
		}
		for i := range list {
			if !e.QuadsOnly() {
				break
			}
			v, _ := e.Address(i).Quad()
			if gotV, gotReady := e.QuadAt(i); gotV != v || gotReady != !list[i].NotReady {
				t.Fatalf("round %d: QuadAt(%d) = %08x, %v; endpoint is %+v", round, i, gotV, gotReady, list[i])
			}
		}
		if got := e.Unpack(); !slices.Equal(got, list) {
			t.Fatalf("round %d: Unpack = %+v, want %+v", round, got, list)
		}
		from := r.IntN(len(list) + 1)
		var ready []string
		for i, address := range e.Ready(from) {
			if i < from || list[i].NotReady || address != source.MakeAddress(list[i].Address) || address != e.Address(i) {
				t.Fatalf("round %d: Ready(%d) yielded %d %q; endpoint %d is %+v", round, from, i, address, i, list[i])
			}
			ready = append(ready, address.String())
		}
		var want []string
		for _, ep := range list[from:] {
			if !ep.NotReady {
				want = append(want, ep.Address)
			}
		}
		if !slices.Equal(ready, want) {
			t.Fatalf("round %d: Ready(%d) yielded %q, want %q", round, from, ready, want)
		}
		if got, want := e.MemoryBytes(), memoryBytes(list); got != want {
			t.Fatalf("round %d: MemoryBytes %d, want %d", round, got, want)
		}
		if !e.Equal(source.MakeEndpoints(slices.Clone(list)...)) {
			t.Fatalf("round %d: not Equal to the same endpoints packed again", round)
		}
	}
}

// memoryBytes is what Endpoints of list hold: four bytes an endpoint, and
// its address, four bytes for a dotted quad.
func memoryBytes(list []source.Endpoint) int {
	n := 0
	for _, ep := range list {
		if addr, err := netip.ParseAddr(ep.Address); err == nil && addr.Is4() {
			n += 4 + 4
		} else {
			n += 4 + len(ep.Address)
		}
	}
	return n
}

func pick(r *rand.Rand, s ...string) string { return s[r.IntN(len(s))] }

// TestEndpointsEqual: Equal tells endpoints apart by address, readiness,
// number and order, and the zero value equals endpoints made of none.
func TestEndpointsEqual(t *testing.T) {
	a := source.Endpoint{Address: "10.0.0.1"}
	b := source.Endpoint{Address: "10.0.0.2"}
	notReadyA := source.Endpoint{Address: "10.0.0.1", NotReady: true}
	// "10.0.0.1" then "0" is not "10.0.0.10" then "": the spans differ.
	split := []source.Endpoint{{Address: "10.0.0.1"}, {Address: "0"}}
	joined := []source.Endpoint{{Address: "10.0.0.10"}, {Address: ""}}
	for _, tc := range []struct {
		name  string
		x, y  []source.Endpoint
		equal bool
	}{
		{"same", []source.Endpoint{a, b}, []source.Endpoint{a, b}, true},
		{"none", nil, []source.Endpoint{}, true},
		{"order", []source.Endpoint{a, b}, []source.Endpoint{b, a}, false},
		{"readiness", []source.Endpoint{a}, []source.Endpoint{notReadyA}, false},
		{"one more", []source.Endpoint{a}, []source.Endpoint{a, b}, false},
		{"spans", split, joined, false},
	} {
		if got := source.MakeEndpoints(tc.x...).Equal(source.MakeEndpoints(tc.y...)); got != tc.equal {
			t.Errorf("%s: Equal = %t, want %t", tc.name, got, tc.equal)
		}
	}
	if !(source.Endpoints{}).Equal(source.MakeEndpoints()) {
		t.Error("the zero value is not Equal to endpoints made of none")
	}
}

// TestEndpointsBuilder: bytes off the wire pack as the same strings do, and
// a builder starts afresh after Endpoints, leaving what it returned intact.
func TestEndpointsBuilder(t *testing.T) {
	var b source.EndpointsBuilder
	b.AddBytes([]byte("10.0.0.1"), false)
	b.Add("fd00::1", true)
	first := b.Endpoints()
	b.Add("10.9.9.9", false)
	second := b.Endpoints()
	want := source.MakeEndpoints(source.Endpoint{Address: "10.0.0.1"}, source.Endpoint{Address: "fd00::1", NotReady: true})
	if !first.Equal(want) {
		t.Errorf("first: %v, want %v", first, want)
	}
	if got, want := second.String(), "[10.9.9.9]"; got != want {
		t.Errorf("second: %s, want %s", got, want)
	}
	if got, want := first.String(), "[10.0.0.1 fd00::1(not ready)]"; got != want {
		t.Errorf("String: %s, want %s", got, want)
	}
}
