package endpoints

import (
	"encoding/binary"
	"fmt"
	mathrand "math/rand/v2"
	"slices"
	"testing"

	"github.com/tributary-dev/tributary/internal/cputime"
	"github.com/tributary-dev/tributary/internal/workload"
)

// TestSortKeys holds sortKeys to slices.Sort on every length around the
// bucket threshold and up to a large slice, over keys that vary in every
// bit, as a target's do (pods on a port or two), crowded into few values,
// all equal, or split between far-apart groups, which crowds one bucket.
func TestSortKeys(t *testing.T) {
	rng := mathrand.New(mathrand.NewPCG(1, 2))
	kinds := []struct {
		name string
		key  func(i int) uint64
	}{
		{"random", func(int) uint64 { return rng.Uint64() }},
		{"pods", func(i int) uint64 { return podKey(uint32(rng.IntN(1<<20)), uint16(9000+rng.IntN(2)), i) }},
		{"repeats", func(i int) uint64 { return podKey(uint32(rng.IntN(8)), 8080, i) }},
		{"all equal", func(int) uint64 { return 42 }},
		{"far-apart groups", func(i int) uint64 { return uint64(rng.IntN(2))<<63 | uint64(rng.IntN(1000)) }},
		{"descending", func(i int) uint64 { return ^uint64(i) }},
	}
	var buffer []uint64
	for _, kind := range kinds {
		for _, n := range []int{0, 1, 2, bucketSortMin - 1, bucketSortMin, bucketSortMin + 1, 100, 255, 256, 257, 1000, 70000} {
			keys := make([]uint64, n)
			for i := range keys {
				keys[i] = kind.key(i)
			}
			want := slices.Sorted(slices.Values(keys))
			buffer = sortKeys(keys, buffer)
			if !slices.Equal(want, keys) {
				t.Errorf("%s, %d keys: sortKeys differs from slices.Sort", kind.name, n)
			}
		}
	}
}

// podKey is the packed key of the standard workload's pod number pod on
// port, with index.
func podKey(pod uint32, port uint16, index int) uint64 {
	a := workload.PodAddress(pod).As4()
	return newKey(binary.BigEndian.Uint32(a[:]), port, uint32(index))
}

// BenchmarkSortKeys compares sortKeys with slices.Sort on the keys of one
// target of the standard workload: M of its scattered pod addresses, on
// one port.
func BenchmarkSortKeys(b *testing.B) {
	for _, m := range []int{10, 100, 300, 1000} {
		keys := make([]uint64, m)
		for i := range keys {
			keys[i] = podKey(uint32(i*7919), workload.TargetPort, i)
		}
		work := make([]uint64, m)
		var buffer []uint64
		for _, sort := range []struct {
			name string
			sort func()
		}{
			{"sortKeys", func() { buffer = sortKeys(work, buffer) }},
			{"slices.Sort", func() { slices.Sort(work) }},
		} {
			b.Run(fmt.Sprintf("M=%d/%s", m, sort.name), func(b *testing.B) {
				cpu, ops := cputime.OfProcess(), 0
				for b.Loop() {
					ops++
					copy(work, keys)
					sort.sort()
				}
				b.ReportMetric(cputime.PerOp(cpu, ops), "cpu-ns/op")
			})
		}
	}
}
