package model

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strconv"

	"github.com/tributary-dev/tributary/internal/source"
)

// Reasons of the sub-conditions buildLocalities records.
const (
	// ReasonWeightOverflow: the spec.services weights add up to more than
	// Envoy's uint32 total (an error).
	ReasonWeightOverflow = "WeightOverflow"
	// ReasonDuplicateTarget: one Service port is named more than once in
	// spec.services (a warning; the weights are summed).
	ReasonDuplicateTarget = "DuplicateTarget"
	// ReasonDuplicateEndpoint: an address:port of a target was already used
	// by an earlier target and is left out (a warning).
	ReasonDuplicateEndpoint = "DuplicateEndpoint"
	// ReasonInvalidEndpointAddress: an EndpointSlice holds an address that
	// is not an IP of the slice's family (a warning; the endpoint is skipped).
	ReasonInvalidEndpointAddress = "InvalidEndpointAddress"
	// ReasonInvalidEndpointPort: an EndpointSlice port lies outside
	// 1..65535 (a warning; the port is skipped).
	ReasonInvalidEndpointPort = "InvalidEndpointPort"
	// ReasonNoWeightedEndpoints: endpoints exist, but only for targets of
	// weight 0 (a warning; no locality is emitted).
	ReasonNoWeightedEndpoints = "NoWeightedEndpoints"
)

// endpointScratch is the memory a Builder reuses for endpoints. Everything
// buildLocalities returns aliases it, which is what lets a Builder turn
// millions of endpoints into Localities with next to no allocation once it
// has warmed up.
type endpointScratch struct {
	// targets are the distinct Service ports of one ExtensionService, in
	// spec order.
	targets []uniqueTarget
	// candidates holds the endpoints of every target, each target's run
	// sorted and then compacted in place; texts holds their spellings.
	candidates []candidate
	texts      []string
	// endpoints is what the Localities' Endpoints slices point into.
	endpoints  []Endpoint
	localities []Locality
	// ports holds one slice's matching port numbers.
	ports []uint16
	// keys is where sortUnique packs IPv4 candidates.
	keys []uint64
}

// uniqueTarget is one distinct Service port with the summed weight of every
// spec entry naming it, and the run of candidates it kept: start and end
// index the scratch candidates, or on the packed path (see
// collectPackedEndpoints) count the keys of the targets before it.
type uniqueTarget struct {
	service    *source.Service
	port       source.ServicePort
	weight     uint32
	duplicated bool
	start, end int
	// On the packed path, the packed keys kept (see sliceRun) and the
	// EndpointSlice their endpoint indexes refer to.
	keys  []uint64
	slice *source.EndpointSlice
}

// candidate is one address:port of a target, reduced to numbers so that
// sorting millions of them moves no pointers (and so triggers no write
// barriers): the address as netip.Addr.As16 gives its 128 bits, split in
// two, and text, the index in endpointScratch.texts of the address as the
// EndpointSlice spelled it. Endpoint.Address references that spelling, so
// no address string is ever copied.
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
	return uint64(uint32(c.lo))<<32 | uint64(c.port)<<16 | uint64(text)
}

// unpackKey gives k back as a candidate whose text is text.
func unpackKey(k uint64, text uint32) candidate {
	return newCandidate4(uint32(k>>32), keyPort(k), text)
}

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
	return es.AddressType == "IPv4" && len(es.Endpoints) <= 1<<16
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

