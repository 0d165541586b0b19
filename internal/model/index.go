package model

import (
	"cmp"
	"hash/maphash"
	"slices"
	"sync"

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
	// services holds each Service with the EndpointSlices labelled for it,
	// so that resolving a target and collecting its endpoints cost one
	// lookup (at 100,000s of targets the lookups, each a cache miss or
	// more, are a fair part of a translation). An entry lives as long as
	// its Service or any of its slices.
	services map[source.NamespacedName]TargetService
	// sliceByName holds every EndpointSlice by name; read it through
	// slicesByName. A translation made once never asks for a slice by
	// name, so NewIndex, given slices whose names it found unique, leaves
	// them in unnamed for the first call that does to put in the map: at
	// 20,000 slices the map is 1.3 MB and 7% of what a translation
	// allocates.
	sliceByName map[source.NamespacedName]*source.EndpointSlice
	unnamed     []source.EndpointSlice
	nameOnce    sync.Once
	secrets     map[source.NamespacedName]*secretEntry
	delegations map[source.NamespacedName]*source.TLSCertificateDelegation
	delegByNS   map[string]*namespaceDelegations
}

// TargetService is what the Index holds under a Service's name, and what
// an ExtensionService's target of that name resolves to: the Service, nil
// until it is put, and the EndpointSlices labelled for it, in name order,
// nil when there are none.
type TargetService struct {
	Service *source.Service
	Slices  []*source.EndpointSlice
}

// NewIndex indexes objs. It gives exactly what putting every object one by
// one would give, more cheaply: the maps are sized once, a slice is not
// looked up before it is put (names are unique per kind, which it checks
// once for all), and the lists of the Services that have one slice, nearly
// all of them, share one allocation.
func NewIndex(objs *source.Objects) *Index {
	idx := &Index{
		services:    make(map[source.NamespacedName]TargetService, len(objs.Services)),
		secrets:     make(map[source.NamespacedName]*secretEntry, len(objs.Secrets)),
		delegations: make(map[source.NamespacedName]*source.TLSCertificateDelegation),
		delegByNS:   make(map[string]*namespaceDelegations),
	}
	// No entry has slices yet, so a Service replaces any entry of its name
	// whole (a later Service of the same name replaces an earlier one, as
	// PutService does).
	for i := range objs.Services {
		s := &objs.Services[i]
		idx.services[s.NamespacedName()] = TargetService{Service: s}
	}
	idx.indexEndpointSlices(objs.EndpointSlices)
	for i := range objs.Secrets {
		idx.PutSecret(&objs.Secrets[i])
	}
	for i := range objs.TLSCertificateDelegations {
		idx.PutTLSCertificateDelegation(&objs.TLSCertificateDelegations[i])
	}
	return idx
}

// indexEndpointSlices puts every one of list into an Index that holds no
// EndpointSlice yet, as PutEndpointSlice would in order: of slices sharing a
// name, the last one stays.
func (idx *Index) indexEndpointSlices(list []source.EndpointSlice) {
	// With no name repeated, every slice stays and none needs looking up:
	// the slices are left unnamed until a name is asked for. A repeat is
	// ruled out by the names' hashes, a set an eighth of the map's size.
	repeated := hashesRepeat(list)
	if repeated {
		idx.sliceByName = make(map[source.NamespacedName]*source.EndpointSlice, len(list))
		for i := range list {
			idx.sliceByName[list[i].NamespacedName()] = &list[i]
		}
	} else {
		idx.unnamed = list
	}
	// A Service's first slice gets a one-element list out of this one
	// allocation; its capacity ends there, so a second slice makes the list
	// a copy of its own (PutEndpointSlice never writes past a list's end).
	firsts := make([]*source.EndpointSlice, len(list))
	for i := range list {
		s := &list[i]
		if repeated && idx.sliceByName[s.NamespacedName()] != s {
			continue // a later slice of the same name replaced it
		}
		if s.Service == "" {
			continue
		}
		key := source.NamespacedName{Namespace: s.Namespace, Name: s.Service}
		e := idx.services[key]
		if e.Slices == nil {
			firsts[i] = s
			e.Slices = firsts[i : i+1 : i+1]
		} else {
			e.Slices = insertSliceByName(e.Slices, s)
		}
		idx.services[key] = e
	}
}

// hashesRepeat reports whether two of list's names hash alike, as every
// repeated name does (and, once in very many lists, two different ones).
func hashesRepeat(list []source.EndpointSlice) bool {
	seed := maphash.MakeSeed()
	seen := make(map[uint64]struct{}, len(list))
	for i := range list {
		h := maphash.Comparable(seed, list[i].NamespacedName())
		if _, dup := seen[h]; dup {
			return true
		}
		seen[h] = struct{}{}
	}
	return false
}

