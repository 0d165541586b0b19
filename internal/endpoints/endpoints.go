// Package endpoints picks the endpoints of an ExtensionService's targets out
// of EndpointSlices: which endpoints and ports count, in what order, and
// which address:ports a target loses to an earlier one.
//
// Reference states those rules once, plainly. Collector gives the same
// result fast enough for millions of endpoints (numbers instead of strings,
// reused memory, a cache of parsed slices); its tests and fuzz targets hold
// it to Reference on random input, the way package envoy holds its wire
// encoders to proto.Marshal.
package endpoints

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/tributary-dev/tributary/internal/source"
)

// The reasons of the warnings Collect and Reference give. They are
// ServiceError sub-conditions of the ExtensionService's status.
const (
	// ReasonDuplicateEndpoint: an address:port of a target was already used
	// by an earlier target and is left out.
	ReasonDuplicateEndpoint = "DuplicateEndpoint"
	// ReasonInvalidEndpointAddress: an EndpointSlice holds an address that
	// is not an IP of the slice's family; the endpoint is skipped.
	ReasonInvalidEndpointAddress = "InvalidEndpointAddress"
	// ReasonInvalidEndpointPort: an EndpointSlice port lies outside
	// 1..65535; the port is skipped.
	ReasonInvalidEndpointPort = "InvalidEndpointPort"
)

// Slices is where EndpointSlices are looked up (model.Index). An indexed
// slice never changes: replacing one puts a new pointer, which is what lets
// the slice cache check freshness by pointer.
type Slices interface {
	// EndpointSlices lists the slices labelled for the named Service, in
	// name order.
	EndpointSlices(service source.NamespacedName) []*source.EndpointSlice
	// EndpointSlice returns the named slice, or nil.
	EndpointSlice(name source.NamespacedName) *source.EndpointSlice
	// EndpointSliceCount is the number of slices held.
	EndpointSliceCount() int
}

// Target is one Service port whose endpoints are wanted.
type Target struct {
	// Service is the Service's name, in the namespace of the call.
	Service string
	// PortName is the Service port's name, "" when it has none.
	PortName string
	// Port is the Service port's number, which warnings name.
	Port int32
}

// Endpoint is one address:port, the address as the EndpointSlice's
// Endpoints hold it (a dotted quad as its bits, anything else as spelled).
type Endpoint struct {
	Address source.Address
	Port    uint32
}

// Warning is one problem found in the endpoints; it never withholds output.
type Warning struct {
	Reason  string
	Message string
}

// Collector is the fast way to the result Reference defines. It reuses its
// memory from one call to the next: what Collect returns is valid until the
// next call. A Collector is not safe for concurrent use.
type Collector struct {
	slices  Slices
	scratch scratch
	// cache is nil unless CacheSlices was called.
	cache *sliceCache
}

// NewCollector returns a Collector that finds EndpointSlices in slices.
func NewCollector(slices Slices) *Collector {
	return &Collector{slices: slices}
}

// scratch is the memory a Collector reuses. Everything Collect returns
// aliases it, which is what lets a Collector turn millions of endpoints
// into runs with next to no allocation once it has warmed up.
type scratch struct {
	// targets are the runs of the targets of one call, in order.
	targets []targetRun
	// candidates holds the endpoints of every target, each target's run
	// sorted and then compacted in place; texts holds the spellings of
	// their addresses (see appendAddresses).
	candidates []candidate
	texts      []string
	// endpoints is what the returned runs point into.
	endpoints []Endpoint
	runs      [][]Endpoint
	warnings  []Warning
	// ports holds one slice's matching port numbers.
	ports []uint16
	// keys holds, on the packed path without a cache, the run of every
	// target (see collectPacked); otherwise it is where sortUnique packs
	// IPv4 candidates and makeSliceRun parses a slice. sortBuffer is
	// sortKeys' scratch.
	keys, sortBuffer []uint64
	// warningsEnd is, per target, the end of its warnings in warnings
	// before address:ports taken by earlier targets are counted.
	warningsEnd []int
	// merge is the heap and cursors of dropTaken, and taken what it finds.
	merge mergeScratch
}

// targetRun is what one target kept: start and end index the scratch
// candidates, or on the packed path (see collectPacked) count the keys of
// the targets before it.
type targetRun struct {
	start, end int
	// On the packed path, the packed keys kept (the cache's run, or part
	// of the scratch keys) and the EndpointSlice their endpoint indexes
	// refer to; packedTargets records the slice.
	keys  []uint64
	slice *source.EndpointSlice
}

