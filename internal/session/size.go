package session

import (
	"unsafe"

	"github.com/tributary-dev/tributary/internal/source"
)

// Size accounting. A server bounds each session's memory by summing
// SizeChange over the batches it applies; the sum is ObjectsSize of the
// objects the session holds. Both are estimates, not measurements: they
// count the bytes of every string and byte slice an object holds, the Go
// structs around them, a fixed cost per map entry, and a fixed cost for the
// output: per ExtensionService (two versions and a status kept) and per
// endpoint address (its share of a ClusterLoadAssignment). That is within a small factor of the heap the objects
// really use, which is what a bound on abuse needs, and it costs O(batch)
// per batch, never O(session).

// SizeChange is how much the estimated size of what s holds would grow
// (or, when negative, shrink) if b were applied now. It must be called
// before Apply(b): it compares b with the objects s holds.
func (s *Session) SizeChange(b *Batch) int64 {
	var n int64
	for _, k := range kindTable[source.KindExtensionService:] {
		n += k.sizeChange(s, b.Upserts)
	}
	for _, ref := range b.Deletes {
		n -= kindTable[ref.Kind].heldSize(s, ref.Name)
	}
	return n
}

// delegation is the named TLSCertificateDelegation, if s holds it. A
// namespace holds a handful of delegations at most.
func (s *Session) delegation(name source.NamespacedName) *source.TLSCertificateDelegation {
	for _, d := range s.index.Delegations(name.Namespace) {
		if d.Name == name.Name {
			return d
		}
	}
	return nil
}

// ObjectsSize is the estimated size of a session holding exactly objs:
// the sum of SizeChange over batches that lead to objs.
func ObjectsSize(objs *source.Objects) int64 {
	var n int64
	for _, k := range kindTable[source.KindExtensionService:] {
		n += k.objectsSize(*objs)
	}
	return n
}

const (
	// mapEntrySize is what one entry costs in the maps that index an
	// object (by name, and for some kinds by what refers to it).
	mapEntrySize = 64
	// outputSize is what a session keeps of one ExtensionService's output:
	// two version strings, a status with its message, and the bookkeeping
	// of its dependents.
	outputSize = 512
)

func metaSize(m *source.Meta) int64 {
	return int64(len(m.Namespace)+len(m.Name)) + mapEntrySize
}

func extensionServiceSize(es *source.ExtensionService) int64 {
	n := int64(unsafe.Sizeof(*es)) + metaSize(&es.Meta) + outputSize + int64(len(es.Spec.ProtocolVersion))
	for _, t := range es.Spec.Services {
		n += int64(unsafe.Sizeof(t)+uintptr(len(t.Name))) + mapEntrySize
	}
	spec := &es.Spec
	if v := spec.Validation; v != nil {
		n += int64(unsafe.Sizeof(*v)) + int64(len(v.CASecret)+len(v.SubjectName)) + mapEntrySize
		for _, name := range v.SubjectNames {
			n += int64(unsafe.Sizeof(name)) + int64(len(name))
		}
	}
	if spec.Protocol != nil {
		n += int64(unsafe.Sizeof(*spec.Protocol)) + int64(len(*spec.Protocol))
	}
	if p := spec.LoadBalancerPolicy; p != nil {
		n += int64(unsafe.Sizeof(*p)) + int64(len(p.Strategy))
	}
	if p := spec.TimeoutPolicy; p != nil {
		n += int64(unsafe.Sizeof(*p)) + int64(len(p.Response)+len(p.Idle)+len(p.IdleConnection))
	}
	if p := spec.CircuitBreakerPolicy; p != nil {
		n += int64(unsafe.Sizeof(*p))
	}
	return n
}

func serviceSize(svc *source.Service) int64 {
	n := int64(unsafe.Sizeof(*svc)) + metaSize(&svc.Meta) + int64(len(svc.Type)+len(svc.ExternalName))
	for _, p := range svc.Ports {
		n += int64(unsafe.Sizeof(p)) + int64(len(p.Name)+len(p.TargetPort)+len(p.Protocol))
	}
	return n
}

// addressOutputSize is the output one address becomes: its LbEndpoint in
// the encoded ClusterLoadAssignment (held until the delta is sent, about
// 24 bytes) and in the scratch translate.Incremental's kept builder reuses
// for the next rebuild (an endpoints.Endpoint, 32 bytes).
const addressOutputSize = 56

// Incremental's slice cache (model.Builder's CacheEndpointSlices) holds a
// packed key per endpoint and slice port it matched (an unnamed Service
// port matches every TCP port of a slice), and sliceCacheEntrySize more
// per slice (BenchmarkSliceCacheMemory in internal/endpoints measures both).
const (
	cachedKeySize       = 8
	sliceCacheEntrySize = 300
)

func endpointSliceSize(slice *source.EndpointSlice) int64 {
	// Indexed by name and by the Service it is labelled for.
	n := int64(unsafe.Sizeof(*slice)) + metaSize(&slice.Meta) + mapEntrySize + int64(len(slice.Service)+len(slice.AddressType)) + sliceCacheEntrySize
	cachedKeys := int64(max(1, len(slice.Ports))) * cachedKeySize
	eps := int64(slice.Endpoints.Len())
	n += eps*(cachedKeys+addressOutputSize) + int64(slice.Endpoints.MemoryBytes())
	for _, p := range slice.Ports {
		n += int64(unsafe.Sizeof(p)) + 3*8
		if p.Name != nil {
			n += int64(len(*p.Name))
		}
		if p.Protocol != nil {
			n += int64(len(*p.Protocol))
		}
	}
	return n
}

func secretSize(secret *source.Secret) int64 {
	return int64(unsafe.Sizeof(*secret)) + metaSize(&secret.Meta) + int64(len(secret.Type)+len(secret.CACrt)+len(secret.TLSCrt))
}

func delegationSize(d *source.TLSCertificateDelegation) int64 {
	n := int64(unsafe.Sizeof(*d)) + metaSize(&d.Meta)
	for _, cd := range d.Delegations {
		n += int64(unsafe.Sizeof(cd)) + int64(len(cd.SecretName))
		for _, ns := range cd.TargetNamespaces {
			n += int64(unsafe.Sizeof(ns)) + int64(len(ns))
		}
	}
	return n
}