// buildLocalities turns resolved targets into Localities, recording weight
// and endpoint problems on cond: one Locality per distinct Service port that
// has usable endpoints, in spec order. It returns nil when there is none, or
// on error (cond then holds it). The result aliases b.scratch (see Builder).
func (b *Builder) buildLocalities(namespace string, targets []resolvedTarget, cond *Condition) []Locality {
	s := &b.scratch

	// Envoy adds the locality weights of a priority into a uint32; a larger
	// total is rejected outright, so it is an error here rather than a
	// silently wrapped or reset weight.
	var total uint64
	for _, t := range targets {
		total += uint64(t.weight)
	}
	if total > math.MaxUint32 {
		cond.AddError(SubConditionSpec, ReasonWeightOverflow, fmt.Sprintf(
			"spec.services weights add up to %d, more than the allowed total of %d", total, uint64(math.MaxUint32)))
		return nil
	}

	// A Service port named twice would be two localities with the same
	// endpoints; proxyless gRPC clients reject that, so it becomes one
	// locality carrying both weights.
	// Cleared, not just truncated: a target left from a larger build would
	// keep its Service, slice and cached run alive.
	clear(s.targets)
	s.targets = s.targets[:0]
targets:
	for _, t := range targets {
		for i := range s.targets {
			u := &s.targets[i]
			if u.service == t.service && u.port.Port == t.port.Port {
				if !u.duplicated {
					u.duplicated = true
					cond.AddWarning(SubConditionSpec, ReasonDuplicateTarget, fmt.Sprintf(
						"port %d of Service %q is named more than once in spec.services; it is one locality whose weight is the sum of its entries",
						t.port.Port, namespace+"/"+t.service.Name))
				}
				u.weight += t.weight
				continue targets
			}
		}
		s.targets = append(s.targets, uniqueTarget{service: t.service, port: t.port, weight: t.weight})
	}

	s.candidates, s.texts = s.candidates[:0], s.texts[:0]
	packed := b.packedTargets(namespace)
	count := 0
	for i := range s.targets {
		if packed {
			count = b.collectPackedEndpoints(namespace, &s.targets[i], i, count, cond)
		} else {
			b.collectEndpoints(namespace, &s.targets[i], i, cond)
			count = len(s.candidates)
		}
	}

	// Every weight unset means an even split; otherwise a weight of 0 is a
	// locality that is left unweighted (and so takes no traffic).
	unweighted := total == 0
	s.localities = s.localities[:0]
	s.endpoints = slices.Grow(s.endpoints[:0], count)[:count]
	weighted := false
	for i := range s.targets {
		u := &s.targets[i]
		if u.start == u.end {
			continue
		}
		eps := s.endpoints[u.start:u.end:u.end]
		if packed {
			for j, k := range u.keys {
				eps[j] = Endpoint{Address: u.slice.Endpoints[keyIndex(k)].Addresses[0], Port: uint32(keyPort(k))}
			}
		} else {
			for j, c := range s.candidates[u.start:u.end] {
				eps[j] = Endpoint{Address: s.texts[c.text], Port: uint32(c.port)}
			}
		}
		weight := u.weight
		if unweighted {
			weight = 1
		}
		weighted = weighted || weight > 0
		s.localities = append(s.localities, Locality{
			SubZone:   namespace + "/" + u.service.Name + "/" + strconv.Itoa(int(u.port.Port)),
			Weight:    weight,
			Endpoints: eps,
		})
	}
	if len(s.localities) == 0 {
		return nil
	}
	if !weighted {
		// Clients fail every request when no locality carries a weight;
		// no locality at all is the honest equivalent.
		cond.AddWarning(SubConditionService, ReasonNoWeightedEndpoints,
			"no Service with a non-zero weight in spec.services has ready endpoints")
		return nil
	}
	return s.localities[:len(s.localities):len(s.localities)]
}

// collectEndpoints appends the usable endpoints of s.targets[i] to
// s.candidates as one sorted run without repeats and without any
// address:port an earlier target already holds, and records the run.
func (b *Builder) collectEndpoints(namespace string, u *uniqueTarget, i int, cond *Condition) {
	s := &b.scratch
	start, firstText := len(s.candidates), len(s.texts)

	// The Index lists a Service's slices in name order, which keeps the
	// order of the warnings (and the surviving spelling of an address)
	// independent of the order the input came in.
	slices := b.index.EndpointSlices(source.NamespacedName{Namespace: namespace, Name: u.service.Name})
	var run []candidate
	if b.sliceRuns != nil {
		// Each slice's run is sorted already: only a Service with several
		// slices needs them sorted together.
		filled := 0
		for _, es := range slices {
			r := b.sliceRun(es, u.port.Name)
			cond.Warnings = append(cond.Warnings, r.warnings...)
			if r.appendTo(s, es) {
				filled++
			}
		}
		run = s.candidates[start:]
		if filled > 1 {
			run = s.sortUnique(run, uint32(firstText), len(s.texts)-firstText)
		}
	} else {
		for _, es := range slices {
			if b.appendSliceEndpoints(es, u.port.Name, cond, uint32(len(s.texts)), 0) {
				s.texts = appendAddresses(s.texts, es)
			}
		}
		run = s.sortUnique(s.candidates[start:], uint32(firstText), len(s.texts)-firstText)
	}

	// An address:port in two localities makes proxyless gRPC clients reject
	// the whole assignment: the earliest target keeps it.
	dropped, firstDropped := 0, candidate{}
	for _, earlier := range s.targets[:i] {
		kept := run[:0]
		prev := s.candidates[earlier.start:earlier.end]
		j := 0
		for _, c := range run {
			for j < len(prev) && compareSockets(prev[j], c) < 0 {
				j++
			}
			if j < len(prev) && sameSocket(prev[j], c) {
				if dropped == 0 || compareCandidates(c, firstDropped) < 0 {
					firstDropped = c
				}
				dropped++
				continue
			}
			kept = append(kept, c)
		}
		run = kept
	}
	if dropped > 0 {
		warnDuplicateEndpoints(cond, namespace, u, dropped, firstDropped.addrPort())
	}

	s.candidates = s.candidates[:start+len(run)]
	u.start, u.end = start, len(s.candidates)
}

