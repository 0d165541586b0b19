package session_test

import (
	"fmt"
	mathrand "math/rand/v2"
	"runtime"
	"testing"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
)

// TestSizeChangeAddsUp: over random sequences of batches, the SizeChanges
// of the batches applied sum to ObjectsSize of the objects held, so a
// running total kept by O(batch) steps is the session's size.
func TestSizeChangeAddsUp(t *testing.T) {
	for seed := range uint64(50) {
		g := newGenerator(objectgen.FromRand(mathrand.New(mathrand.NewPCG(seed, 7))))
		sess := session.New(g.Settings())
		objects := newStore()
		var total int64
		for i := range 40 {
			b := generatedBatch(g)
			total += sess.SizeChange(&b)
			objects.apply(&b)
			mustApply(t, sess, &b)
			if want := session.ObjectsSize(objects.objects()); total != want {
				t.Fatalf("seed %d, batch %d: SizeChanges sum to %d, ObjectsSize of the objects held is %d", seed, i, total, want)
			}
		}
	}
}

// TestSizeChange: exact changes for an upsert, a replacement, a delete and
// a delete of nothing.
func TestSizeChange(t *testing.T) {
	sess := session.New(source.Settings{})
	small := endpointSlice("ns", "s-1", "s", "10.0.0.1")
	big := endpointSlice("ns", "s-1", "s", "10.0.0.1", "10.0.0.2", "10.0.0.3")
	smallSize := session.ObjectsSize(&source.Objects{EndpointSlices: []source.EndpointSlice{small}})
	bigSize := session.ObjectsSize(&source.Objects{EndpointSlices: []source.EndpointSlice{big}})
	if bigSize <= smallSize {
		t.Fatalf("three endpoints (%d) do not outweigh one (%d)", bigSize, smallSize)
	}
	ref := session.Ref{Kind: source.KindEndpointSlice, Name: nn("ns", "s-1")}
	steps := []struct {
		name  string
		batch session.Batch
		want  int64
	}{
		{"upsert", session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{small}}}, smallSize},
		{"replace", session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{big}}}, bigSize - smallSize},
		{"replace with the same", session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{big}}}, 0},
		{"delete", session.Batch{Deletes: []session.Ref{ref}}, -bigSize},
		{"delete what is not held", session.Batch{Deletes: []session.Ref{ref}}, 0},
	}
	for _, s := range steps {
		if got := sess.SizeChange(&s.batch); got != s.want {
			t.Errorf("%s: SizeChange = %d, want %d", s.name, got, s.want)
		}
		mustApply(t, sess, &s.batch)
	}
}

// TestSizeTracksHeap: the estimate is within a factor of two of the heap a
// session really holds, for a session of many endpoints and one of many
// small objects.
func TestSizeTracksHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates tens of megabytes")
	}
	manyEndpoints := func() session.Batch {
		var b session.Batch
		b.Upserts.ExtensionServices = []source.ExtensionService{extensionService("ns", "ext", "s")}
		b.Upserts.Services = []source.Service{service("ns", "s")}
		for i := range 50 {
			addresses := make([]string, 2000)
			for j := range addresses {
				addresses[j] = fmt.Sprintf("10.%d.%d.%d", i, j/250, j%250)
			}
			b.Upserts.EndpointSlices = append(b.Upserts.EndpointSlices, endpointSlice("ns", fmt.Sprintf("s-%d", i), "s", addresses...))
		}
		return b
	}
	manyObjects := func() session.Batch {
		var b session.Batch
		for i := range 5000 {
			name := fmt.Sprintf("svc-%d", i)
			b.Upserts.ExtensionServices = append(b.Upserts.ExtensionServices, extensionService("ns", name, name))
			b.Upserts.Services = append(b.Upserts.Services, service("ns", name))
			b.Upserts.EndpointSlices = append(b.Upserts.EndpointSlices, endpointSlice("ns", name+"-1", name, fmt.Sprintf("10.0.%d.%d", i/250, i%250)))
		}
		return b
	}
	for name, makeBatch := range map[string]func() session.Batch{"many endpoints": manyEndpoints, "many objects": manyObjects} {
		t.Run(name, func(t *testing.T) {
			before := heapInUse()
			sess := session.New(source.Settings{})
			b := makeBatch()
			estimate := sess.SizeChange(&b)
			mustApply(t, sess, &b)
			b = session.Batch{} // the session holds what it needs of b
			held := heapInUse() - before
			runtime.KeepAlive(sess)
			if ratio := float64(estimate) / float64(held); ratio < 0.5 || ratio > 2 {
				t.Errorf("estimate %d bytes, heap held %d: ratio %.2f, want within 0.5..2", estimate, held, ratio)
			} else {
				t.Logf("estimate %d bytes, heap held %d: ratio %.2f", estimate, held, ratio)
			}
		})
	}
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
