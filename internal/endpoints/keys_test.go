package endpoints

import (
	"fmt"
	mathrand "math/rand/v2"
	"slices"
	"testing"

	"github.com/tributary-dev/tributary/internal/workload"
)

// TestSortKeys holds sortKeys to slices.Sort on every length around the
// radix threshold and up to a large slice, over keys that vary in every
// byte, in few bytes (as a target's do), in none, and with repeats.
func TestSortKeys(t *testing.T) {
	rng := mathrand.New(mathrand.NewPCG(1, 2))
	kinds := map[string]func(i int) uint64{
		"random":   func(int) uint64 { return rng.Uint64() },
		"pods":     func(i int) uint64 { return podKey(uint32(rng.IntN(1<<20)), 9000, i) },
		"repeats":  func(i int) uint64 { return podKey(uint32(rng.IntN(8)), uint16(8080+rng.IntN(2)), i) },
		"all same": func(int) uint64 { return 42 },
		"reversed": func(i int) uint64 { return ^uint64(i) },
	}
	var buffer []uint64
	for name, key := range kinds {
		for _, n := range []int{0, 1, 2, radixSortMin - 1, radixSortMin, radixSortMin + 1, 100, 257, 1000, 70000} {
			keys := make([]uint64, n)
			for i := range keys {
				keys[i] = key(i)
			}
			want := slices.Sorted(slices.Values(keys))
			buffer = sortKeys(keys, buffer)
			if !slices.Equal(want, keys) {
				t.Errorf("%s, %d keys: sortKeys differs from slices.Sort", name, n)
			}
		}
	}
}

// podKey packs the workload's pod address of pod, port and index.
func podKey(pod uint32, port uint16, index int) uint64 {
	return packKey(newCandidate4(uint32(workload.PodAddress(pod).As4()[0])<<24|
		uint32(workload.PodAddress(pod).As4()[1])<<16|
		uint32(workload.PodAddress(pod).As4()[2])<<8|
		uint32(workload.PodAddress(pod).As4()[3]), port, 0), uint32(index))
}

// BenchmarkSortKeys compares sortKeys with slices.Sort on the keys of one
// target of the standard workload, M pods on one port.
func BenchmarkSortKeys(b *testing.B) {
	for _, m := range []int{10, 30, 64, 100, 300, 1000} {
		keys := make([]uint64, m)
		for i := range keys {
			keys[i] = podKey(uint32(i*7919), 9000, i)
		}
		work := make([]uint64, m)
		var buffer []uint64
		b.Run(fmt.Sprintf("M=%d/sortKeys", m), func(b *testing.B) {
			for b.Loop() {
				copy(work, keys)
				buffer = sortKeys(work, buffer)
			}
		})
		b.Run(fmt.Sprintf("M=%d/slices.Sort", m), func(b *testing.B) {
			for b.Loop() {
				copy(work, keys)
				slices.Sort(work)
			}
		})
	}
}
