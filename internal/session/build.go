package session

import (
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
)

// rebuilder turns ExtensionServices into translate.Outcomes. The usual batch
// touches one or two ExtensionServices: those go through one
// translate.Builder kept from one Apply to the next, so its scratch memory
// is reused instead of growing again from nothing. Large sets go to
// translate.Build, which spreads them over every CPU.
type rebuilder struct {
	index    *model.Index
	settings source.Settings
	builder  *translate.Builder
}

// inlineLimit is the size from which a set goes to translate.Build: below
// it, Build would run on one goroutine anyway, with a fresh Builder.
const inlineLimit = translate.ParallelThreshold

func newRebuilder(idx *model.Index, settings source.Settings) *rebuilder {
	return &rebuilder{index: idx, settings: settings, builder: translate.NewBuilder(idx, settings)}
}

// build returns the outcome of every extension, in order. An outcome whose
// Cluster Body is keptCluster carries the Cluster e already has (only its
// targets changed, see changeTargets); it is never put in a Delta, since its
// version is unchanged.
func (r *rebuilder) build(es []*extension, outcomes []translate.Outcome) []translate.Outcome {
	if len(es) >= inlineLimit {
		objects := make([]*source.ExtensionService, len(es))
		for i, e := range es {
			objects[i] = e.object
		}
		// The slices this batch replaced are read by Build's own Builders:
		// the inline Builder's parsed copies of their old versions go.
		r.builder.SweepEndpointSlices()
		return translate.Build(r.index, r.settings, objects)
	}
	outcomes = outcomes[:0]
	for _, e := range es {
		if e.change == changeTargets && e.clusterVersion != "" {
			kept := translate.Resource{Name: e.status.ClusterName, Version: e.clusterVersion, Body: keptCluster}
			outcomes = append(outcomes, r.builder.RebuildEndpoints(e.object, kept))
			continue
		}
		outcomes = append(outcomes, r.builder.Build(e.object))
	}
	return outcomes
}

// keptCluster stands for a Cluster that was not rebuilt: non-nil, so that
// Outcome.Valid holds.
var keptCluster = []byte{}
