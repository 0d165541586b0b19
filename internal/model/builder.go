package model

import (
	"github.com/tributary-dev/tributary/internal/endpoints"
	"github.com/tributary-dev/tributary/internal/source"
)

// Builder validates ExtensionServices against one Index and Settings.
//
// A Builder reuses its memory from one Build to the next, which is what keeps
// translating millions of endpoints cheap: the ExtensionCluster that Build
// returns, its Localities and their Endpoints are that memory and are valid
// only until the next call to Build on the same Builder. Callers that keep
// a result must copy it first (the Status is the caller's own). A Builder
// is not safe for concurrent use; use one per goroutine over a shared
// Index.
type Builder struct {
	index    *Index
	settings source.Settings
	// cluster is what Build returns a pointer to.
	cluster ExtensionCluster
	// tlsParams is settings.UpstreamTLS as a model, the same for every
	// ExtensionService.
	tlsParams *TLSParams
	scratch   localityScratch
	// resolved is the Index as the collector sees it: it answers for the
	// Services the ExtensionService being built resolved to without a
	// second lookup.
	resolved resolvedSlices
	// collector picks the endpoints of each target out of b.resolved.
	collector *endpoints.Collector
}

// NewBuilder returns a Builder over idx. settings must already be parsed and
// checked at the API boundary (see source.Settings).
func NewBuilder(idx *Index, settings source.Settings) *Builder {
	if settings.XDSClusterName == "" {
		settings.XDSClusterName = source.DefaultXDSClusterName
	}
	if settings.ConnectTimeout == 0 {
		settings.ConnectTimeout = source.DefaultConnectTimeout
	}
	b := &Builder{
		index: idx, settings: settings, tlsParams: tlsParams(settings.UpstreamTLS),
		resolved: resolvedSlices{index: idx},
	}
	b.collector = endpoints.NewCollector(&b.resolved)
	return b
}

// Build validates es. It sets *st to its status, always, and returns the
// ExtensionCluster, or nil when the status holds errors (all or nothing: an
// ExtensionService with any error yields no Envoy resources). See Builder
// for how long the ExtensionCluster stays valid. The status is written in
// place, wherever the caller keeps it: some 200 bytes a status, copied
// from frame to frame and then into a Result, cost a translation of many
// small ExtensionServices more than building their statuses did.
//
// targets is nil, or what Index.AppendTargetServices gives for es, which
// Build then does not look up again.
func (b *Builder) Build(es *source.ExtensionService, targets []TargetService, st *Status) *ExtensionCluster {
	*st = Status{Namespace: es.Namespace, Name: es.Name}
	st.Condition.ObservedGeneration = es.Generation
	b.resolved.namespace = es.Namespace
	ec := b.build(es, targets, st)
	b.resolved.forget()
	st.Condition.finish()
	if len(st.Condition.Errors) > 0 {
		return nil
	}
	st.ClusterName = ec.Name
	return ec
}

// resolvedTarget is a spec target whose Service and port were found.
type resolvedTarget struct {
	service *source.Service
	port    source.ServicePort
	weight  uint32
}

// resolvedSlices serves the collector the EndpointSlices of the Services
// one ExtensionService's targets resolved to, as they were found with the
// Service (a TargetService), and asks the Index for anything else.
// The Index does not change during a Build, so the answers are the Index's
// own; what it saves is a map lookup per target, keyed by two strings,
// which at 100,000s of targets is a fair part of a translation.
type resolvedSlices struct {
	index *Index
	// namespace is the ExtensionService's; services are the Services its
	// targets resolved to so far, in spec order, with their slices.
	namespace string
	services  []TargetService
	// next is where the next question is looked for first: the collector
	// asks for the targets in spec order, so the answer is nearly always
	// there.
	next int
}

// remember notes the Service a target resolved to, with its slices.
func (r *resolvedSlices) remember(found TargetService) {
	r.services = append(r.services, found)
}

// forget drops what one Build remembered, so that no Service outlives it
// here.
func (r *resolvedSlices) forget() {
	clear(r.services)
	r.services, r.namespace, r.next = r.services[:0], "", 0
}

// EndpointSlices implements endpoints.Slices.
func (r *resolvedSlices) EndpointSlices(service source.NamespacedName) []*source.EndpointSlice {
	if n := len(r.services); n > 0 && service.Namespace == r.namespace {
		for k := range n {
			i := (r.next + k) % n
			if r.services[i].Service.Name == service.Name {
				r.next = (i + 1) % n
				return r.services[i].Slices
			}
		}
	}
	return r.index.EndpointSlices(service)
}

// EndpointSlice implements endpoints.Slices.
func (r *resolvedSlices) EndpointSlice(name source.NamespacedName) *source.EndpointSlice {
	return r.index.EndpointSlice(name)
}

// EndpointSliceCount implements endpoints.Slices.
func (r *resolvedSlices) EndpointSliceCount() int { return r.index.EndpointSliceCount() }
