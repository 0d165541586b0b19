package translate

import (
	"context"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
)

// Incremental is translate's second face, for a caller that keeps its
// objects in an Index and translates again only the ExtensionServices a
// change touched (a Sync session). It owns the two decisions such a caller
// would otherwise have to repeat:
//   - parallelism: a small set (the usual batch touches one or two
//     ExtensionServices) goes through one builder kept from one call to the
//     next, so its scratch memory is reused instead of grown again; a large
//     set is spread over every CPU, as Translate does;
//   - the cache of parsed EndpointSlices: the kept builder parses each
//     slice once and reparses only those that changed, and lets go of the
//     slices the Index no longer holds whenever a large set is translated
//     without it.
//
// Outcomes are those Translate would give for the same objects, byte for
// byte. An Incremental is not safe for concurrent use, and the Index must
// not change during a call.
type Incremental struct {
	index    *model.Index
	settings source.Settings
	kept     *builder
	// outcomes is the scratch a small set is translated into.
	outcomes []Outcome
}

// Rebuild asks for one ExtensionService to be translated again.
type Rebuild struct {
	ExtensionService *source.ExtensionService
	// KeepCluster, when its Version is set, is the Cluster the caller holds
	// for the ExtensionService, and only Services or EndpointSlices it
	// targets have changed since. An EDS Cluster depends on nothing those
	// hold, so a valid ExtensionService's Outcome carries KeepCluster
	// (without a Body) instead of building and hashing it again; a
	// STRICT_DNS Cluster, which holds its Services' names, is built anew.
	KeepCluster Resource
}

// NewIncremental returns an Incremental over idx.
func NewIncremental(idx *model.Index, settings source.Settings) *Incremental {
	kept := newBuilder(idx, settings, encodeFast)
	kept.model.CacheEndpointSlices()
	return &Incremental{index: idx, settings: settings, kept: kept}
}

// Rebuild translates what rebuilds ask for and calls use with each outcome,
// in order: i is the index in rebuilds. The Outcome is valid during the call
// only; Rebuild keeps nothing of it afterwards. Once ctx is done, Rebuild
// stops after the ExtensionService at hand and returns ctx.Err() without
// calling use at all, so a caller that applies outcomes as they come never
// applies part of a set.
func (inc *Incremental) Rebuild(ctx context.Context, rebuilds []Rebuild, use func(i int, o *Outcome)) error {
	if len(rebuilds) >= parallelThreshold {
		es := make([]*source.ExtensionService, len(rebuilds))
		for i := range rebuilds {
			es[i] = rebuilds[i].ExtensionService
		}
		// The fresh builders read the slices anew, which the kept builder
		// does not see: its parsed copies of slices the Index no longer
		// holds go now.
		inc.kept.model.SweepEndpointSlices()
		outcomes := make([]Outcome, len(es))
		if err := build(ctx, inc.index, inc.settings, es, encodeFast, nil, func(i int) slots { return outcomes[i].slots() }); err != nil {
			return err
		}
		for i := range outcomes {
			use(i, &outcomes[i])
		}
		return nil
	}
	out := inc.outcomes[:0]
	defer func() {
		clear(out) // keep no bodies alive until the next call
		inc.outcomes = out
	}()
	for i := range rebuilds {
		if err := ctx.Err(); err != nil {
			return err
		}
		out = append(out, Outcome{})
		inc.kept.build(rebuilds[i].ExtensionService, nil, rebuilds[i].KeepCluster, out[len(out)-1].slots())
	}
	for i := range out {
		use(i, &out[i])
	}
	return nil
}

// All translates every one of es (sorted by namespace, then name) afresh
// and gathers the outcomes into a Result, as Translate would for the
// Index's objects.
func (inc *Incremental) All(es []*source.ExtensionService) *Result {
	res, at, closeGaps := gather(len(es))
	if err := build(context.Background(), inc.index, inc.settings, es, encodeFast, nil, at); err != nil {
		panic(err) // unreachable: nothing cancels the background context
	}
	closeGaps()
	return res
}
