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
