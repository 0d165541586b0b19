package model

import "github.com/tributary-dev/tributary/source"

// sliceRuns keeps, for a Builder that lives across changes to its Index,
// each EndpointSlice's endpoints parsed, sorted and without repeats, per
// Service port name, so that rebuilding an ExtensionService after one of its
// slices changed parses that slice alone (see Builder.CacheEndpointSlices).
//
// An entry is valid for exactly the slice it was made from: the Index
// contract (an indexed object never changes; replacing one puts a new
// pointer) is what makes a pointer comparison a complete freshness check.
type sliceRuns struct {
	entries map[source.NamespacedName]*sliceEntry
	// sweepAt is the entry count at which entries of slices the Index no
	// longer holds are dropped: twice the count the last sweep left, so
	// sweeping costs O(1) per entry made, and deleted slices hold memory
	// only until the map doubles.
	sweepAt int
}

// sliceEntry holds the runs of one EndpointSlice, one per Service port
// name asked for so far (there is rarely more than one).
type sliceEntry struct {
	slice *source.EndpointSlice
	runs  []sliceRun
}

// sliceRun is what appendSliceEndpoints gives for one slice and port name,
// sorted by sortUnique: its candidates, whose text is the index of their
// endpoint in the slice, and the warnings it recorded.
//
// An IPv4 run of a slice with at most 2^16 endpoints (every slice
// Kubernetes makes: it caps them at 1000) is packed into one uint64 per
// candidate, address<<32 | port<<16 | endpoint index, a third of a
// candidate's size; any other run keeps whole candidates.
type sliceRun struct {
	portName string
	warnings []SubCondition
	packed   []uint64
	general  []candidate
}

const minSweepAt = 64

// CacheEndpointSlices makes b keep what it parses of each EndpointSlice from
// one Build to the next, so that after a change to one slice only that
// slice is parsed and sorted again. It pays off for a Builder that lives as
// long as its Index keeps changing, such as a Sync session's: it costs about
// 8 bytes per endpoint and port, plus some 200 bytes per slice. A one-shot
// translation has nothing to gain from it.
func (b *Builder) CacheEndpointSlices() {
	if b.sliceRuns == nil {
		b.sliceRuns = &sliceRuns{entries: make(map[source.NamespacedName]*sliceEntry), sweepAt: minSweepAt}
	}
}

// sliceRun returns the run of es for the Service port named portName,
// making it if b has none for this very slice.
func (b *Builder) sliceRun(es *source.EndpointSlice, portName string) *sliceRun {
	c := b.sliceRuns
	name := es.NamespacedName()
	entry := c.entries[name]
	if entry == nil || entry.slice != es {
		if entry == nil && len(c.entries) >= c.sweepAt {
			b.sweepSliceRuns()
		}
		entry = &sliceEntry{slice: es}
		c.entries[name] = entry
	}
	for i := range entry.runs {
		if entry.runs[i].portName == portName {
			return &entry.runs[i]
		}
	}

	// The run is made in the scratch space past the candidates in use, and
	// copied out.
	s := &b.scratch
	mark := len(s.candidates)
	var cond Condition
	b.appendSliceEndpoints(es, portName, &cond, 0)
	sorted := s.sortUnique(s.candidates[mark:], 0, len(es.Endpoints))
	r := sliceRun{portName: portName, warnings: cond.Warnings}
	if len(sorted) > 0 && es.AddressType == "IPv4" && len(es.Endpoints) <= 1<<16 {
		r.packed = make([]uint64, len(sorted))
		for i, cand := range sorted {
			r.packed[i] = uint64(uint32(cand.lo))<<32 | uint64(cand.port)<<16 | uint64(cand.text)
		}
	} else if len(sorted) > 0 {
		r.general = append([]candidate(nil), sorted...)
	}
	s.candidates = s.candidates[:mark]
	entry.runs = append(entry.runs, r)
	return &entry.runs[len(entry.runs)-1]
}

// sweepSliceRuns drops the entries of slices b's Index no longer holds.
func (b *Builder) sweepSliceRuns() {
	c := b.sliceRuns
	for name, entry := range c.entries {
		if b.index.EndpointSlice(name) != entry.slice {
			delete(c.entries, name)
		}
	}
	c.sweepAt = max(minSweepAt, 2*len(c.entries))
}

// appendTo appends r's candidates, taken from es, to s as they would have
// been appended by appendSliceEndpoints and appendAddresses, each with its
// own text, and reports whether there were any.
func (r *sliceRun) appendTo(s *endpointScratch, es *source.EndpointSlice) bool {
	for _, k := range r.packed {
		s.appendFromSlice(es, newCandidate4(uint32(k>>32), uint16(k>>16), uint32(k&0xffff)))
	}
	for _, c := range r.general {
		s.appendFromSlice(es, c)
	}
	return len(r.packed)+len(r.general) > 0
}

// appendFromSlice appends c, whose text is the index of its endpoint in es.
func (s *endpointScratch) appendFromSlice(es *source.EndpointSlice, c candidate) {
	text := es.Endpoints[c.text].Addresses[0]
	c.text = uint32(len(s.texts))
	s.texts = append(s.texts, text)
	s.candidates = append(s.candidates, c)
}