// warnDuplicateEndpoints records that dropped address:ports of u, first
// the lowest, were left out because earlier targets hold them.
func warnDuplicateEndpoints(cond *Condition, namespace string, u *uniqueTarget, dropped int, first netip.AddrPort) {
	cond.AddWarning(SubConditionService, ReasonDuplicateEndpoint, fmt.Sprintf(
		"%d endpoint(s) of port %d of Service %q, first %s, already belong to an earlier Service in spec.services and are left out of this one",
		dropped, u.port.Port, namespace+"/"+u.service.Name, first))
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
func (s *endpointScratch) sortUnique(run []candidate, firstText uint32, texts int) []candidate {
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
	slices.Sort(s.keys)
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

// appendSliceEndpoints appends to the scratch candidates every ready
// endpoint of es, from es.Endpoints[from] on, on every slice port matching
// the Service port named portName ("" for an unnamed port, which matches
// every TCP port), and reports whether it appended any. A candidate's text
// is firstText plus the index of its endpoint in es.Endpoints (see
// appendAddresses); the texts themselves are the caller's to record.
// Endpoints and ports Envoy could not take are skipped with at most one
// warning each per slice.
func (b *Builder) appendSliceEndpoints(es *source.EndpointSlice, portName string, cond *Condition, firstText uint32, from int) bool {
	var is4 bool
	switch es.AddressType {
	case "IPv4":
		is4 = true
	case "IPv6":
	default:
		// FQDN slices name hosts, which EDS cannot carry.
		return false
	}

	s := &b.scratch
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
		cond.AddWarning(SubConditionService, ReasonInvalidEndpointPort, fmt.Sprintf(
			"EndpointSlice %q has port %d, outside 1-65535; it is skipped", es.Namespace+"/"+es.Name, badPort))
	}
	if len(s.ports) == 0 {
		return false
	}

	appended := len(s.candidates)
	bad, firstBad := 0, ""
	for i := from; i < len(es.Endpoints); i++ {
		text, ok := usableAddress(&es.Endpoints[i])
		if !ok {
			continue
		}
		if is4 {
			// Nearly every address is a plain dotted quad: parse it
			// without netip's general machinery.
			if v4, ok := parseDottedQuad(text); ok {
				idx := firstText + uint32(i)
				for _, port := range s.ports {
					s.candidates = append(s.candidates, newCandidate4(v4, port, idx))
				}
				continue
			}
		}
		addr, err := netip.ParseAddr(text)
		// A zone (fe80::1%eth0) is not part of an address Envoy can parse.
		if err != nil || addr.Is4() != is4 || addr.Zone() != "" {
			if bad == 0 {
				firstBad = text
			}
			bad++
			continue
		}
		idx := firstText + uint32(i)
		for _, port := range s.ports {
			s.candidates = append(s.candidates, newCandidate(addr, port, idx))
		}
	}
	if bad > 0 {
		family := "IPv6"
		if is4 {
			family = "IPv4"
		}
		cond.AddWarning(SubConditionService, ReasonInvalidEndpointAddress, fmt.Sprintf(
			"EndpointSlice %q has %d address(es) that are not valid %s addresses, first %q; they are skipped",
			es.Namespace+"/"+es.Name, bad, family, firstBad))
	}
	return len(s.candidates) > appended
}

// usableAddress returns the address translation takes from ep, and false
// when ep is not ready or has none.
func usableAddress(ep *source.Endpoint) (string, bool) {
	if (ep.Ready != nil && !*ep.Ready) || len(ep.Addresses) == 0 {
		return "", false
	}
	return ep.Addresses[0], true
}

// appendAddresses appends the text of every endpoint of es, in order, for
// the candidates appendSliceEndpoints made: its first address, the one
// translation uses (Kubernetes calls an endpoint's addresses fungible and
// lets consumers use the first alone).
func appendAddresses(texts []string, es *source.EndpointSlice) []string {
	for i := range es.Endpoints {
		text := ""
		if addrs := es.Endpoints[i].Addresses; len(addrs) > 0 {
			text = addrs[0]
		}
		texts = append(texts, text)
	}
	return texts
}

// parseDottedQuad parses s as four decimal fields 0-255 without leading
// zeros, returning the address as big-endian bits. It accepts exactly the
// strings netip.ParseAddr reads as unzoned IPv4 addresses, giving the same
// address, and returns false for everything else, which then takes the
// general path (FuzzParseDottedQuad holds it to that).
func parseDottedQuad(s string) (uint32, bool) {
	var addr uint32
	field, digits, fields := uint32(0), 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			if digits == 1 && field == 0 {
				return 0, false // a leading zero
			}
			field = field*10 + uint32(c-'0')
			digits++
			if field > 255 {
				return 0, false
			}
		case c == '.' && digits > 0 && fields < 3:
			addr = addr<<8 | field
			field, digits = 0, 0
			fields++
		default:
			return 0, false
		}
	}
	if digits == 0 || fields != 3 {
		return 0, false
	}
	return addr<<8 | field, true
}
