package endpoints

import (
	"math"
	"net/netip"

	"github.com/tributary-dev/tributary/internal/source"
)

// matchPorts sets s.ports to the numbers of es's ports that serve the
// Service port named portName ("" for an unnamed port, which every TCP
// port serves), and reports whether there are any. A port Envoy could not
// take is skipped, with one warning per slice appended to warnings.
func (s *scratch) matchPorts(es *source.EndpointSlice, portName string, warnings *[]Warning) bool {
	s.ports = s.ports[:0]
	badPort, hasBadPort := int32(0), false
	for _, p := range es.Ports {
		if p.Port == nil || p.Protocol == nil || *p.Protocol != "TCP" {
			continue
		}
		if portName != "" && p.Name != nil && *p.Name != "" && *p.Name != portName {
			continue
		}
		if *p.Port < 1 || *p.Port > math.MaxUint16 {
			if !hasBadPort {
				badPort, hasBadPort = *p.Port, true
			}
			continue
		}
		s.ports = append(s.ports, uint16(*p.Port))
	}
	if hasBadPort {
		*warnings = append(*warnings, invalidPortWarning(es, badPort))
	}
	return len(s.ports) > 0
}

// appendSliceEndpoints appends to the scratch candidates every ready
// endpoint of es, from es.Endpoints[from] on, on every slice port matching
// the Service port named portName (see matchPorts), and reports whether it
// appended any. A candidate's text is firstText plus the index of its
// endpoint in es.Endpoints (see appendAddresses); the texts themselves are
// the caller's to record. Endpoints and ports Envoy could not take are
// skipped with at most one warning each per slice, appended to warnings.
//
// appendSliceKeys is the same for a packable slice, in packed keys.
func (s *scratch) appendSliceEndpoints(es *source.EndpointSlice, portName string, warnings *[]Warning, firstText uint32, from int) bool {
	var is4 bool
	switch es.AddressType {
	case "IPv4":
		is4 = true
	case "IPv6":
	default:
		// FQDN slices name hosts, which EDS cannot carry.
		return false
	}
	if !s.matchPorts(es, portName, warnings) {
		return false
	}

	appended := len(s.candidates)
	bad, firstBad := 0, source.Address{}
	for i, a := range es.Endpoints.Ready(from) {
		idx := firstText + uint32(i)
		// A dotted quad is the only spelling of an IPv4 address, and the
		// slice's Endpoints hold every one as its bits; an IPv6 address is
		// parsed from its spelling, and a zone (fe80::1%eth0) is not part
		// of an address Envoy can parse.
		v4, isQuad := a.Quad()
		var v6 netip.Addr
		usable := is4 && isQuad
		if !is4 && !isQuad {
			var err error
			v6, err = netip.ParseAddr(a.String())
			usable = err == nil && !v6.Is4() && v6.Zone() == ""
		}
		if !usable {
			if bad == 0 {
				firstBad = a
			}
			bad++
			continue
		}
		for _, port := range s.ports {
			if is4 {
				s.candidates = append(s.candidates, newCandidate4(v4, port, idx))
			} else {
				s.candidates = append(s.candidates, newCandidate(v6, port, idx))
			}
		}
	}
	if bad > 0 {
		*warnings = append(*warnings, invalidAddressWarning(es, bad, firstBad))
	}
	return len(s.candidates) > appended
}

// appendSliceKeys is appendSliceEndpoints for a packable slice (see
// packable), in packed keys whose index is the endpoint's in es, appended
// to keys sorted and without repeats; it returns keys.
//
// Packing as it parses, rather than making candidates and packing them to
// sort, is what makes the common slice cheap: a key is a third of a
// candidate's size, and the address's spelling is found again through its
// index, so no text is recorded.
func (s *scratch) appendSliceKeys(keys []uint64, es *source.EndpointSlice, portName string, warnings *[]Warning, from int) []uint64 {
	if !s.matchPorts(es, portName, warnings) {
		return keys
	}
	start := len(keys)
	if eps := es.Endpoints; eps.QuadsOnly() && len(s.ports) == 1 {
		keys = appendQuadKeys(keys, eps, s.ports[0], from)
	} else {
		keys = s.appendAnyKeys(keys, es, warnings, from)
	}
	s.sortBuffer = sortKeys(keys[start:], s.sortBuffer)
	return keys[:start+len(uniqueKeys(keys[start:]))]
}

// appendQuadKeys appends, unsorted, the key of every ready endpoint of
// eps from index from on, all dotted quads, on port: nearly every slice,
// with nothing to refuse and one key an endpoint, read without an Address
// each (read through Addresses, they were a tenth of a translation at 100
// endpoints a slice).
func appendQuadKeys(keys []uint64, eps source.Endpoints, port uint16, from int) []uint64 {
	for i := from; i < eps.Len(); i++ {
		if v4, ready := eps.QuadAt(i); ready {
			keys = append(keys, newKey(v4, port, uint32(i)))
		}
	}
	return keys
}

// appendAnyKeys appends, unsorted, the keys of every ready endpoint of es
// from index from on, one a port of s.ports, and warns of those whose
// address is not a dotted quad.
func (s *scratch) appendAnyKeys(keys []uint64, es *source.EndpointSlice, warnings *[]Warning, from int) []uint64 {
	bad, firstBad := 0, source.Address{}
	for i, a := range es.Endpoints.Ready(from) {
		v4, ok := a.Quad()
		if !ok {
			if bad == 0 {
				firstBad = a
			}
			bad++
			continue
		}
		for _, port := range s.ports {
			keys = append(keys, newKey(v4, port, uint32(i)))
		}
	}
	if bad > 0 {
		*warnings = append(*warnings, invalidAddressWarning(es, bad, firstBad))
	}
	return keys
}

// appendAddresses appends the spelling of every endpoint's address of es,
// in order, for the candidates appendSliceEndpoints made.
func appendAddresses(texts []string, es *source.EndpointSlice) []string {
	for i := range es.Endpoints.Len() {
		texts = append(texts, spelling(es.Endpoints.Address(i)))
	}
	return texts
}

// spelling is a's spelling as a candidate's text, "" for a dotted quad:
// its candidate holds it (see candidate.address), and spelling it would
// make a string.
func spelling(a source.Address) string {
	if _, ok := a.Quad(); ok {
		return ""
	}
	return a.String()
}
