package endpoints

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
