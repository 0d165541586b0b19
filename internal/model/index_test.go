package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/source"
)

func slice(ns, name, svc string) *source.EndpointSlice {
	return &source.EndpointSlice{Meta: source.Meta{Namespace: ns, Name: name}, Service: svc}
}

func sliceNames(list []*source.EndpointSlice) []string {
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
	}
	return names
}

// An Index built change by change must answer exactly like one built from the
// final objects, whatever order the changes came in.
func TestIndexIncrementalMatchesFresh(t *testing.T) {
	idx := NewIndex(&source.Objects{})
	idx.PutEndpointSlice(slice("ns", "c", "svc"))
	idx.PutEndpointSlice(slice("ns", "a", "svc"))
	idx.PutEndpointSlice(slice("ns", "b", "other"))
	idx.PutEndpointSlice(slice("ns", "b", "svc")) // relabelled: moves from other to svc
	idx.PutEndpointSlice(slice("ns", "d", "svc"))
	idx.DeleteEndpointSlice(source.NamespacedName{Namespace: "ns", Name: "d"})
	idx.DeleteEndpointSlice(source.NamespacedName{Namespace: "ns", Name: "missing"})
	idx.PutTLSCertificateDelegation(&source.TLSCertificateDelegation{Meta: source.Meta{Namespace: "ns", Name: "z"}})
	idx.PutTLSCertificateDelegation(&source.TLSCertificateDelegation{Meta: source.Meta{Namespace: "ns", Name: "y"}})
	idx.DeleteTLSCertificateDelegation(source.NamespacedName{Namespace: "ns", Name: "z"})

	fresh := NewIndex(&source.Objects{
		EndpointSlices:            []source.EndpointSlice{*slice("ns", "b", "svc"), *slice("ns", "c", "svc"), *slice("ns", "a", "svc")},
		TLSCertificateDelegations: []source.TLSCertificateDelegation{{Meta: source.Meta{Namespace: "ns", Name: "y"}}},
	})
	svc := source.NamespacedName{Namespace: "ns", Name: "svc"}
	if diff := cmp.Diff(sliceNames(fresh.EndpointSlices(svc)), sliceNames(idx.EndpointSlices(svc))); diff != "" {
		t.Errorf("slices of ns/svc (-fresh +incremental):\n%s", diff)
	}
	if got := idx.EndpointSlices(source.NamespacedName{Namespace: "ns", Name: "other"}); got != nil {
		t.Errorf("relabelled slice still listed under ns/other: %v", sliceNames(got))
	}
	if got, want := len(idx.Delegations("ns")), 1; got != want || idx.Delegations("ns")[0].Name != "y" {
		t.Errorf("delegations in ns: got %d, want only y", got)
	}
}

// TestIndexSlicesOfNoService: a slice without the service-name label, or
// with an empty one, is held by name only: no Service lists it, and
// relabelling a slice to no Service takes it off its old Service's list.
func TestIndexSlicesOfNoService(t *testing.T) {
	unlabelled := &source.EndpointSlice{Meta: source.Meta{Namespace: "ns", Name: "custom"}}
	idx := NewIndex(&source.Objects{})
	idx.PutEndpointSlice(unlabelled)
	idx.PutEndpointSlice(slice("ns", "empty", ""))
	idx.PutEndpointSlice(slice("ns", "a", "svc"))
	idx.PutEndpointSlice(slice("ns", "a", "")) // no longer of svc
	for _, svc := range []string{"", "svc"} {
		if got := idx.EndpointSlices(source.NamespacedName{Namespace: "ns", Name: svc}); got != nil {
			t.Errorf("slices listed under ns/%s: %v", svc, sliceNames(got))
		}
	}
	if idx.EndpointSlice(source.NamespacedName{Namespace: "ns", Name: "custom"}) != unlabelled || idx.EndpointSliceCount() != 3 {
		t.Errorf("slices of no Service are not held by name: %d held", idx.EndpointSliceCount())
	}
	idx.DeleteEndpointSlice(source.NamespacedName{Namespace: "ns", Name: "custom"})
	if idx.EndpointSliceCount() != 2 {
		t.Errorf("%d slices held after deleting one of 3", idx.EndpointSliceCount())
	}
}

