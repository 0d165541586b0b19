package endpoints

import (
	"slices"

	"github.com/tributary-dev/tributary/internal/source"
)

// packedTargets reports whether every target can take the packed path:
// each target's Service has at most one EndpointSlice, a packable one, so
// that its run is packed keys whose index is the endpoint's in that slice.
// That is nearly every Service of a cluster (the EndpointSlice controller
// starts a second slice past 100 endpoints), and on that path a run is
// never turned into candidates, nor its addresses recorded as texts.
//
// It records each target's slice, or nil, in the scratch targets, and
// makes room in the scratch keys for every run of a Collector that does
// not cache slices.
func (c *Collector) packedTargets(namespace string, targets []Target) bool {
	s := &c.scratch
	most := 0
	for i, t := range targets {
		switch slices := c.slices.EndpointSlices(source.NamespacedName{Namespace: namespace, Name: t.Service}); len(slices) {
		case 0:
		case 1:
			if !packable(slices[0]) {
				return false
			}
			s.targets[i].slice = slices[0]
			most += slices[0].Endpoints.Len() * len(slices[0].Ports)
		default:
			return false
		}
	}
	if c.cache == nil {
		s.keys = slices.Grow(s.keys[:0], most)
	}
	return true
}

// collectPacked is collect on the packed path (see packedTargets): the run
// of targets[i] is its slice's, as keys; its start is count, the keys of
// the targets before it, and collectPacked returns count with its own
// added.
//
// With a cache, the run is the cache's and is shared: dropTaken filters it
// into a copy only when an earlier target holds some of it, which is rare.
// Without, it is parsed into the scratch keys, after the runs of the
// targets before it.
func (c *Collector) collectPacked(targets []Target, i, count int) int {
	s := &c.scratch
	t, u := &targets[i], &s.targets[i]
	u.start, u.end = count, count
	if u.slice == nil {
		return count
	}
	if c.cache != nil {
		r := c.sliceRun(u.slice, t.PortName)
		s.warnings = append(s.warnings, r.warnings...)
		u.keys = r.packed
	} else {
		start := len(s.keys)
		s.keys = s.appendSliceKeys(s.keys, u.slice, t.PortName, &s.warnings, 0)
		u.keys = s.keys[start:len(s.keys):len(s.keys)]
	}
	u.end = count + len(u.keys)
	return u.end
}
