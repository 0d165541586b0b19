package session_test

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/workload"
)

// Benchmark sizes: the N ExtensionServices with M endpoints per
// Service (two Services each).
const benchN, benchM = 10000, 100

// loadedSession returns a session holding workload.Standard(n, m) and the
// objects it was loaded from.
func loadedSession(tb testing.TB, n, m int) (*session.Session, *source.Objects) {
	tb.Helper()
	objs := workload.Standard(n, m)
	s := session.New(source.Settings{})
	d := mustApply(tb, s, &session.Batch{Upserts: *objs})
	if len(d.ClusterLoadAssignments) != n {
		tb.Fatalf("loading gave %d CLAs, want %d", len(d.ClusterLoadAssignments), n)
	}
	return s, objs
}

// BenchmarkApplyOneEndpoint measures the headline case: with
// N=10000 ExtensionServices and M=100 endpoints per Service loaded, one
// endpoint is added to (then, next iteration, removed from) one Service's
// EndpointSlice, at the end as the EndpointSlice controller adds them. In
// "apply" an iteration is one Apply, which ends with the changed
// ClusterLoadAssignment serialised and hashed in the Changes; in
// "apply+outbox" the Changes also goes through an Outbox, Put then Take, to
// where the server's sender marshals it onto the stream. "apply-first"
// adds the endpoint in front of the others instead, so the session can
// reuse nothing of the slice it replaces (see model.Builder's
// CacheEndpointSlices). The replacement slices are made before the timer
// starts (decoding a request is the server's cost).
func BenchmarkApplyOneEndpoint(b *testing.B) {
	s, objs := loadedSession(b, benchN, benchM)
	base := objs.EndpointSlices[0]
	added := workload.ReadyEndpoint(workload.PodAddress(1 << 23).String())
	grown, grownFirst := base, base
	grown.Endpoints = source.MakeEndpoints(append(base.Endpoints.Unpack(), added)...)
	grownFirst.Endpoints = source.MakeEndpoints(append([]source.Endpoint{added}, base.Endpoints.Unpack()...)...)
	variants := [2]source.Objects{
		{EndpointSlices: []source.EndpointSlice{grown}},
		{EndpointSlices: []source.EndpointSlice{base}},
	}
	check := func(b *testing.B, d *translate.Changes) {
		if len(d.ClusterLoadAssignments) != 1 || len(d.Clusters) != 0 || len(d.Statuses) != 0 {
			b.Fatalf("delta has %d CLAs, %d clusters, %d statuses; want just 1 CLA",
				len(d.ClusterLoadAssignments), len(d.Clusters), len(d.Statuses))
		}
	}
	i := 0
	// timed runs op, which applies variant i&1, once per iteration.
	timed := func(b *testing.B, op func() translate.Changes) {
		runtime.GC() // loading's garbage is not this benchmark's
		b.ReportAllocs()
		b.ResetTimer()
		cpu := startCPUClock()
		for b.Loop() {
			d := op()
			check(b, &d)
			i++
		}
		cpu.report(b)
	}
	b.Run("apply", func(b *testing.B) {
		timed(b, func() translate.Changes { return mustApply(b, s, &session.Batch{Upserts: variants[i&1]}) })
	})
	b.Run("apply-first", func(b *testing.B) {
		firstVariants := variants
		firstVariants[0] = source.Objects{EndpointSlices: []source.EndpointSlice{grownFirst}}
		timed(b, func() translate.Changes { return mustApply(b, s, &session.Batch{Upserts: firstVariants[i&1]}) })
	})
	b.Run("apply+outbox", func(b *testing.B) {
		// The reader starts with the CLA the loop changes.
		o := session.NewOutbox()
		o.Put(0, mustApply(b, s, &session.Batch{Upserts: variants[i&1]}))
		i++
		if _, _, ok := o.Take(); !ok {
			b.Fatal("nothing to take")
		}
		timed(b, func() translate.Changes {
			o.Put(uint64(i), mustApply(b, s, &session.Batch{Upserts: variants[i&1]}))
			_, d, ok := o.Take()
			if !ok {
				b.Fatal("nothing to take")
			}
			return d
		})
	})
}

// cpuClock measures the CPU time the process spends (every thread: the
// garbage collector's work counts), which unlike ns/op does not grow when
// other processes compete for the CPUs.
type cpuClock struct{ start time.Duration }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPUClock() cpuClock { return cpuClock{start: processCPU()} }

// report adds cpu-ns/op, the process CPU time per iteration.
func (c cpuClock) report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(processCPU()-c.start)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkSessionMemory reports the heap one Sync session holds at
// N=10000, M=100 once its first delta has been sent: a Session and an
// Outbox whose reader has taken everything. bytes/session leaves out the
// input objects (the decoded request, which the session keeps rather than
// copies: see Apply); bytes/session-with-objects counts them too.
func BenchmarkSessionMemory(b *testing.B) {
	for b.Loop() {
		runtime.GC()
		var before, withObjects, after runtime.MemStats
		runtime.ReadMemStats(&before)
		objs := workload.Standard(benchN, benchM)
		runtime.GC()
		runtime.ReadMemStats(&withObjects)

		s := session.New(source.Settings{})
		o := session.NewOutbox()
		o.Put(1, mustApply(b, s, &session.Batch{Upserts: *objs}))
		// objs is dead from here on: only the session's copies remain.
		if _, _, ok := o.Take(); !ok {
			b.Fatal("nothing to take")
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(s)
		runtime.KeepAlive(o)
		b.ReportMetric(float64(after.HeapAlloc)-float64(withObjects.HeapAlloc), "bytes/session")
		b.ReportMetric(float64(after.HeapAlloc)-float64(before.HeapAlloc), "bytes/session-with-objects")
	}
}

// BenchmarkOutboxPutTake measures one delta of one changed CLA through the
// Outbox, Put then Take, with the reader's view of a loaded session held.
func BenchmarkOutboxPutTake(b *testing.B) {
	for _, n := range []int{1, benchN} {
		b.Run(fmt.Sprintf("tracked=%d", n), func(b *testing.B) {
			o := session.NewOutbox()
			var initial translate.Changes
			for i := range n {
				name := fmt.Sprintf("extension/ns/ext-%05d", i)
				initial.ClusterLoadAssignments = append(initial.ClusterLoadAssignments, translate.Resource{Name: name, Version: "0", Body: []byte{1}})
			}
			o.Put(0, initial)
			if _, _, ok := o.Take(); !ok {
				b.Fatal("nothing to take")
			}
			changes := [2]translate.Changes{
				{ClusterLoadAssignments: []translate.Resource{{Name: "extension/ns/ext-00000", Version: "0", Body: []byte{1}}}},
				{ClusterLoadAssignments: []translate.Resource{{Name: "extension/ns/ext-00000", Version: "1", Body: []byte{2}}}},
			}
			b.ReportAllocs()
			b.ResetTimer()
			i := uint64(0)
			for b.Loop() {
				i++
				o.Put(i, changes[i&1])
				id, d, ok := o.Take()
				if !ok || id != i || len(d.ClusterLoadAssignments) != 1 {
					b.Fatalf("Take = %d, %d CLAs, %v", id, len(d.ClusterLoadAssignments), ok)
				}
			}
		})
	}
}
