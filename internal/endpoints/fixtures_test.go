package endpoints

import (
	"cmp"
	"slices"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
)

const testNamespace = objectgen.Namespace

// testIndex holds EndpointSlices as model.Index does (which this package
// cannot import): by name, and per labelled Service in name order.
type testIndex struct {
	byName    map[source.NamespacedName]*source.EndpointSlice
	byService map[source.NamespacedName][]*source.EndpointSlice
}

func newTestIndex(slices []source.EndpointSlice) *testIndex {
	x := &testIndex{
		byName:    map[source.NamespacedName]*source.EndpointSlice{},
		byService: map[source.NamespacedName][]*source.EndpointSlice{},
	}
	for i := range slices {
		x.put(&slices[i])
	}
	return x
}

// put adds es or replaces the slice of the same name.
func (x *testIndex) put(es *source.EndpointSlice) {
	x.delete(es.NamespacedName())
	x.byName[es.NamespacedName()] = es
	if es.Service != "" {
		key := source.NamespacedName{Namespace: es.Namespace, Name: es.Service}
		list := append(x.byService[key], es)
		slices.SortFunc(list, func(a, b *source.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
		x.byService[key] = list
	}
}

func (x *testIndex) delete(name source.NamespacedName) {
	old := x.byName[name]
	if old == nil {
		return
	}
	delete(x.byName, name)
	if old.Service != "" {
		key := source.NamespacedName{Namespace: old.Namespace, Name: old.Service}
		x.byService[key] = slices.DeleteFunc(x.byService[key], func(es *source.EndpointSlice) bool { return es == old })
	}
}

func (x *testIndex) EndpointSlices(service source.NamespacedName) []*source.EndpointSlice {
	return x.byService[service]
}

func (x *testIndex) EndpointSlice(name source.NamespacedName) *source.EndpointSlice {
	return x.byName[name]
}

func (x *testIndex) EndpointSliceCount() int { return len(x.byName) }

// collectorKinds are the two ways a Collector works, which must agree with
// Reference and so with each other: parsing every slice on every call, and
// keeping each slice parsed (CacheSlices).
var collectorKinds = []struct {
	name string
	new  func(Slices) *Collector
}{
	{"plain", NewCollector},
	{"cached", func(s Slices) *Collector {
		c := NewCollector(s)
		c.CacheSlices()
		return c
	}},
}

func ptr[T any](v T) *T { return &v }