// slicesByName returns the map of every EndpointSlice by name, putting the
// slices NewIndex left unnamed into it on first use. It is safe to call
// from lookups made at once.
func (idx *Index) slicesByName() map[source.NamespacedName]*source.EndpointSlice {
	idx.nameOnce.Do(func() {
		if idx.sliceByName != nil {
			return
		}
		idx.sliceByName = make(map[source.NamespacedName]*source.EndpointSlice, len(idx.unnamed))
		for i := range idx.unnamed {
			idx.sliceByName[idx.unnamed[i].NamespacedName()] = &idx.unnamed[i]
		}
		idx.unnamed = nil
	})
	return idx.sliceByName
}

// insertSliceByName inserts s into list, which is in name order and holds
// no slice of s's name, keeping the order.
func insertSliceByName(list []*source.EndpointSlice, s *source.EndpointSlice) []*source.EndpointSlice {
	at, _ := slices.BinarySearchFunc(list, s.Name, func(e *source.EndpointSlice, name string) int { return cmp.Compare(e.Name, name) })
	return slices.Insert(list, at, s)
}

// PutService adds s or replaces the Service of the same name.
func (idx *Index) PutService(s *source.Service) {
	name := s.NamespacedName()
	e := idx.services[name]
	e.Service = s
	idx.services[name] = e
}

// DeleteService forgets the named Service.
func (idx *Index) DeleteService(name source.NamespacedName) {
	e, ok := idx.services[name]
	if !ok {
		return
	}
	if e.Slices == nil {
		delete(idx.services, name)
		return
	}
	e.Service = nil
	idx.services[name] = e
}

// PutEndpointSlice adds s or replaces the EndpointSlice of the same name,
// even when the replacement names another Service or none (a slice of no
// Service is held by name only, so that replacing or deleting it works,
// and no target ever reads it).
func (idx *Index) PutEndpointSlice(s *source.EndpointSlice) {
	name := s.NamespacedName()
	idx.DeleteEndpointSlice(name)
	idx.slicesByName()[name] = s
	if s.Service == "" {
		return
	}
	key := source.NamespacedName{Namespace: s.Namespace, Name: s.Service}
	e := idx.services[key]
	e.Slices = insertSliceByName(e.Slices, s)
	idx.services[key] = e
}

// DeleteEndpointSlice forgets the named EndpointSlice.
func (idx *Index) DeleteEndpointSlice(name source.NamespacedName) {
	old, ok := idx.slicesByName()[name]
	if !ok {
		return
	}
	delete(idx.sliceByName, name)
	if old.Service == "" {
		return
	}
	key := source.NamespacedName{Namespace: old.Namespace, Name: old.Service}
	e := idx.services[key]
	e.Slices = slices.DeleteFunc(e.Slices, func(s *source.EndpointSlice) bool { return s == old })
	switch {
	case len(e.Slices) > 0:
		idx.services[key] = e
	case e.Service != nil:
		e.Slices = nil // a Service without slices lists none, not an empty list
		idx.services[key] = e
	default:
		delete(idx.services, key)
	}
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
	return idx.slicesByName()[name]
}

// EndpointSliceCount is the number of EndpointSlices indexed.
func (idx *Index) EndpointSliceCount() int { return len(idx.slicesByName()) }

// Service returns the named Service, or nil.
func (idx *Index) Service(name source.NamespacedName) *source.Service {
	return idx.services[name].Service
}

// EndpointSlices returns the slices labelled for the named Service, in name
// order. The caller must not modify the returned slice.
func (idx *Index) EndpointSlices(service source.NamespacedName) []*source.EndpointSlice {
	return idx.services[service].Slices
}

// AppendTargetServices appends to dst what each of es's spec targets
// names, in spec order. A caller that both bounds and builds es passes
// them to Builder.Build, so that each target is looked up once: at
// hundreds of thousands of targets the lookups, each keyed by two strings
// and a cache miss or more, are a fair part of a translation.
func (idx *Index) AppendTargetServices(dst []TargetService, es *source.ExtensionService) []TargetService {
	for _, t := range es.Spec.Services {
		dst = append(dst, idx.services[source.NamespacedName{Namespace: es.Namespace, Name: t.Name}])
	}
	return dst
}

// LookUpTargetServices is AppendTargetServices into *scratch, which it
// clears first (cleared, not just truncated: a Service left from a larger
// lookup would stay alive there), and returns what it found.
func (idx *Index) LookUpTargetServices(scratch *[]TargetService, es *source.ExtensionService) []TargetService {
	clear(*scratch)
	*scratch = idx.AppendTargetServices((*scratch)[:0], es)
	return *scratch
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
