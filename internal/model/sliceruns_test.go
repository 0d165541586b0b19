package model

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/workload"
)

// TestCachedSlicesFollowIndexChanges changes an Index slice by slice under a
// caching Builder and checks after every change that it answers exactly as
// a plain Builder over a fresh Index of the same objects: a replaced slice
// is parsed again, a deleted one is gone, a relabelled one moves.
func TestCachedSlicesFollowIndexChanges(t *testing.T) {
	http := ports(tcpPort("http", 8080))
	services := []source.Service{testService("a", servicePort("http", 80)), testService("b", servicePort("", 80))}
	targets := []target{{"a", 80, 3}, {"b", 80, 1}}
	current := map[string]source.EndpointSlice{}

	idx := NewIndex(&source.Objects{Services: services})
	cached := builderKinds[1].new(idx)
	steps := []struct {
		name   string
		put    []source.EndpointSlice
		delete []string
	}{
		{name: "first slices", put: []source.EndpointSlice{
			testSlice("a-1", "a", "IPv4", http, readyAt("10.0.0.2"), readyAt("10.0.0.1")),
			testSlice("b-1", "b", "IPv4", ports(tcpPort("x", 9090), tcpPort("y", 9091)), readyAt("10.0.1.1"), readyAt("10.0.0.1")),
		}},
		{name: "a-1 grows", put: []source.EndpointSlice{
			testSlice("a-1", "a", "IPv4", http, readyAt("10.0.0.2"), readyAt("10.0.0.3"), readyAt("10.0.0.1")),
		}},
		{name: "a second slice for a, repeating an address", put: []source.EndpointSlice{
			testSlice("a-0", "a", "IPv4", http, readyAt("10.0.0.3"), readyAt("not-an-ip"), readyAt("10.0.0.9")),
		}},
		{name: "an IPv6 slice for a", put: []source.EndpointSlice{
			testSlice("a-6", "a", "IPv6", http, readyAt("fd00::2"), readyAt("fd00:0::1")),
		}},
		{name: "a-1 loses its readiness", put: []source.EndpointSlice{
			testSlice("a-1", "a", "IPv4", http, withReady(false, "10.0.0.2"), readyAt("10.0.0.1")),
		}},
		{name: "a-0 moves to b", put: []source.EndpointSlice{
			testSlice("a-0", "b", "IPv4", http, readyAt("10.0.0.3"), readyAt("10.0.0.9")),
		}},
		{name: "a-6 and b-1 deleted", delete: []string{"a-6", "b-1"}},
		{name: "b-1 back, unchanged", put: []source.EndpointSlice{
			testSlice("b-1", "b", "IPv4", ports(tcpPort("x", 9090), tcpPort("y", 9091)), readyAt("10.0.1.1"), readyAt("10.0.0.1")),
		}},
	}
	for _, step := range steps {
		for _, es := range step.put {
			current[es.Name] = es
			idx.PutEndpointSlice(&es)
		}
		for _, name := range step.delete {
			delete(current, name)
			idx.DeleteEndpointSlice(source.NamespacedName{Namespace: testNamespace, Name: name})
		}
		// Twice: once filling the cache, once reading it.
		for range 2 {
			fresh := builderKinds[0].new(NewIndex(&source.Objects{
				Services:       services,
				EndpointSlices: slices.Collect(maps.Values(current)),
			}))
			want, wantCond := buildFor(t, fresh, targets)
			got, gotCond := buildFor(t, cached, targets)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: localities (-fresh +cached):\n%s", step.name, diff)
			}
			if diff := cmp.Diff(wantCond, gotCond); diff != "" {
				t.Errorf("%s: condition (-fresh +cached):\n%s", step.name, diff)
			}
		}
	}
}

// TestCachedSlicesAreSwept churns slices through an Index and checks that
// a caching Builder keeps entries for the live slices and a bounded number
// of dead ones, whatever the number of slices that ever existed.
func TestCachedSlicesAreSwept(t *testing.T) {
	http := ports(tcpPort("http", 8080))
	idx := NewIndex(&source.Objects{Services: []source.Service{testService("a", servicePort("http", 80))}})
	b := builderKinds[1].new(idx)
	const live = 10
	most := 0
	for i := range 2000 {
		es := testSlice(fmt.Sprintf("a-%d", i), "a", "IPv4", http, readyAt(fmt.Sprintf("10.0.%d.%d", i/200, i%200+1)))
		idx.PutEndpointSlice(&es)
		if i >= live {
			idx.DeleteEndpointSlice(source.NamespacedName{Namespace: testNamespace, Name: fmt.Sprintf("a-%d", i-live)})
		}
		locs, _ := buildFor(t, b, []target{{"a", 80, 0}})
		if n := len(locs[0].Endpoints); n != min(i+1, live) {
			t.Fatalf("after slice %d: %d endpoints, want %d", i, n, min(i+1, live))
		}
		most = max(most, len(b.sliceRuns.entries))
	}
	if bound := 2*live + sweepSlack + 1; most > bound {
		t.Errorf("the cache held up to %d entries for %d live slices, want at most %d", most, live, bound)
	}
}

