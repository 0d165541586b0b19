package model

import "github.com/tributary-dev/tributary/source"

// Index answers the lookups translation makes, over one source.Objects. It
// holds pointers into the Objects, which must not change while the Index is
// in use. An Index is read-only after NewIndex and safe for concurrent use.
type Index struct {
	services    map[source.NamespacedName]*source.Service
	slices      map[source.NamespacedName][]*source.EndpointSlice
	secrets     map[source.NamespacedName]*source.Secret
	delegations map[string][]*source.TLSCertificateDelegation
}

// NewIndex indexes objs.
func NewIndex(objs *source.Objects) *Index {
	idx := &Index{
		services:    make(map[source.NamespacedName]*source.Service, len(objs.Services)),
		slices:      make(map[source.NamespacedName][]*source.EndpointSlice, len(objs.Services)),
		secrets:     make(map[source.NamespacedName]*source.Secret, len(objs.Secrets)),
		delegations: make(map[string][]*source.TLSCertificateDelegation),
	}
	for i := range objs.Services {
		s := &objs.Services[i]
		idx.services[source.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = s
	}
	for i := range objs.EndpointSlices {
		s := &objs.EndpointSlices[i]
		svc, ok := s.Labels[source.ServiceNameLabel]
		if !ok {
			continue
		}
		key := source.NamespacedName{Namespace: s.Namespace, Name: svc}
		idx.slices[key] = append(idx.slices[key], s)
	}
	for i := range objs.Secrets {
		s := &objs.Secrets[i]
		idx.secrets[source.NamespacedName{Namespace: s.Namespace, Name: s.Name}] = s
	}
	for i := range objs.TLSCertificateDelegations {
		d := &objs.TLSCertificateDelegations[i]
		idx.delegations[d.Namespace] = append(idx.delegations[d.Namespace], d)
	}
	return idx
}

// Service returns the named Service, or nil.
func (idx *Index) Service(name source.NamespacedName) *source.Service { return idx.services[name] }

// EndpointSlices returns the slices labelled for the named Service.
func (idx *Index) EndpointSlices(service source.NamespacedName) []*source.EndpointSlice {
	return idx.slices[service]
}

// Secret returns the named Secret, or nil.
func (idx *Index) Secret(name source.NamespacedName) *source.Secret { return idx.secrets[name] }

// Delegations returns the TLSCertificateDelegations in a namespace.
func (idx *Index) Delegations(namespace string) []*source.TLSCertificateDelegation {
	return idx.delegations[namespace]
}
