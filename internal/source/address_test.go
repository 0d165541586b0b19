package source_test

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/workload"
)

// FuzzParseDottedQuad holds the dotted quad parser to netip: whatever it
// accepts, netip.ParseAddr reads as the same unzoned IPv4 address, and every
// IPv4 address netip prints it accepts. Whatever it is given, an Address
// made of it gives back the same spelling and length, as a quad or not.
func FuzzParseDottedQuad(f *testing.F) {
	for _, s := range []string{
		"10.0.0.1", "0.0.0.0", "255.255.255.255", "256.0.0.1", "01.2.3.4", "1.2.3", "1.2.3.4.5",
		"1..2.3", ".1.2.3", "1.2.3.", "1.2.3.04", "1.2.3.4%eth0", "::ffff:1.2.3.4", "", "1.2.3.4 ", "999.1.1.1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v4, ok := source.ParseDottedQuad(s)
		addr, err := netip.ParseAddr(s)
		netipIPv4 := err == nil && addr.Is4() && addr.Zone() == ""
		if ok && (!netipIPv4 || addr.As4() != [4]byte{byte(v4 >> 24), byte(v4 >> 16), byte(v4 >> 8), byte(v4)}) {
			t.Fatalf("ParseDottedQuad(%q) = %08x, but netip gives %v, %v", s, v4, addr, err)
		}
		if netipIPv4 && addr.String() == s && !ok {
			t.Fatalf("ParseDottedQuad(%q) refused an address netip prints that way", s)
		}
		if w, wok := source.ParseDottedQuad([]byte(s)); w != v4 || wok != ok {
			t.Fatalf("ParseDottedQuad(%q) = %08x, %v for the string, %08x, %v for its bytes", s, v4, ok, w, wok)
		}
		checkAddress(t, s, ok)
	})
}

// checkAddress checks that the Address of text spells it back, whether it
// is held as a quad (as isQuad says it must be) or not.
func checkAddress(t *testing.T, text string, isQuad bool) {
	t.Helper()
	a := source.MakeAddress(text)
	if _, ok := a.Quad(); ok != isQuad {
		t.Fatalf("MakeAddress(%q) is a quad: %v, want %v", text, ok, isQuad)
	}
	if got := a.String(); got != text {
		t.Fatalf("MakeAddress(%q).String() = %q", text, got)
	}
	if got := a.Len(); got != len(text) {
		t.Fatalf("MakeAddress(%q).Len() = %d", text, got)
	}
	if got := string(a.AppendTo([]byte("x"))); got != "x"+text {
		t.Fatalf("MakeAddress(%q).AppendTo(x) = %q", text, got)
	}
}

// TestParseDottedQuadMatchesNetip holds the parser to netip on many
// strings near dotted quads, which the fuzz target's seeds alone do not
// reach in CI: every string of digits and dots it is given, of every
// length around the valid ones, some with a stray byte. Each also makes an
// Address that spells it back.
func TestParseDottedQuadMatchesNetip(t *testing.T) {
	const alphabet = "0123456789.....x"
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		b := make([]byte, rng.IntN(18))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		s := string(b)
		v4, ok := source.ParseDottedQuad(s)
		addr, err := netip.ParseAddr(s)
		want := err == nil && addr.Is4() && addr.Zone() == ""
		if ok != want || ok && addr.As4() != [4]byte{byte(v4 >> 24), byte(v4 >> 16), byte(v4 >> 8), byte(v4)} {
			t.Fatalf("ParseDottedQuad(%q) = %08x, %v; netip gives %v, %v", s, v4, ok, addr, err)
		}
		checkAddress(t, s, ok)
	}
	for i := range uint32(100_000) {
		a := netip.AddrFrom4([4]byte{byte(i * 2654435761 >> 24), byte(i >> 8), byte(i * 7), byte(i)})
		if v4, ok := source.ParseDottedQuad(a.String()); !ok || v4 != binary.BigEndian.Uint32(a.AsSlice()) {
			t.Fatalf("ParseDottedQuad(%q) = %08x, %v", a, v4, ok)
		}
		if got := source.QuadAddress(binary.BigEndian.Uint32(a.AsSlice())); got != source.MakeAddress(a.String()) {
			t.Fatalf("QuadAddress of %s is not MakeAddress of it", a)
		}
		checkAddress(t, a.String(), true)
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
			if _, ok := source.ParseDottedQuad(s); !ok {
				b.Fatalf("%q refused", s)
			}
		}
	}
}
