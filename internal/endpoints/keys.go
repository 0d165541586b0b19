package endpoints

import "slices"

// radixSortMin is the number of keys from which sortKeys sorts by radix:
// below it, clearing the byte counts costs more than comparison sorting
// saves.
const radixSortMin = 64

// sortKeys sorts keys in place, numerically; buffer is scratch space,
// grown as needed and returned for the next call.
//
// Packed keys sort faster by radix than by comparison, because the bytes
// that vary are few: a target's keys share their port and usually the
// first byte of their address (a pod CIDR), and their index's high byte.
// A least-significant-first radix sort passes over the keys once per byte,
// and a byte every key shares needs no pass, so a hundred pods' keys take
// a counting pass and four placing passes, against some seven comparisons
// per key, each a likely branch misprediction.
func sortKeys(keys, buffer []uint64) []uint64 {
	if len(keys) < radixSortMin {
		slices.Sort(keys)
		return buffer
	}
	// The bytes in which some key differs from the first.
	varying := uint64(0)
	for _, k := range keys {
		varying |= k ^ keys[0]
	}
	buffer = slices.Grow(buffer[:0], len(keys))[:len(keys)]
	from, to := keys, buffer
	for shift := uint(0); shift < 64; shift += 8 {
		if byte(varying>>shift) == 0 {
			continue
		}
		var count [256]uint32
		for _, k := range from {
			count[byte(k>>shift)]++
		}
		// Each byte value's keys go after those of the smaller values, in
		// the order they came: a stable pass, which keeps the order of the
		// lower bytes sorted before.
		next := uint32(0)
		for v, n := range count {
			count[v] = next
			next += n
		}
		for _, k := range from {
			v := byte(k >> shift)
			to[count[v]] = k
			count[v]++
		}
		from, to = to, from
	}
	if &from[0] != &keys[0] {
		copy(keys, from)
	}
	return buffer
}

// uniqueKeys drops, in place, every key of sorted keys whose address:port
// an earlier key has: the one kept has the lowest index.
func uniqueKeys(keys []uint64) []uint64 {
	n := 0
	for i, k := range keys {
		if i > 0 && keySocket(k) == keySocket(keys[i-1]) {
			continue
		}
		keys[n] = k
		n++
	}
	return keys[:n]
}
