package model

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/source"
)

func slice(ns, name, svc string) *source.EndpointSlice {
	return &source.EndpointSlice{Meta: source.Meta{Namespace: ns, Name: name, Labels: map[string]string{source.ServiceNameLabel: svc}}}
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