// TestCachedSlicesOfDeletedSlicesGo: after most of a Service's slices are
// deleted, rebuilding with the rest, replaced again and again, drops the
// deleted ones; and SweepEndpointSlices drops at once the old versions of
// slices replaced while the Builder was not looking.
func TestCachedSlicesOfDeletedSlicesGo(t *testing.T) {
	http := ports(tcpPort("http", 8080))
	idx := NewIndex(&source.Objects{Services: []source.Service{testService("a", servicePort("http", 80))}})
	b := builderKinds[1].new(idx)
	slice := func(i, generation int) *source.EndpointSlice {
		es := testSlice(fmt.Sprintf("a-%d", i), "a", "IPv4", http, readyAt(fmt.Sprintf("10.0.%d.%d", i/200, i%200+1)))
		es.Generation = int64(generation)
		return &es
	}
	for i := range 200 {
		idx.PutEndpointSlice(slice(i, 0))
	}
	buildFor(t, b, []target{{"a", 80, 0}})
	for i := 10; i < 200; i++ {
		idx.DeleteEndpointSlice(source.NamespacedName{Namespace: testNamespace, Name: fmt.Sprintf("a-%d", i)})
	}
	for generation := 1; generation <= 20; generation++ {
		for i := range 10 {
			idx.PutEndpointSlice(slice(i, generation))
		}
		buildFor(t, b, []target{{"a", 80, 0}})
	}
	if dead := deadEntries(b); dead != 0 {
		t.Errorf("%d entries of deleted or replaced slices are kept, want none", dead)
	}

	// Replaced behind the Builder's back, as a session's large batch does.
	for i := range 10 {
		idx.PutEndpointSlice(slice(i, 100))
	}
	if dead := deadEntries(b); dead != 10 {
		t.Fatalf("%d entries of replaced slices before the sweep, want 10", dead)
	}
	b.SweepEndpointSlices()
	if n, dead := len(b.sliceRuns.entries), deadEntries(b); n != 0 || dead != 0 {
		t.Errorf("after the sweep: %d entries, %d of them dead; want none", n, dead)
	}
}

// deadEntries counts b's cache entries for slices its Index no longer holds
// as they are.
func deadEntries(b *Builder) int {
	dead := 0
	for name, entry := range b.sliceRuns.entries {
		if b.index.EndpointSlice(name) != entry.slice {
			dead++
		}
	}
	return dead
}

