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

// sliceRun is what appendSliceEndpoints gives for one slice and port name,
// sorted by sortUnique: its candidates, whose text is the index of their
// endpoint in the slice, and the warnings it gave.
//
// The run of a packable slice is kept as packed keys whose index is the
// endpoint's, a third of a candidate's size; any other run keeps whole
// candidates.
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
	from, kept := 0, []uint64(nil)
	if prev := previous.run(portName); prev != nil && prev.packed != nil && len(prev.warnings) == 0 &&
		es.AddressType == previous.slice.AddressType && packable(es) &&
		samePorts(es.Ports, previous.slice.Ports) {
		if from = sharedPrefix(previous.slice.Endpoints, es.Endpoints); from > 0 {
			kept = prev.packed
		}
	}

	// The new endpoints are parsed in the scratch space past the candidates
	// in use, and copied out.
	s := &c.scratch
	mark := len(s.candidates)
	var warnings []Warning
	s.appendSliceEndpoints(es, portName, &warnings, 0, from)
	sorted := s.sortUnique(s.candidates[mark:], 0, len(es.Endpoints))
	defer func() { s.candidates = s.candidates[:mark] }()

	r := sliceRun{portName: portName, warnings: warnings}
	if !packable(es) {
		if len(sorted) > 0 {
			r.general = append([]candidate(nil), sorted...)
		}
		return r
	}
	// Both parts are sorted and free of repeats; a merge gives their union
	// in order, and an address:port in both keeps its earlier endpoint,
	// which is the kept one: every kept index lies before from. The merge
	// runs in sortUnique's scratch keys, done with by now.
	merged := s.keys[:0]
	i := 0
	push := func(k uint64) {
		if n := len(merged); n == 0 || keySocket(merged[n-1]) != keySocket(k) {
			merged = append(merged, k)
		}
	}
	for _, cand := range sorted {
		k := packKey(cand, cand.text)
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
	s.keys = merged
	if len(merged) > 0 {
		r.packed = slices.Clone(merged)
	}
	return r
}

// sharedPrefix counts the endpoints at the start of a and b that translate
// the same: the same address, and both usable or both not.
func sharedPrefix(a, b []source.Endpoint) int {
	n := min(len(a), len(b))
	for i := range n {
		x, y := &a[i], &b[i]
		if x.NotReady != y.NotReady || (!x.NotReady && x.Address != y.Address) {
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

// packedTargets reports whether every target can take the packed path: c
// caches slices, and each target's Service has at most one EndpointSlice,
// an IPv4 one whose run is therefore packed. That is nearly every Service
// of a cluster (the EndpointSlice controller starts a second slice past 100
// endpoints), and on that path each run is used as the cache holds it,
// never copied into candidates.
func (c *Collector) packedTargets(namespace string, targets []Target) bool {
	if c.cache == nil {
		return false
	}
	for _, t := range targets {
		switch slices := c.slices.EndpointSlices(source.NamespacedName{Namespace: namespace, Name: t.Service}); len(slices) {
		case 0:
		case 1:
			if !packable(slices[0]) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// collectPacked is collect on the packed path (see packedTargets): the run
// of targets[i] is its slice's run, as keys; its start is count, the keys
// of the targets before it, and collectPacked returns count with its own
// added. The cache's run is shared: dropTaken filters it into a copy only
// when an earlier target holds some of it, which is rare.
func (c *Collector) collectPacked(namespace string, targets []Target, i, count int) int {
	s := &c.scratch
	t, u := &targets[i], &s.targets[i]
	u.start, u.end = count, count
	slices := c.slices.EndpointSlices(source.NamespacedName{Namespace: namespace, Name: t.Service})
	if len(slices) == 0 {
		return count
	}
	r := c.sliceRun(slices[0], t.PortName)
	s.warnings = append(s.warnings, r.warnings...)
	u.keys, u.slice = r.packed, slices[0]
	u.end = count + len(r.packed)
	return u.end
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
	text := es.Endpoints[c.text].Address
	c.text = uint32(len(s.texts))
	s.texts = append(s.texts, text)
	s.candidates = append(s.candidates, c)
}