// Collect gives what Reference gives for the same targets: for each target
// its endpoints (nil when it has none), and the warnings. The result aliases
// c's memory and is valid until the next call; the runs have no spare
// capacity, so appending to one never writes into another.
func (c *Collector) Collect(namespace string, targets []Target) ([][]Endpoint, []Warning) {
	s := &c.scratch
	// Cleared, not just truncated: a run left from a larger call would keep
	// its slice and cached keys alive.
	clear(s.targets)
	s.targets = slices.Grow(s.targets[:0], len(targets))[:len(targets)]
	s.candidates, s.texts, s.warnings = s.candidates[:0], s.texts[:0], s.warnings[:0]

	s.warningsEnd = s.warningsEnd[:0]
	packed := c.packedTargets(namespace, targets)
	count := 0
	for i := range targets {
		if packed {
			count = c.collectPacked(targets, i, count)
		} else {
			c.collect(namespace, targets, i)
			count = len(s.candidates)
		}
		s.warningsEnd = append(s.warningsEnd, len(s.warnings))
	}
	count = s.dropTaken(namespace, targets, packed, count)

	s.endpoints = slices.Grow(s.endpoints[:0], count)[:count]
	clear(s.runs)
	s.runs = s.runs[:0]
	for i := range s.targets {
		r := &s.targets[i]
		if r.start == r.end {
			s.runs = append(s.runs, nil)
			continue
		}
		eps := s.endpoints[r.start:r.end:r.end]
		if packed {
			for j, k := range r.keys {
				eps[j] = Endpoint{Address: source.QuadAddress(keyAddress(k)), Port: uint32(keyPort(k))}
			}
		} else {
			for j, cand := range s.candidates[r.start:r.end] {
				eps[j] = Endpoint{Address: cand.address(s.texts), Port: uint32(cand.port)}
			}
		}
		s.runs = append(s.runs, eps)
	}
	return s.runs[:len(s.runs):len(s.runs)], s.warnings[:len(s.warnings):len(s.warnings)]
}

// collect appends the usable endpoints of targets[i] to the scratch
// candidates as one sorted run without repeats, and records the run;
// dropTaken then takes out what an earlier target holds.
func (c *Collector) collect(namespace string, targets []Target, i int) {
	s := &c.scratch
	t := &targets[i]
	start, firstText := len(s.candidates), len(s.texts)

	// The slices come in name order, which keeps the order of the warnings
	// (and the surviving spelling of an address) independent of the order
	// the input came in.
	slices := c.slices.EndpointSlices(source.NamespacedName{Namespace: namespace, Name: t.Service})
	var run []candidate
	if c.cache != nil {
		// Each slice's run is sorted already: only a Service with several
		// slices needs them sorted together.
		filled := 0
		for _, es := range slices {
			r := c.sliceRun(es, t.PortName)
			s.warnings = append(s.warnings, r.warnings...)
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
			if s.appendSliceEndpoints(es, t.PortName, &s.warnings, uint32(len(s.texts)), 0) {
				s.texts = appendAddresses(s.texts, es)
			}
		}
		run = s.sortUnique(s.candidates[start:], uint32(firstText), len(s.texts)-firstText)
	}

	s.candidates = s.candidates[:start+len(run)]
	s.targets[i].start, s.targets[i].end = start, len(s.candidates)
}

// duplicateEndpointsWarning says that dropped address:ports of t, first
// the lowest, were left out because earlier targets hold them.
func duplicateEndpointsWarning(namespace string, t *Target, dropped int, first netip.AddrPort) Warning {
	return Warning{Reason: ReasonDuplicateEndpoint, Message: fmt.Sprintf(
		"%d endpoint(s) of port %d of Service %s, first %s, already belong to an earlier Service in spec.services and are left out of this one",
		dropped, t.Port, source.Quote(namespace+"/"+t.Service), first)}
}

// invalidPortWarning says that es has port, outside 1..65535 (the first of
// its kind), and that it is skipped.
func invalidPortWarning(es *source.EndpointSlice, port int32) Warning {
	return Warning{Reason: ReasonInvalidEndpointPort, Message: fmt.Sprintf(
		"EndpointSlice %s has port %d, outside 1-65535; it is skipped", source.Quote(es.Namespace+"/"+es.Name), port)}
}

// invalidAddressWarning says that es has bad addresses that are not IPs of
// its family, first, and that they are skipped.
func invalidAddressWarning(es *source.EndpointSlice, bad int, first source.Address) Warning {
	return Warning{Reason: ReasonInvalidEndpointAddress, Message: fmt.Sprintf(
		"EndpointSlice %s has %d address(es) that are not valid %s addresses, first %s; they are skipped",
		source.Quote(es.Namespace+"/"+es.Name), bad, es.AddressType, source.Quote(first.String()))}
}
