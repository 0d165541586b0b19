package model

import (
	"slices"

	"github.com/tributary-dev/tributary/internal/source"
)

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
// The run of a packable slice is kept as packed keys whose index is the
// endpoint's, a third of a candidate's size; any other run keeps whole
// candidates.
type sliceRun struct {
	portName string
	warnings []SubCondition
	packed   []uint64
	general  []candidate
}

// sweepSlack bounds the entries of slices the Index no longer holds (deleted,
// or replaced by a slice b has not read yet): when they could outnumber the
// live slices by more than this, they are dropped (SweepEndpointSlices). So
// a sweep, O(entries), comes at most once per sweepSlack dropped entries.
const sweepSlack = 64

// CacheEndpointSlices makes b keep what it parses of each EndpointSlice from
// one Build to the next, so that after a change to one slice only that
// slice is parsed and sorted again. It pays off for a Builder that lives as
// long as its Index keeps changing, such as a Sync session's: it costs about
// 8 bytes per endpoint and port, plus some 200 bytes per slice. A one-shot
// translation has nothing to gain from it.
func (b *Builder) CacheEndpointSlices() {
	if b.sliceRuns == nil {
		b.sliceRuns = &sliceRuns{entries: make(map[source.NamespacedName]*sliceEntry)}
	}
}

// sliceRun returns the run of es for the Service port named portName,
// making it if b has none for this very slice.
func (b *Builder) sliceRun(es *source.EndpointSlice, portName string) *sliceRun {
	c := b.sliceRuns
	name := es.NamespacedName()
	entry := c.entries[name]
	var previous *sliceEntry
	if entry == nil || entry.slice != es {
		previous = entry
		if len(c.entries) >= 2*b.index.EndpointSliceCount()+sweepSlack {
			b.SweepEndpointSlices()
		}
		entry = &sliceEntry{slice: es}
		c.entries[name] = entry
	}
	if r := entry.run(portName); r != nil {
		return r
	}
	entry.runs = append(entry.runs, b.makeSliceRun(es, portName, previous))
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
func (b *Builder) makeSliceRun(es *source.EndpointSlice, portName string, previous *sliceEntry) sliceRun {
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
	s := &b.scratch
	mark := len(s.candidates)
	var cond Condition
	b.appendSliceEndpoints(es, portName, &cond, 0, from)
	sorted := s.sortUnique(s.candidates[mark:], 0, len(es.Endpoints))
	defer func() { s.candidates = s.candidates[:mark] }()

	r := sliceRun{portName: portName, warnings: cond.Warnings}
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
		addrA, okA := usableAddress(&a[i])
		addrB, okB := usableAddress(&b[i])
		if okA != okB || addrA != addrB {
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

// SweepEndpointSlices drops what b keeps of EndpointSlices its Index no
// longer holds as they are: deleted slices, and slices replaced by ones b
// has not read. b sweeps by itself as such entries pile up (see
// sweepSlack); a caller that has just rebuilt many ExtensionServices on
// other Builders calls it to let go of the replaced slices at once. It
// does nothing unless b caches slices.
func (b *Builder) SweepEndpointSlices() {
	c := b.sliceRuns
	if c == nil {
		return
	}
	for name, entry := range c.entries {
		if b.index.EndpointSlice(name) != entry.slice {
			delete(c.entries, name)
		}
	}
}

// packedTargets reports whether every target of the ExtensionService being
// built can take the packed path: b caches slices, and each target's Service
// has at most one EndpointSlice, an IPv4 one whose run is therefore packed.
// That is nearly every Service of a cluster (the EndpointSlice controller
// starts a second slice past 100 endpoints), and on that path each run is
// used as the cache holds it, never copied into candidates.
func (b *Builder) packedTargets(namespace string) bool {
	if b.sliceRuns == nil {
		return false
	}
	for _, u := range b.scratch.targets {
		switch slices := b.index.EndpointSlices(source.NamespacedName{Namespace: namespace, Name: u.service.Name}); len(slices) {
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

// collectPackedEndpoints is collectEndpoints on the packed path (see
// packedTargets): u keeps its slice's run, less any address:port an earlier
// target holds, as keys; its start is count, the keys of the targets before
// it, and it returns count with its own added.
func (b *Builder) collectPackedEndpoints(namespace string, u *uniqueTarget, i, count int, cond *Condition) int {
	u.start, u.end = count, count
	slices := b.index.EndpointSlices(source.NamespacedName{Namespace: namespace, Name: u.service.Name})
	if len(slices) == 0 {
		return count
	}
	r := b.sliceRun(slices[0], u.port.Name)
	cond.Warnings = append(cond.Warnings, r.warnings...)
	run := r.packed

	// The cache's run is shared: it is filtered into a copy only when an
	// earlier target holds some of it, which is rare.
	dropped, firstDropped := 0, uint64(0)
	for _, earlier := range b.scratch.targets[:i] {
		prev, j := earlier.keys, 0
		var kept []uint64
		for n, k := range run {
			for j < len(prev) && keySocket(prev[j]) < keySocket(k) {
				j++
			}
			if j < len(prev) && keySocket(prev[j]) == keySocket(k) {
				if kept == nil {
					kept = append(make([]uint64, 0, len(run)), run[:n]...)
				}
				if dropped == 0 || k < firstDropped {
					firstDropped = k
				}
				dropped++
				continue
			}
			if kept != nil {
				kept = append(kept, k)
			}
		}
		if kept != nil {
			run = kept
		}
	}
	if dropped > 0 {
		warnDuplicateEndpoints(cond, namespace, u, dropped, unpackKey(firstDropped, 0).addrPort())
	}
	u.keys, u.slice = run, slices[0]
	u.end = count + len(run)
	return u.end
}

// appendTo appends r's candidates, taken from es, to s as they would have
// been appended by appendSliceEndpoints and appendAddresses, each with its
// own text, and reports whether there were any.
func (r *sliceRun) appendTo(s *endpointScratch, es *source.EndpointSlice) bool {
	for _, k := range r.packed {
		s.appendFromSlice(es, unpackKey(k, keyIndex(k)))
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
