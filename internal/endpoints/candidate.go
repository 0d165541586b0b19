package endpoints

import (
	"cmp"
	"encoding/binary"
	"net/netip"
	"slices"

	"github.com/tributary-dev/tributary/internal/source"
)

// candidate is one address:port of a target, reduced to numbers so that
// sorting millions of them moves no pointers (and so triggers no write
// barriers): the address as netip.Addr.As16 gives its 128 bits, split in
// two, and text, the index in scratch.texts of the address as the
// EndpointSlice spelled it (see address), so no address string is ever
// copied.
type candidate struct {
	hi, lo uint64
	port   uint16
	v6     bool
	text   uint32
}

func newCandidate(addr netip.Addr, port uint16, text uint32) candidate {
	b := addr.As16()
	return candidate{
		hi: binary.BigEndian.Uint64(b[:8]), lo: binary.BigEndian.Uint64(b[8:]),
		port: port, v6: !addr.Is4(), text: text,
	}
}

// address is c's address as an Endpoint holds it: an IPv4 one (a dotted
// quad, the only spelling an IPv4 slice's usable address has) from its
// bits, an IPv6 one from its spelling in texts.
func (c candidate) address(texts []string) source.Address {
	if !c.v6 {
		return source.QuadAddress(uint32(c.lo))
	}
	return source.MakeAddress(texts[c.text])
}

// newCandidate4 is newCandidate for the IPv4 address v4 (big-endian bits).
func newCandidate4(v4 uint32, port uint16, text uint32) candidate {
	return candidate{lo: 0xffff<<32 | uint64(v4), port: port, text: text}
}

// addrPort gives the candidate back as an IP and port.
func (c candidate) addrPort() netip.AddrPort {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], c.hi)
	binary.BigEndian.PutUint64(b[8:], c.lo)
	addr := netip.AddrFrom16(b)
	if !c.v6 {
		addr = addr.Unmap()
	}
	return netip.AddrPortFrom(addr, c.port)
}

// A packed key is an IPv4 candidate in one uint64, address<<32 | port<<16 |
// a 16-bit text index. Keys order as compareCandidates orders their
// candidates, and keys of one address:port differ only in the index, so
// plain integer sorting and comparison stand in for the struct's.
func packKey(c candidate, text uint32) uint64 {
	return newKey(uint32(c.lo), c.port, text)
}

// newKey packs the IPv4 address v4 (big-endian bits), port and text.
func newKey(v4 uint32, port uint16, text uint32) uint64 {
	return uint64(v4)<<32 | uint64(port)<<16 | uint64(text)
}

// unpackKey gives k back as a candidate whose text is text.
func unpackKey(k uint64, text uint32) candidate {
	return newCandidate4(keyAddress(k), keyPort(k), text)
}

// keyAddress is the IPv4 address of k, big-endian bits.
func keyAddress(k uint64) uint32 { return uint32(k >> 32) }

// keySocket is the address:port part of k.
func keySocket(k uint64) uint64 { return k >> 16 }

// keyPort is the port of k.
func keyPort(k uint64) uint16 { return uint16(k >> 16) }

// keyIndex is the text index of k.
func keyIndex(k uint64) uint32 { return uint32(k & 0xffff) }

// packable reports whether es's endpoints fit packed keys: IPv4, with every
// endpoint index below 2^16 (every slice Kubernetes makes: it caps them at
// 1000).
func packable(es *source.EndpointSlice) bool {
	return es.AddressType == "IPv4" && es.Endpoints.Len() <= 1<<16
}

// compareCandidates orders by address as netip.Addr.Compare does (IPv4
// before IPv6, then numerically), then port. Among equal address:ports the
// first spelling met wins; slices are visited in name order, so which one
// survives deduplication does not depend on the order of the input.
func compareCandidates(a, b candidate) int {
	if c := compareSockets(a, b); c != 0 {
		return c
	}
	return cmp.Compare(a.text, b.text)
}

// compareSockets is compareCandidates without the spelling. It returns at
// the first difference: this comparison runs for every endpoint of a target
// against every earlier target.
func compareSockets(a, b candidate) int {
	if a.v6 != b.v6 {
		if b.v6 {
			return -1
		}
		return 1
	}
	if a.hi != b.hi {
		return cmp.Compare(a.hi, b.hi)
	}
	if a.lo != b.lo {
		return cmp.Compare(a.lo, b.lo)
	}
	return cmp.Compare(a.port, b.port)
}

// sameSocket reports whether two candidates name the same address:port.
func sameSocket(a, b candidate) bool {
	return a.lo == b.lo && a.port == b.port && a.hi == b.hi && a.v6 == b.v6
}

// sortUnique sorts run by compareCandidates and drops every candidate whose
// address:port an earlier one already has (so the first spelling met
// survives), in place. The text indexes of run's candidates lie in
// firstText..firstText+texts.
//
// Most clusters are IPv4 only, and then an address, a port and a spelling
// index relative to firstText fit one uint64 whose numeric order is
// compareCandidates' order: sorting those plain integers is several times
// faster than sorting structs through a comparison function, and repeats
// are then neighbours that differ only in the spelling bits.
func (s *scratch) sortUnique(run []candidate, firstText uint32, texts int) []candidate {
	if texts > 1<<16 || slices.ContainsFunc(run, func(c candidate) bool { return c.v6 }) {
		slices.SortFunc(run, compareCandidates)
		n := 0
		for _, c := range run {
			if n == 0 || !sameSocket(run[n-1], c) {
				run[n] = c
				n++
			}
		}
		return run[:n]
	}
	s.keys = s.keys[:0]
	for _, c := range run {
		s.keys = append(s.keys, packKey(c, c.text-firstText))
	}
	s.sortBuffer = sortKeys(s.keys, s.sortBuffer)
	n := 0
	for i, k := range s.keys {
		if i > 0 && keySocket(k) == keySocket(s.keys[i-1]) {
			continue
		}
		run[n] = unpackKey(k, firstText+keyIndex(k))
		n++
	}
	return run[:n]
}
