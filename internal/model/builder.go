package model

import (
	"github.com/tributary-dev/tributary/internal/endpoints"
	"github.com/tributary-dev/tributary/internal/source"
)

// Builder validates ExtensionServices against one Index and Settings.
//
// A Builder reuses its memory from one Build to the next, which is what keeps
// translating millions of endpoints cheap: the Localities (and their
// Endpoints) of the ExtensionCluster that Build returns alias that memory and
// are valid only until the next call to Build on the same Builder. Callers
// that keep a result must copy it first. A Builder is not safe for
// concurrent use; use one per goroutine over a shared Index.
type Builder struct {
	index    *Index
	settings source.Settings
	// tlsParams is settings.UpstreamTLS as a model, the same for every
	// ExtensionService.
	tlsParams *TLSParams
	scratch   localityScratch
	// collector picks the endpoints of each target out of the Index.
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
	return &Builder{
		index: idx, settings: settings, tlsParams: tlsParams(settings.UpstreamTLS),
		collector: endpoints.NewCollector(idx),
	}
}

// Build validates es. It returns the ExtensionCluster, or nil when the
// status holds errors (all or nothing: an ExtensionService with any error
// yields no Envoy resources), and the status, always. See Builder for how
// long the result's Localities stay valid.
func (b *Builder) Build(es *source.ExtensionService) (*ExtensionCluster, Status) {
	st := Status{Namespace: es.Namespace, Name: es.Name}
	st.Condition.ObservedGeneration = es.Generation
	ec := b.build(es, &st)
	st.Condition.finish()
	if len(st.Condition.Errors) > 0 {
		return nil, st
	}
	st.ClusterName = ec.Name
	return ec, st
}

// resolvedTarget is a spec target whose Service and port were found.
type resolvedTarget struct {
	service *source.Service
	port    source.ServicePort
	weight  uint32
}