// FuzzCachedSliceReplacement replaces one EndpointSlice by another made
// from the same fuzz bytes with edits (endpoints appended, inserted,
// removed, changed or with their readiness flipped, now and then a shorter
// port list) and checks that a caching Builder, which reuses what the two
// slices share, answers exactly as a plain Builder over the new slice alone.
func FuzzCachedSliceReplacement(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6}, []byte{0, 7, 8})
	f.Add([]byte{9, 9, 9, 9}, []byte{1, 2, 0})
	f.Add([]byte{1, 2, 3, 4}, []byte{2, 1, 3, 0, 4, 9})
	f.Add([]byte{200, 1, 2}, []byte{3, 0, 5, 5})
	f.Add([]byte{1, 2}, []byte{4, 0})
	f.Add([]byte{1, 2, 3}, []byte{5, 1})
	f.Fuzz(func(t *testing.T, base, edits []byte) {
		if len(base) > 300 || len(edits) > 300 {
			return
		}
		// An endpoint from one byte: few distinct addresses, so repeats
		// happen; now and then unready, or not an address at all.
		endpoint := func(v byte) source.Endpoint {
			switch {
			case v >= 250:
				return readyAt("10.0.0.1.5")
			case v%17 == 16:
				return withReady(false, fmt.Sprintf("10.0.0.%d", v%32))
			default:
				return readyAt(fmt.Sprintf("10.0.0.%d", v%32))
			}
		}
		var before []source.Endpoint
		for _, v := range base {
			before = append(before, endpoint(v))
		}
		after := slices.Clone(before)
		portsAfter := ports(tcpPort("http", 8080), tcpPort("", 8081))
		for i := 0; i+1 < len(edits); i += 2 {
			at := int(edits[i+1])
			switch edits[i] % 6 {
			case 0:
				after = append(after, endpoint(edits[i+1]))
			case 1:
				if len(after) > 0 {
					at %= len(after)
					after = slices.Delete(after, at, at+1)
				}
			case 2:
				if len(after) > 0 {
					after[at%len(after)] = endpoint(edits[i+1] + 1)
				}
			case 3:
				after = slices.Insert(after, at%(len(after)+1), endpoint(edits[i+1]))
			case 4:
				portsAfter = ports(tcpPort("http", 8080))
			case 5:
				if len(after) > 0 {
					ep := &after[at%len(after)]
					ep.Ready = ptr(ep.Ready != nil && !*ep.Ready)
				}
			}
		}
		services := []source.Service{testService("a", servicePort("http", 80))}
		old := testSlice("a-1", "a", "IPv4", ports(tcpPort("http", 8080), tcpPort("", 8081)), before...)
		replacement := testSlice("a-1", "a", "IPv4", portsAfter, after...)

		idx := NewIndex(&source.Objects{Services: services, EndpointSlices: []source.EndpointSlice{old}})
		cached := builderKinds[1].new(idx)
		buildFor(t, cached, []target{{"a", 80, 0}})
		idx.PutEndpointSlice(&replacement)
		got, gotCond := buildFor(t, cached, []target{{"a", 80, 0}})

		fresh := builderKinds[0].new(NewIndex(&source.Objects{Services: services, EndpointSlices: []source.EndpointSlice{replacement}}))
		want, wantCond := buildFor(t, fresh, []target{{"a", 80, 0}})
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("localities (-fresh +cached):\n%s", diff)
		}
		if diff := cmp.Diff(wantCond, gotCond); diff != "" {
			t.Errorf("condition (-fresh +cached):\n%s", diff)
		}
	})
}

// BenchmarkSliceCacheMemory reports what CacheEndpointSlices holds once
// every EndpointSlice of the standard workload (N=10000 ExtensionServices,
// two Services of M=100 endpoints each) has been parsed: the state a Sync
// session's Builder reaches when every slice has changed once.
func BenchmarkSliceCacheMemory(b *testing.B) {
	const n, m = 10000, 100
	objs := workload.Standard(n, m)
	idx := NewIndex(objs)
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		builder := builderKinds[1].new(idx)
		for i := range objs.ExtensionServices {
			builder.Build(&objs.ExtensionServices[i])
		}
		builder.scratch = endpointScratch{}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(builder)
		endpoints := float64(2 * n * m)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc), "bytes")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/endpoints, "bytes/endpoint")
	}
}

// BenchmarkBuildAfterSliceChange is the model's part of a Sync session's
// one-endpoint change (session.BenchmarkApplyOneEndpoint) on a small heap:
// one Service's EndpointSlice of the standard workload is replaced by one
// with an endpoint more (at the end, or in front), then back, and the
// ExtensionService built again by a caching Builder ("cached") or a plain
// one ("plain").
func BenchmarkBuildAfterSliceChange(b *testing.B) {
	objs := workload.Standard(100, 100)
	es := &objs.ExtensionServices[0]
	base := objs.EndpointSlices[0]
	added := workload.ReadyEndpoint(workload.PodAddress(1 << 23).String())
	atEnd, inFront := base, base
	atEnd.Endpoints = append(slices.Clip(base.Endpoints), added)
	inFront.Endpoints = append([]source.Endpoint{added}, base.Endpoints...)
	for _, grown := range []struct {
		name  string
		slice source.EndpointSlice
	}{{"end", atEnd}, {"front", inFront}} {
		for _, kind := range builderKinds {
			b.Run(grown.name+"/"+kind.name, func(b *testing.B) {
				idx := NewIndex(objs)
				builder := kind.new(idx)
				variants := [2]source.EndpointSlice{grown.slice, base}
				i := 0
				for b.Loop() {
					// A new pointer each time, as a session puts them.
					slice := variants[i&1]
					idx.PutEndpointSlice(&slice)
					if ec, _ := builder.Build(es); ec == nil || len(ec.Localities) != 2 {
						b.Fatal("no localities")
					}
					i++
				}
			})
		}
	}
}
