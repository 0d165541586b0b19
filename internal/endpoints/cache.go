package endpoints

import (
	"slices"

	"github.com/tributary-dev/tributary/internal/source"
)

// sliceCache keeps, for a Collector that lives across changes to its
// Slices, each EndpointSlice's endpoints parsed, sorted and without
// repeats, per Service port name, so that collecting a target again after
// one of its slices changed parses that slice alone (see CacheSlices).
//
// An entry is valid for exactly the slice it was made from: the Slices
// contract (a slice never changes; replacing one puts a new pointer) is
// what makes a pointer comparison a complete freshness check.
type sliceCache struct {
	entries map[source.NamespacedName]*sliceEntry
}

// sliceEntry holds the runs of one EndpointSlice, one per Service port
// name asked for so far (there is rarely more than one).
type sliceEntry struct {
	slice *source.EndpointSlice
	runs  []sliceRun
}

// sliceRun is what one slice gives for one Service port name, sorted and
// without repeats, and the warnings it gave: for a packable slice, the
// packed keys of appendSliceKeys, whose index is the endpoint's, a third of
// a candidate's size; for any other, the candidates of
// appendSliceEndpoints, whose text is the index of their endpoint in the
// slice, as sortUnique leaves them.
type sliceRun struct {
	portName string
	warnings []Warning
	packed   []uint64
	general  []candidate
}

// sweepSlack bounds the entries of slices the Slices no longer hold
// (deleted, or replaced by a slice c has not read yet): when they could
// outnumber the live slices by more than this, they are dropped
// (SweepSlices). So a sweep, O(entries), comes at most once per sweepSlack
// dropped entries.
const sweepSlack = 64

// CacheSlices makes c keep what it parses of each EndpointSlice from one
// Collect to the next, so that after a change to one slice only that slice
// is parsed and sorted again. It pays off for a Collector that lives as long
// as its Slices keep changing, such as a Sync session's: it costs about 8
// bytes per endpoint and port, plus some 200 bytes per slice. A one-shot
// translation has nothing to gain from it.
func (c *Collector) CacheSlices() {
	if c.cache == nil {
		c.cache = &sliceCache{entries: make(map[source.NamespacedName]*sliceEntry)}
	}
}

// SweepSlices drops what c keeps of EndpointSlices its Slices no longer
// hold as they are: deleted slices, and slices replaced by ones c has not
// read. c sweeps by itself as such entries pile up (see sweepSlack); a
// caller that has just collected with many other Collectors calls it to let
// go of the replaced slices at once. It does nothing unless c caches slices.
func (c *Collector) SweepSlices() {
	if c.cache == nil {
		return
	}
	for name, entry := range c.cache.entries {
		if c.slices.EndpointSlice(name) != entry.slice {
			delete(c.cache.entries, name)
		}
	}
}

// sliceRun returns the run of es for the Service port named portName,
// making it if c has none for this very slice.
func (c *Collector) sliceRun(es *source.EndpointSlice, portName string) *sliceRun {
	cache := c.cache
	name := es.NamespacedName()
	entry := cache.entries[name]
	var previous *sliceEntry
	if entry == nil || entry.slice != es {
		previous = entry
		if len(cache.entries) >= 2*c.slices.EndpointSliceCount()+sweepSlack {
			c.SweepSlices()
		}
		entry = &sliceEntry{slice: es}
		cache.entries[name] = entry
	}
	if r := entry.run(portName); r != nil {
		return r
	}
	entry.runs = append(entry.runs, c.makeSliceRun(es, portName, previous))
	return &entry.runs[len(entry.runs)-1]
}

// run returns e's run for portName, or nil.
func (e *sliceEntry) run(portName string) *sliceRun {
	if e == nil {
		return nil
	}
	for i := range e.runs {
		if e.runs[i].portName == portName {
			return &e.runs[i]
		}
	}
	return nil
}

