package model

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/workload"
)

// TestCachedSlicesFollowIndexChanges changes an Index slice by slice under a
// caching Builder and checks after every change that it answers exactly as
// a plain Builder over a fresh Index of the same objects: a replaced slice
// is parsed again, a deleted one is gone, a relabelled one moves.
func TestCachedSlicesFollowIndexChanges(t *testing.T) {
	http := objectgen.Ports(objectgen.TCPPort("http", 8080))
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
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.2"), objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("b-1", "b", "IPv4", objectgen.Ports(objectgen.TCPPort("x", 9090), objectgen.TCPPort("y", 9091)), objectgen.ReadyAt("10.0.1.1"), objectgen.ReadyAt("10.0.0.1")),
		}},
		{name: "a-1 grows", put: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.2"), objectgen.ReadyAt("10.0.0.3"), objectgen.ReadyAt("10.0.0.1")),
		}},
		{name: "a second slice for a, repeating an address", put: []source.EndpointSlice{
			objectgen.Slice("a-0", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.3"), objectgen.ReadyAt("not-an-ip"), objectgen.ReadyAt("10.0.0.9")),
		}},
		{name: "an IPv6 slice for a", put: []source.EndpointSlice{
			objectgen.Slice("a-6", "a", "IPv6", http, objectgen.ReadyAt("fd00::2"), objectgen.ReadyAt("fd00:0::1")),
		}},
		{name: "a-1 loses its readiness", put: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.WithReady(false, "10.0.0.2"), objectgen.ReadyAt("10.0.0.1")),
		}},
		{name: "a-0 moves to b", put: []source.EndpointSlice{
			objectgen.Slice("a-0", "b", "IPv4", http, objectgen.ReadyAt("10.0.0.3"), objectgen.ReadyAt("10.0.0.9")),
		}},
		{name: "a-6 and b-1 deleted", delete: []string{"a-6", "b-1"}},
		{name: "b-1 back, unchanged", put: []source.EndpointSlice{
			objectgen.Slice("b-1", "b", "IPv4", objectgen.Ports(objectgen.TCPPort("x", 9090), objectgen.TCPPort("y", 9091)), objectgen.ReadyAt("10.0.1.1"), objectgen.ReadyAt("10.0.0.1")),
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
				return objectgen.ReadyAt("10.0.0.1.5")
			case v%17 == 16:
				return objectgen.WithReady(false, fmt.Sprintf("10.0.0.%d", v%32))
			default:
				return objectgen.ReadyAt(fmt.Sprintf("10.0.0.%d", v%32))
			}
		}
		var before []source.Endpoint
		for _, v := range base {
			before = append(before, endpoint(v))
		}
		after := slices.Clone(before)
		portsAfter := objectgen.Ports(objectgen.TCPPort("http", 8080), objectgen.TCPPort("", 8081))
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
				portsAfter = objectgen.Ports(objectgen.TCPPort("http", 8080))
			case 5:
				if len(after) > 0 {
					ep := &after[at%len(after)]
					ep.NotReady = !ep.NotReady
				}
			}
		}
		services := []source.Service{testService("a", servicePort("http", 80))}
		old := objectgen.Slice("a-1", "a", "IPv4", objectgen.Ports(objectgen.TCPPort("http", 8080), objectgen.TCPPort("", 8081)), before...)
		replacement := objectgen.Slice("a-1", "a", "IPv4", portsAfter, after...)

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

// TestBuildLocalitiesScratchDoesNotLeak runs one Builder over a large then a
// small ExtensionService and checks the second result holds nothing of the
// first: the scratch is reused, never read stale.
func TestBuildLocalitiesScratchDoesNotLeak(t *testing.T) {
	var slices []source.EndpointSlice
	var big []source.Endpoint
	for i := range 300 {
		big = append(big, objectgen.ReadyAt(fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)))
	}
	http := objectgen.Ports(objectgen.TCPPort("http", 8080))
	slices = append(slices,
		objectgen.Slice("big-1", "big", "IPv4", http, big...),
		objectgen.Slice("small-1", "small", "IPv4", http, objectgen.ReadyAt("10.2.0.1")),
	)
	objs := &source.Objects{
		Services:       []source.Service{testService("big", servicePort("http", 80)), testService("small", servicePort("http", 80))},
		EndpointSlices: slices,
	}
	b := NewBuilder(NewIndex(objs), source.Settings{})
	first, _ := buildFor(t, b, []target{{"big", 80, 3}, {"small", 80, 1}})
	if len(first) != 2 || len(first[0].Endpoints) != 300 {
		t.Fatalf("first build: got %d localities", len(first))
	}
	got, cond := buildFor(t, b, []target{{"small", 80, 0}})
	want := []Locality{{SubZone: "ns/small/80", Weight: 1, Endpoints: eps("10.2.0.1", 8080)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("second build (-want +got):\n%s", diff)
	}
	if len(cond.Warnings)+len(cond.Errors) != 0 {
		t.Errorf("second build: unexpected sub-conditions %v", cond)
	}
	// Appending to a returned slice must never write into the next
	// locality's endpoints.
	if cap(got) != len(got) || cap(got[0].Endpoints) != len(got[0].Endpoints) {
		t.Errorf("returned slices have spare capacity that aliases the scratch")
	}
}

// TestBuildLocalitiesAllocations proves the scratch is reused: once warm, a
// Builder allocates only the SubZone strings.
func TestBuildLocalitiesAllocations(t *testing.T) {
	var eps4 []source.Endpoint
	for i := range 100 {
		eps4 = append(eps4, objectgen.ReadyAt(fmt.Sprintf("10.0.%d.%d", i%7, 200-i)))
	}
	http := objectgen.Ports(objectgen.TCPPort("http", 8080))
	objs := &source.Objects{
		Services: []source.Service{testService("a", servicePort("http", 80)), testService("b", servicePort("http", 80))},
		EndpointSlices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, eps4...),
			objectgen.Slice("b-1", "b", "IPv4", objectgen.Ports(objectgen.TCPPort("http", 9090)), eps4...),
		},
	}
	b := NewBuilder(NewIndex(objs), source.Settings{})
	a, bb := b.index.Service(source.NamespacedName{Namespace: testNamespace, Name: "a"}), b.index.Service(source.NamespacedName{Namespace: testNamespace, Name: "b"})
	targets := []resolvedTarget{{service: a, port: a.Ports[0], weight: 80}, {service: bb, port: bb.Ports[0], weight: 20}}
	var st Status
	b.buildLocalities(testNamespace, targets, &st) // warm up
	allocs := testing.AllocsPerRun(20, func() {
		st = Status{}
		if got := b.buildLocalities(testNamespace, targets, &st); len(got) != 2 || len(got[1].Endpoints) != 100 {
			t.Fatalf("got %d localities", len(got))
		}
	})
	if allocs > 3 {
		t.Errorf("buildLocalities allocates %v times per call once warm, want at most 3 (the SubZones and the status's availability)", allocs)
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
	atEnd.Endpoints = source.MakeEndpoints(append(base.Endpoints.Unpack(), added)...)
	inFront.Endpoints = source.MakeEndpoints(append([]source.Endpoint{added}, base.Endpoints.Unpack()...)...)
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
					if ec, _ := buildOf(builder, es, nil); ec == nil || len(ec.Localities) != 2 {
						b.Fatal("no localities")
					}
					i++
				}
			})
		}
	}
}
