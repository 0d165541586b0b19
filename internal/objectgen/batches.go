package objectgen

import (
	"cmp"
	"slices"

	"github.com/tributary-dev/tributary/internal/source"
)

// Deletion names an object to delete.
type Deletion struct {
	Kind source.Kind
	Name source.NamespacedName
}

// Batch is a set of changes: objects to upsert and objects to delete,
// never both for one object.
type Batch struct {
	Upserts source.Objects
	Deletes []Deletion
}

// Batch draws one to eight changes of every kind the Options allow, at
// names of the universe, unique per kind: one in five a delete (which may
// name an object never upserted), the rest upserts. Half the upserts of an
// EndpointSlice that Objects or Batch handed out before (and Batch has not
// deleted since) edit it as a cluster does (see EditEndpointSlices), at
// the next generation.
func (g *Generator) Batch() Batch {
	u := &g.o.Universe
	kinds := []source.Kind{source.KindExtensionService, source.KindService, source.KindEndpointSlice}
	if g.o.Secrets {
		kinds = append(kinds, source.KindSecret)
	}
	if g.o.Delegations {
		kinds = append(kinds, source.KindTLSCertificateDelegation)
	}
	names := map[source.Kind][]string{
		source.KindExtensionService: u.ExtensionServices, source.KindService: g.serviceNames(), source.KindEndpointSlice: u.EndpointSlices,
		source.KindSecret: u.Secrets, source.KindTLSCertificateDelegation: u.Delegations,
	}
	var b Batch
	used := map[Deletion]bool{}
	for range 1 + g.IntN(8) {
		kind := Pick(g, kinds...)
		ns := Pick(g, u.Namespaces...)
		if len(names[kind]) == 0 {
			continue
		}
		ref := Deletion{Kind: kind, Name: source.NamespacedName{Namespace: ns, Name: Pick(g, names[kind]...)}}
		if used[ref] {
			continue
		}
		used[ref] = true
		if g.Chance(5) {
			b.Deletes = append(b.Deletes, ref)
			if kind == source.KindEndpointSlice {
				delete(g.emitted, ref.Name)
			}
			continue
		}
		meta := g.Meta(ns, ref.Name.Name)
		up := &b.Upserts
		switch kind {
		case source.KindExtensionService:
			up.ExtensionServices = append(up.ExtensionServices, g.ExtensionService(meta))
		case source.KindService:
			up.Services = append(up.Services, g.Service(meta))
		case source.KindEndpointSlice:
			es, ok := g.emitted[ref.Name]
			if ok && g.Chance(2) {
				es, _ = g.editSlice(es, 7)
				es.Generation++
			} else {
				es = g.EndpointSlice(meta)
			}
			g.emit(es)
			up.EndpointSlices = append(up.EndpointSlices, es)
		case source.KindSecret:
			up.Secrets = append(up.Secrets, g.Secret(meta))
		case source.KindTLSCertificateDelegation:
			up.TLSCertificateDelegations = append(up.TLSCertificateDelegations, g.Delegation(meta))
		}
	}
	return b
}

// emit remembers es as the latest version of its slice that Objects or
// Batch handed out, for Batch to edit.
func (g *Generator) emit(es source.EndpointSlice) {
	if g.emitted == nil {
		g.emitted = map[source.NamespacedName]source.EndpointSlice{}
	}
	g.emitted[es.NamespacedName()] = es
}

// EndpointSlices draws some of the universe's slices (none to all, in
// order) in the home namespace, one in ten moved to another namespace.
func (g *Generator) EndpointSlices() []source.EndpointSlice {
	u := &g.o.Universe
	var out []source.EndpointSlice
	for _, name := range u.EndpointSlices[:g.IntN(len(u.EndpointSlices)+1)] {
		out = append(out, g.homeSlice(name))
	}
	return out
}

// homeSlice draws slice name in the home namespace or, one time in ten,
// in another.
func (g *Generator) homeSlice(name string) source.EndpointSlice {
	ns := g.o.Universe.Namespaces
	meta := source.Meta{Namespace: ns[0], Name: name}
	if len(ns) > 1 && g.Chance(10) {
		meta.Namespace = Pick(g, ns[1:]...)
	}
	return g.EndpointSlice(meta)
}

// SliceEdit is one change to a set of EndpointSlices: Put upserts a slice,
// Delete names one to delete.
type SliceEdit struct {
	Put    *source.EndpointSlice
	Delete *source.NamespacedName
}

// EditEndpointSlices changes one of current as a cluster does: endpoints
// appended (the common case caches take a shortcut for), replaced,
// removed, their readiness flipped; ports changed; the slice relabelled or
// deleted; or (one time in eight, or when there is none) a new slice of
// the universe added. It picks among current in name order, so the same
// Choices give the same edits whatever order current is in. The edited
// slice shares nothing mutable with the one in current but what a client
// would keep (address strings, ports, conditions).
func (g *Generator) EditEndpointSlices(current []source.EndpointSlice) SliceEdit {
	if len(current) == 0 || g.Chance(8) {
		es := g.homeSlice(Pick(g, g.o.Universe.EndpointSlices...))
		return SliceEdit{Put: &es}
	}
	sorted := slices.Clone(current)
	slices.SortFunc(sorted, func(a, b source.EndpointSlice) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	es, deleted := g.editSlice(Pick(g, sorted...), 8)
	if deleted {
		name := es.NamespacedName()
		return SliceEdit{Delete: &name}
	}
	return SliceEdit{Put: &es}
}

// editSlice draws an edit of es (one of the first `edits` of: endpoints
// appended, one replaced, one removed, one's readiness flipped, new ports,
// a new label, the slice deleted) and returns the edited slice, or es and
// true for a delete.
func (g *Generator) editSlice(es source.EndpointSlice, edits int) (source.EndpointSlice, bool) {
	eps := es.Endpoints.Unpack()
	switch g.IntN(edits) {
	case 0, 1:
		for range 1 + g.IntN(3) {
			eps = append(eps, g.Endpoint())
		}
	case 2:
		if len(eps) > 0 {
			eps[g.IntN(len(eps))] = g.Endpoint()
		}
	case 3:
		if len(eps) > 0 {
			at := g.IntN(len(eps))
			eps = slices.Delete(eps, at, at+1)
		}
	case 4:
		if len(eps) > 0 {
			ep := &eps[g.IntN(len(eps))]
			ep.NotReady = !ep.NotReady
		}
	case 5:
		es.Ports = g.EndpointPorts()
	case 6:
		es.Service = g.sliceService()
	case 7:
		return es, true
	}
	es.Endpoints = source.MakeEndpoints(eps...)
	return es, false
}
