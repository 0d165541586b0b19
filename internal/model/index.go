package model

import (
	"cmp"
	"slices"

	"github.com/tributary-dev/tributary/internal/source"
)

// Index answers the lookups translation makes. It holds pointers to the
// objects it was given, which must not change while they are indexed;
// replacing an object means putting a new one. Lookups are safe for
// concurrent use as long as nothing is put or deleted meanwhile.
//
// The EndpointSlices of a Service are kept in name order, so the result of a
// translation never depends on the order objects arrived in: an Index built
// up change by change gives exactly what NewIndex over the final objects gives.
type Index struct {
	services    map[source.NamespacedName]*source.Service
	slices      map[source.NamespacedName][]*source.EndpointSlice // by namespace and service-name label
	sliceByName map[source.NamespacedName]*source.EndpointSlice
	secrets     map[source.NamespacedName]*secretEntry
	delegations map[source.NamespacedName]*source.TLSCertificateDelegation
	delegByNS   map[string]*namespaceDelegations
}

// NewIndex indexes objs.
func NewIndex(objs *source.Objects) *Index {
	idx := &Index{
		services:    make(map[source.NamespacedName]*source.Service, len(objs.Services)),
		slices:      make(map[source.NamespacedName][]*source.EndpointSlice, len(objs.Services)),
		sliceByName: make(map[source.NamespacedName]*source.EndpointSlice, len(objs.EndpointSlices)),
		secrets:     make(map[source.NamespacedName]*secretEntry, len(objs.Secrets)),
		delegations: make(map[source.NamespacedName]*source.TLSCertificateDelegation),
		delegByNS:   make(map[string]*namespaceDelegations),
	}
	for i := range objs.Services {
		idx.PutService(&objs.Services[i])
	}
	for i := range objs.EndpointSlices {
		idx.PutEndpointSlice(&objs.EndpointSlices[i])
	}
	for i := range objs.Secrets {
		idx.PutSecret(&objs.Secrets[i])
	}
	for i := range objs.TLSCertificateDelegations {
		idx.PutTLSCertificateDelegation(&objs.TLSCertificateDelegations[i])
	}
	return idx
}

// PutService adds s or replaces the Service of the same name.
func (idx *Index) PutService(s *source.Service) { idx.services[s.NamespacedName()] = s }

// DeleteService forgets the named Service.
func (idx *Index) DeleteService(name source.NamespacedName) { delete(idx.services, name) }

// PutEndpointSlice adds s or replaces the EndpointSlice of the same name,
// even when the replacement names another Service or none (a slice of no
// Service is held by name only, so that replacing or deleting it works,
// and no target ever reads it).
func (idx *Index) PutEndpointSlice(s *source.EndpointSlice) {
	name := s.NamespacedName()
	idx.DeleteEndpointSlice(name)
	idx.sliceByName[name] = s
	svc, ok := s.ServiceName()
	if !ok {
		return
	}
	key := source.NamespacedName{Namespace: s.Namespace, Name: svc}
	list := idx.slices[key]
	at, _ := slices.BinarySearchFunc(list, s.Name, func(e *source.EndpointSlice, name string) int { return cmp.Compare(e.Name, name) })
	idx.slices[key] = slices.Insert(list, at, s)
}

// DeleteEndpointSlice forgets the named EndpointSlice.
func (idx *Index) DeleteEndpointSlice(name source.NamespacedName) {
	old, ok := idx.sliceByName[name]
	if !ok {
		return
	}
	delete(idx.sliceByName, name)
	svc, ok := old.ServiceName()
	if !ok {
		return
	}
	key := source.NamespacedName{Namespace: old.Namespace, Name: svc}
	list := slices.DeleteFunc(idx.slices[key], func(e *source.EndpointSlice) bool { return e == old })
	if len(list) == 0 {
		delete(idx.slices, key)
		return
	}
	idx.slices[key] = list
}

// PutSecret adds s or replaces the Secret of the same name, and with it
// what was made of the Secret it replaces.
func (idx *Index) PutSecret(s *source.Secret) {
	idx.secrets[s.NamespacedName()] = &secretEntry{secret: s}
}

// DeleteSecret forgets the named Secret.
func (idx *Index) DeleteSecret(name source.NamespacedName) { delete(idx.secrets, name) }

// PutTLSCertificateDelegation adds d or replaces the delegation of the same name.
func (idx *Index) PutTLSCertificateDelegation(d *source.TLSCertificateDelegation) {
	name := d.NamespacedName()
	idx.DeleteTLSCertificateDelegation(name)
	idx.delegations[name] = d
	list := idx.Delegations(d.Namespace)
	at, _ := slices.BinarySearchFunc(list, d.Name, func(e *source.TLSCertificateDelegation, name string) int { return cmp.Compare(e.Name, name) })
	// A new value, not the old one changed: its grants start afresh.
	idx.delegByNS[d.Namespace] = &namespaceDelegations{list: slices.Insert(list, at, d)}
}

// DeleteTLSCertificateDelegation forgets the named delegation.
func (idx *Index) DeleteTLSCertificateDelegation(name source.NamespacedName) {
	old, ok := idx.delegations[name]
	if !ok {
		return
	}
	delete(idx.delegations, name)
	list := slices.DeleteFunc(idx.Delegations(name.Namespace), func(e *source.TLSCertificateDelegation) bool { return e == old })
	if len(list) == 0 {
		delete(idx.delegByNS, name.Namespace)
		return
	}
	idx.delegByNS[name.Namespace] = &namespaceDelegations{list: list}
}

// EndpointSlice returns the named EndpointSlice, or nil.
func (idx *Index) EndpointSlice(name source.NamespacedName) *source.EndpointSlice {
	return idx.sliceByName[name]
}

// EndpointSliceCount is the number of EndpointSlices indexed.
func (idx *Index) EndpointSliceCount() int { return len(idx.sliceByName) }

// Service returns the named Service, or nil.
func (idx *Index) Service(name source.NamespacedName) *source.Service { return idx.services[name] }

// EndpointSlices returns the slices labelled for the named Service, in name
// order. The caller must not modify the returned slice.
func (idx *Index) EndpointSlices(service source.NamespacedName) []*source.EndpointSlice {
	return idx.slices[service]
}

// Secret returns the named Secret, or nil.
func (idx *Index) Secret(name source.NamespacedName) *source.Secret {
	if e := idx.secrets[name]; e != nil {
		return e.secret
	}
	return nil
}

// secretEntry returns the named Secret with what was made of it, or nil.
func (idx *Index) secretEntry(name source.NamespacedName) *secretEntry {
	return idx.secrets[name]
}

// Delegations returns the TLSCertificateDelegations in a namespace, in name
// order. The caller must not modify the returned slice.
func (idx *Index) Delegations(namespace string) []*source.TLSCertificateDelegation {
	if d := idx.delegByNS[namespace]; d != nil {
		return d.list
	}
	return nil
}

// delegationGrant returns what the delegations of the Secret's namespace
// grant it, or nil.
func (idx *Index) delegationGrant(secret source.NamespacedName) *delegationGrant {
	d := idx.delegByNS[secret.Namespace]
	if d == nil {
		return nil
	}
	return d.grant(secret.Name)
}