// TestNewIndexMatchesPuts: NewIndex, with its shortcuts, answers exactly as
// an Index given the same objects one Put at a time, in order, on random
// objects that repeat names (the later object replaces the earlier, even
// across Services), label slices for absent Services, or for none.
func TestNewIndexMatchesPuts(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 0))
	names := []string{"a", "b", "c", "d"}
	pick := func() string { return names[r.IntN(len(names))] }
	for round := range 500 {
		var objs source.Objects
		for range r.IntN(6) {
			objs.Services = append(objs.Services, source.Service{Meta: source.Meta{Namespace: pick(), Name: pick()}, Type: fmt.Sprint(round)})
		}
		for range r.IntN(10) {
			s := *slice(pick(), pick()+"-"+pick(), pick())
			if r.IntN(5) < 2 {
				s.Service = ""
			}
			objs.EndpointSlices = append(objs.EndpointSlices, s)
		}
		fresh := NewIndex(&objs)
		byPuts := NewIndex(&source.Objects{})
		for i := range objs.Services {
			byPuts.PutService(&objs.Services[i])
		}
		for i := range objs.EndpointSlices {
			byPuts.PutEndpointSlice(&objs.EndpointSlices[i])
		}
		if fresh.EndpointSliceCount() != byPuts.EndpointSliceCount() {
			t.Fatalf("round %d: %d slices indexed, %d by puts", round, fresh.EndpointSliceCount(), byPuts.EndpointSliceCount())
		}
		for _, ns := range names {
			for _, a := range names {
				svc := source.NamespacedName{Namespace: ns, Name: a}
				if fresh.Service(svc) != byPuts.Service(svc) {
					t.Fatalf("round %d: Service %s differs", round, svc)
				}
				es := &source.ExtensionService{Meta: source.Meta{Namespace: ns}, Spec: source.ExtensionServiceSpec{Services: []source.ExtensionServiceTarget{{Name: a}}}}
				if found := fresh.AppendTargetServices(nil, es); len(found) != 1 || found[0].Service != fresh.Service(svc) || !slices.Equal(found[0].Slices, fresh.EndpointSlices(svc)) {
					t.Fatalf("round %d: AppendTargetServices for %s is not Service and EndpointSlices", round, svc)
				}
				if want := byPuts.EndpointSlices(svc); !slices.Equal(fresh.EndpointSlices(svc), want) || (want == nil) != (fresh.EndpointSlices(svc) == nil) {
					t.Fatalf("round %d: slices of %s: %v, by puts %v", round, svc, sliceNames(fresh.EndpointSlices(svc)), sliceNames(want))
				}
				for _, b := range names {
					name := source.NamespacedName{Namespace: ns, Name: a + "-" + b}
					if fresh.EndpointSlice(name) != byPuts.EndpointSlice(name) {
						t.Fatalf("round %d: slice %s differs", round, name)
					}
				}
			}
		}
	}
}

// TestIndexServiceOutlivesItsSlices: a Service and the slices labelled for
// it are held together, and deleting either leaves the other as it was.
func TestIndexServiceOutlivesItsSlices(t *testing.T) {
	name := source.NamespacedName{Namespace: "ns", Name: "svc"}
	svc := &source.Service{Meta: source.Meta{Namespace: "ns", Name: "svc"}}
	idx := NewIndex(&source.Objects{})
	idx.PutEndpointSlice(slice("ns", "a", "svc"))
	idx.PutService(svc)
	idx.PutEndpointSlice(slice("ns", "b", "svc"))
	idx.DeleteEndpointSlice(source.NamespacedName{Namespace: "ns", Name: "a"})
	idx.DeleteEndpointSlice(source.NamespacedName{Namespace: "ns", Name: "b"})
	if got, list := idx.services[name].Service, idx.services[name].Slices; got != svc || list != nil {
		t.Fatalf("after deleting its slices: Service %v, slices %v; want the Service and no list", got, sliceNames(list))
	}
	idx.PutEndpointSlice(slice("ns", "c", "svc"))
	idx.DeleteService(name)
	if got, list := idx.services[name].Service, idx.services[name].Slices; got != nil || !slices.Equal(sliceNames(list), []string{"c"}) {
		t.Fatalf("after deleting the Service: Service %v, slices %v; want no Service and slice c", got, sliceNames(list))
	}
	idx.DeleteEndpointSlice(source.NamespacedName{Namespace: "ns", Name: "c"})
	if len(idx.services) != 0 {
		t.Fatalf("%d entries left after deleting everything", len(idx.services))
	}
}

// TestIndexSliceNamesOnConcurrentLookups: NewIndex leaves unique slices
// unnamed until a name is asked for; lookups made at once (the race
// detector watches) all see every slice.
func TestIndexSliceNamesOnConcurrentLookups(t *testing.T) {
	objs := source.Objects{EndpointSlices: []source.EndpointSlice{*slice("ns", "a", "svc"), *slice("ns", "b", ""), *slice("other", "a", "svc")}}
	idx := NewIndex(&objs)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range objs.EndpointSlices {
				if got := idx.EndpointSlice(objs.EndpointSlices[i].NamespacedName()); got != &objs.EndpointSlices[i] {
					t.Errorf("slice %s: got %v", objs.EndpointSlices[i].NamespacedName(), got)
				}
			}
			if n := idx.EndpointSliceCount(); n != 3 {
				t.Errorf("%d slices held, want 3", n)
			}
		})
	}
	wg.Wait()
}
