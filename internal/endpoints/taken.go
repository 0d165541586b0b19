package endpoints

import (
	"cmp"
	"net/netip"
	"slices"
)

// mergeScratch is the memory dropTaken reuses.
type mergeScratch struct {
	// heap holds the targets whose runs are not used up, ordered by the
	// address:port at their cursor, then by target.
	heap []int
	// at is each target's cursor in its run.
	at []int
	// cursors is the heap of findTakenKeys.
	cursors []keyCursor
	// taken lists, in address:port order, the entries of a run that an
	// earlier target's run holds too.
	taken []runEntry
}

// runEntry is entry index of the run of target run.
type runEntry struct{ run, index int }

// dropTaken takes out of each target's run the address:ports an earlier
// target holds, since an address:port in two localities makes proxyless
// gRPC clients reject the whole assignment: the earliest target keeps it.
// Each target that loses some gets one warning after its own, counting
// them and naming the lowest. It returns the count of what the runs keep.
//
// The runs are sorted and without repeats, so one merge of all of them
// (a heap of k runs: O(n log k) for n address:ports) meets every
// address:port held twice as neighbours, the earliest target's first.
// Comparing each target's run with every earlier one instead would be
// quadratic in the targets: 40,000 targets took a minute.
func (s *scratch) dropTaken(namespace string, targets []Target, packed bool, count int) int {
	if packed {
		s.findTakenKeys()
	} else {
		s.findTakenCandidates()
	}
	taken := s.merge.taken
	if len(taken) == 0 {
		return count
	}

	// The warnings are counted before the runs lose their entries; taken
	// is in address:port order, so a run's first entry there is its lowest.
	type loss struct {
		count int
		first netip.AddrPort
	}
	losses := make([]loss, len(targets))
	for _, e := range taken {
		l := &losses[e.run]
		if l.count == 0 {
			l.first = s.socketAt(packed, e)
		}
		l.count++
	}
	warnings := make([]Warning, 0, len(s.warnings)+len(targets))
	from := 0
	for i := range targets {
		warnings = append(warnings, s.warnings[from:s.warningsEnd[i]]...)
		from = s.warningsEnd[i]
		if l := losses[i]; l.count > 0 {
			warnings = append(warnings, duplicateEndpointsWarning(namespace, &targets[i], l.count, l.first))
		}
	}
	s.warnings = warnings

	slices.SortFunc(taken, func(a, b runEntry) int { return cmp.Or(cmp.Compare(a.run, b.run), cmp.Compare(a.index, b.index)) })
	if packed {
		return s.dropTakenKeys(taken)
	}
	return s.dropTakenCandidates(taken)
}

// findTakenCandidates fills s.merge.taken from the runs of candidates.
func (s *scratch) findTakenCandidates() {
	// compare compares the address:port at index i of target r's run with
	// the one at index j of target q's.
	compare := func(r, i, q, j int) int {
		return compareSockets(s.candidates[s.targets[r].start+i], s.candidates[s.targets[q].start+j])
	}
	m := &s.merge
	m.taken = m.taken[:0]
	m.heap = m.heap[:0]
	m.at = slices.Grow(m.at[:0], len(s.targets))[:len(s.targets)]
	for r := range s.targets {
		m.at[r] = 0
		if s.targets[r].end > s.targets[r].start {
			m.heap = append(m.heap, r)
		}
	}
	if len(m.heap) < 2 {
		return
	}
	less := func(a, b int) bool {
		c := compare(a, m.at[a], b, m.at[b])
		return c < 0 || c == 0 && a < b
	}
	for i := len(m.heap)/2 - 1; i >= 0; i-- {
		siftDown(m.heap, i, less)
	}
	last, lastAt := -1, 0
	for len(m.heap) > 1 {
		r := m.heap[0]
		if last >= 0 && compare(r, m.at[r], last, lastAt) == 0 {
			m.taken = append(m.taken, runEntry{run: r, index: m.at[r]})
		} else {
			last, lastAt = r, m.at[r]
		}
		m.at[r]++
		if m.at[r] == s.targets[r].end-s.targets[r].start {
			n := len(m.heap) - 1
			m.heap[0] = m.heap[n]
			m.heap = m.heap[:n]
		}
		siftDown(m.heap, 0, less)
	}
	// One run is left: only its entries up to the last address:port met
	// can equal one, and its entries are in order.
	if r := m.heap[0]; last >= 0 && compare(r, m.at[r], last, lastAt) == 0 {
		m.taken = append(m.taken, runEntry{run: r, index: m.at[r]})
	}
}

