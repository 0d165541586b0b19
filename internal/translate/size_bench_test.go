package translate_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/tributary-dev/tributary/internal/cputime"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/workload"
)

// BenchmarkEstimator bounds the output of the standard workload (N=10000)
// the two ways the output bound does, in the order it does (by name): with
// Quick, all a workload that fits under its limit costs, and with
// Estimate, what a workload whose Quick bound is over the limit (N=10000,
// M=100 under 64 MiB) costs besides. Building the Index is not timed.
func BenchmarkEstimator(b *testing.B) {
	for _, m := range []int{10, 100} {
		objs := workload.Standard(10000, m)
		idx := model.NewIndex(objs)
		order := make([]*source.ExtensionService, len(objs.ExtensionServices))
		for i := range objs.ExtensionServices {
			order[i] = &objs.ExtensionServices[i]
		}
		slices.SortFunc(order, func(a, b *source.ExtensionService) int { return a.NamespacedName().Compare(b.NamespacedName()) })
		b.Run(fmt.Sprintf("Quick/M=%d", m), func(b *testing.B) {
			b.ReportAllocs()
			e := translate.NewEstimator(idx, source.Settings{})
			cpu, ops := cputime.OfProcess(), 0
			for b.Loop() {
				ops++
				var n int64
				for _, es := range order {
					n += e.Quick(es)
				}
				if n <= 0 {
					b.Fatal(n)
				}
			}
			b.ReportMetric(cputime.PerOp(cpu, ops), "cpu-ns/op")
		})
		b.Run(fmt.Sprintf("Estimate/M=%d", m), func(b *testing.B) {
			b.ReportAllocs()
			e := translate.NewEstimator(idx, source.Settings{})
			cpu, ops := cputime.OfProcess(), 0
			for b.Loop() {
				ops++
				var t translate.Tally
				for _, es := range order {
					est := e.Estimate(es)
					t.Add(es.NamespacedName(), &est)
				}
				if t.Bytes <= 0 {
					b.Fatal(t.Bytes)
				}
			}
			b.ReportMetric(cputime.PerOp(cpu, ops), "cpu-ns/op")
		})
	}
}

// BenchmarkOutputBound is BenchmarkTranslate (N=10000) up to the output
// bound under 64 MiB and no further: the Reserve that follows the bound
// cancels the translation. What it times besides the bound (sorting the
// ExtensionServices, indexing the objects) does not change with it.
func BenchmarkOutputBound(b *testing.B) {
	for _, m := range []int{10, 100} {
		b.Run(fmt.Sprintf("M=%d", m), func(b *testing.B) {
			objs := workload.Standard(10000, m)
			b.ReportAllocs()
			cpu, ops := cputime.OfProcess(), 0
			for b.Loop() {
				ops++
				ctx, cancel := context.WithCancel(b.Context())
				reserved := int64(0)
				_, err := translate.Bounded(ctx, objs, source.Settings{}, translate.Limits{MaxOutputBytes: 64 << 20, Reserve: func(bytes int64) error {
					reserved = bytes
					cancel()
					return nil
				}})
				cancel()
				if !errors.Is(err, context.Canceled) || reserved <= 0 {
					b.Fatal(err, reserved)
				}
			}
			b.ReportMetric(cputime.PerOp(cpu, ops), "cpu-ns/op")
		})
	}
}
