package translate_test

import (
	"fmt"
	"testing"

	"github.com/tributary-dev/tributary/internal/cputime"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/workload"
)

// BenchmarkTranslate runs the whole pipeline over the standard workload
// (see workload.Standard): N ExtensionServices × 2 Services × M endpoints,
// as the server does, under its default 64 MiB bound on the output.
// Building the input is not timed.
func BenchmarkTranslate(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		for _, m := range []int{10, 100} {
			b.Run(fmt.Sprintf("N=%d/M=%d", n, m), func(b *testing.B) {
				objs := workload.Standard(n, m)
				b.ReportAllocs()
				cpu, ops := cputime.OfProcess(), 0
				for b.Loop() {
					ops++
					res, err := translate.Bounded(b.Context(), objs, source.Settings{}, translate.Limits{MaxOutputBytes: 64 << 20})
					if err != nil {
						b.Fatal(err)
					}
					if len(res.ClusterLoadAssignments) != n {
						b.Fatalf("got %d CLAs, want %d", len(res.ClusterLoadAssignments), n)
					}
				}
				b.ReportMetric(cputime.PerOp(cpu, ops), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkTranslateReference is BenchmarkTranslate with every
// ClusterLoadAssignment built as a proto and marshalled: what the fast
// encoder saves.
func BenchmarkTranslateReference(b *testing.B) {
	for _, n := range []int{1000} {
		for _, m := range []int{100} {
			b.Run(fmt.Sprintf("N=%d/M=%d", n, m), func(b *testing.B) {
				objs := workload.Standard(n, m)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					translate.TranslateReference(objs, source.Settings{})
				}
			})
		}
	}
}