// findTakenKeys is findTakenCandidates for the packed runs, with the merge's cursors
// in the heap: comparing two is comparing two integers, with no call and
// no lookup in the runs. Most calls have two targets, and for them this
// is a plain merge of two sorted lists.
func (s *scratch) findTakenKeys() {
	m := &s.merge
	m.taken = m.taken[:0]
	h := m.cursors[:0]
	for r := range s.targets {
		if keys := s.targets[r].keys; len(keys) > 0 {
			h = append(h, keyCursor{socket: keySocket(keys[0]), run: r})
		}
	}
	m.cursors = h
	switch len(h) {
	case 0, 1:
		return
	case 2: // h lists the runs in target order: h[1]'s is the later
		m.taken = appendTakenOfTwo(m.taken, h[1].run, s.targets[h[0].run].keys, s.targets[h[1].run].keys)
		return
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDownCursor(h, i)
	}
	last, met := uint64(0), false
	for len(h) > 1 {
		c := &h[0]
		if met && c.socket == last {
			m.taken = append(m.taken, runEntry{run: c.run, index: c.at})
		} else {
			last, met = c.socket, true
		}
		c.at++
		if keys := s.targets[c.run].keys; c.at < len(keys) {
			c.socket = keySocket(keys[c.at])
		} else {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		siftDownCursor(h, 0)
	}
	// One run is left: as in findTakenCandidates, only its cursor's entry can equal
	// the last address:port met.
	if c := h[0]; c.socket == last {
		m.taken = append(m.taken, runEntry{run: c.run, index: c.at})
	}
}

// appendTakenOfTwo is findTakenKeys for two runs, a and b, sorted and
// without repeats, where b is the run of target second, a later target
// than a's: the entries of b that a holds, appended to taken in
// address:port order. It is the common case, a plain merge whose two
// cursors step without a branch on which is lower: that branch goes one
// way or the other at random on scattered pod addresses, and would be
// mispredicted half the time.
func appendTakenOfTwo(taken []runEntry, second int, a, b []uint64) []runEntry {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		x, y := keySocket(a[i]), keySocket(b[j])
		if x == y {
			taken = append(taken, runEntry{run: second, index: j})
		}
		// A socket has 48 bits, so y-x wraps to set the top bit exactly
		// when x > y: i steps when x <= y, j when y <= x.
		i += int(1 - (y-x)>>63)
		j += int(1 - (x-y)>>63)
	}
	return taken
}

// keyCursor is a packed run's place in the merge: the run, the index
// reached in it, and the address:port there.
type keyCursor struct {
	socket uint64
	run    int
	at     int
}

// before orders cursors by address:port, then by target, so that of the
// runs holding one address:port the earliest target's comes first.
func (a *keyCursor) before(b *keyCursor) bool {
	return a.socket < b.socket || a.socket == b.socket && a.run < b.run
}

// siftDownCursor restores the heap order below h[i].
func siftDownCursor(h []keyCursor, i int) {
	for {
		child := 2*i + 1
		if child >= len(h) {
			return
		}
		if right := child + 1; right < len(h) && h[right].before(&h[child]) {
			child = right
		}
		if !h[child].before(&h[i]) {
			return
		}
		h[i], h[child] = h[child], h[i]
		i = child
	}
}

// siftDown restores the heap order below heap[i].
func siftDown(heap []int, i int, less func(a, b int) bool) {
	for {
		child := 2*i + 1
		if child >= len(heap) {
			return
		}
		if right := child + 1; right < len(heap) && less(heap[right], heap[child]) {
			child = right
		}
		if !less(heap[child], heap[i]) {
			return
		}
		heap[i], heap[child] = heap[child], heap[i]
		i = child
	}
}

// socketAt is the address:port of e.
func (s *scratch) socketAt(packed bool, e runEntry) netip.AddrPort {
	t := &s.targets[e.run]
	if packed {
		return unpackKey(t.keys[e.index], 0).addrPort()
	}
	return s.candidates[t.start+e.index].addrPort()
}

// dropTakenKeys takes the sorted entries of taken out of the packed runs,
// each affected run into a copy (the cache owns the original), and sets
// every run's start and end anew.
func (s *scratch) dropTakenKeys(taken []runEntry) int {
	count := 0
	for r := range s.targets {
		t := &s.targets[r]
		if len(taken) > 0 && taken[0].run == r {
			kept := make([]uint64, 0, len(t.keys))
			for i, k := range t.keys {
				if len(taken) > 0 && taken[0].run == r && taken[0].index == i {
					taken = taken[1:]
					continue
				}
				kept = append(kept, k)
			}
			t.keys = kept
		}
		t.start, t.end = count, count+len(t.keys)
		count = t.end
	}
	return count
}

// dropTakenCandidates takes the sorted entries of taken out of the runs in
// the scratch candidates, moving the runs down over the gaps.
func (s *scratch) dropTakenCandidates(taken []runEntry) int {
	w := 0
	for r := range s.targets {
		t := &s.targets[r]
		start := w
		for i := range t.end - t.start {
			if len(taken) > 0 && taken[0].run == r && taken[0].index == i {
				taken = taken[1:]
				continue
			}
			s.candidates[w] = s.candidates[t.start+i]
			w++
		}
		t.start, t.end = start, w
	}
	s.candidates = s.candidates[:w]
	return w
}