// makeSliceRun makes the run of es for portName. previous, when not nil,
// is the entry of the slice es replaces: the EndpointSlice controller
// updates a slice by keeping its endpoints in place and appending new
// ones, so the endpoints the two share from the start on are taken from
// the previous run rather than parsed and sorted again.
func (c *Collector) makeSliceRun(es *source.EndpointSlice, portName string, previous *sliceEntry) sliceRun {
	s := &c.scratch
	r := sliceRun{portName: portName}
	if !packable(es) {
		// The endpoints are parsed in the scratch space past the
		// candidates in use, and copied out.
		mark := len(s.candidates)
		s.appendSliceEndpoints(es, portName, &r.warnings, 0, 0)
		if sorted := s.sortUnique(s.candidates[mark:], 0, es.Endpoints.Len()); len(sorted) > 0 {
			r.general = slices.Clone(sorted)
		}
		s.candidates = s.candidates[:mark]
		return r
	}

	from, kept := 0, []uint64(nil)
	if prev := previous.run(portName); prev != nil && prev.packed != nil && len(prev.warnings) == 0 &&
		es.AddressType == previous.slice.AddressType &&
		samePorts(es.Ports, previous.slice.Ports) {
		if from = sharedPrefix(previous.slice.Endpoints, es.Endpoints); from > 0 {
			kept = prev.packed
		}
	}
	// The new endpoints are parsed in sortUnique's scratch keys, which
	// nothing else uses in between.
	fresh := s.appendSliceKeys(s.keys[:0], es, portName, &r.warnings, from)
	s.keys = fresh
	if kept == nil {
		if len(fresh) > 0 {
			r.packed = slices.Clone(fresh)
		}
		return r
	}
	// Both parts are sorted and free of repeats; a merge gives their union
	// in order, and an address:port in both keeps its earlier endpoint,
	// which is the kept one: every kept index lies before from. The merge
	// runs in the scratch keys past fresh.
	merged := fresh[len(fresh):]
	i := 0
	push := func(k uint64) {
		if n := len(merged); n == 0 || keySocket(merged[n-1]) != keySocket(k) {
			merged = append(merged, k)
		}
	}
	for _, k := range fresh {
		for ; i < len(kept) && kept[i] < k; i++ {
			if int(keyIndex(kept[i])) < from {
				push(kept[i])
			}
		}
		push(k)
	}
	for ; i < len(kept); i++ {
		if int(keyIndex(kept[i])) < from {
			push(kept[i])
		}
	}
	if len(merged) > 0 {
		r.packed = slices.Clone(merged)
	}
	return r
}

// sharedPrefix counts the endpoints at the start of a and b that translate
// the same: the same address, and both usable or both not.
func sharedPrefix(a, b source.Endpoints) int {
	n := min(a.Len(), b.Len())
	for i := range n {
		notReady := a.NotReady(i)
		if notReady != b.NotReady(i) || (!notReady && a.Address(i) != b.Address(i)) {
			return i
		}
	}
	return n
}

// samePorts reports whether two slices' ports are the same list.
func samePorts(a, b []source.EndpointPort) bool {
	return slices.EqualFunc(a, b, func(p, q source.EndpointPort) bool {
		return equalPtr(p.Name, q.Name) && equalPtr(p.Port, q.Port) && equalPtr(p.Protocol, q.Protocol)
	})
}

func equalPtr[T comparable](a, b *T) bool {
	return a == b || (a != nil && b != nil && *a == *b)
}

// appendTo appends r's candidates, taken from es, to s as they would have
// been appended by appendSliceEndpoints and appendAddresses, each with its
// own text, and reports whether there were any.
func (r *sliceRun) appendTo(s *scratch, es *source.EndpointSlice) bool {
	for _, k := range r.packed {
		s.appendFromSlice(es, unpackKey(k, keyIndex(k)))
	}
	for _, c := range r.general {
		s.appendFromSlice(es, c)
	}
	return len(r.packed)+len(r.general) > 0
}

// appendFromSlice appends c, whose text is the index of its endpoint in es.
func (s *scratch) appendFromSlice(es *source.EndpointSlice, c candidate) {
	text := spelling(es.Endpoints.Address(int(c.text)))
	c.text = uint32(len(s.texts))
	s.texts = append(s.texts, text)
	s.candidates = append(s.candidates, c)
}
