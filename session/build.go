package session

import (
	"encoding/hex"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/envoy"
	"github.com/tributary-dev/tributary/model"
	"github.com/tributary-dev/tributary/source"
	"github.com/tributary-dev/tributary/translate"
)

// rebuilder turns ExtensionServices into translate.Outcomes, the way
// translate.Build does, but keeps one model.Builder from one Apply to the
// next. translate.Build starts every call with a fresh Builder, whose
// scratch memory then grows again from nothing: for the one-endpoint
// change that is most of the time and garbage of an Apply. Large sets go to
// translate.Build, which spreads them over every CPU.
//
// The bytes and versions are translate's (the property test holds them to
// a fresh translate.Translate), so a resource has one version whichever
// path built it.
type rebuilder struct {
	index    *model.Index
	settings source.Settings
	model    *model.Builder
	marshal  proto.MarshalOptions
}

// inlineLimit is the size of a set rebuilt on the calling goroutine; it
// matches the point below which translate.Build would not start workers.
const inlineLimit = 64

func newRebuilder(idx *model.Index, settings source.Settings) *rebuilder {
	return &rebuilder{
		index:    idx,
		settings: settings,
		model:    model.NewBuilder(idx, settings),
		marshal:  proto.MarshalOptions{Deterministic: true},
	}
}

// build returns the outcome of every extension, in order. An outcome whose
// Cluster Body is keptCluster means the Cluster is the one e already has
// (see changeTargets); it is never put in a Delta, since its version is
// unchanged.
func (r *rebuilder) build(es []*extension, outcomes []translate.Outcome) []translate.Outcome {
	if len(es) >= inlineLimit {
		objects := make([]*source.ExtensionService, len(es))
		for i, e := range es {
			objects[i] = e.object
		}
		return translate.Build(r.index, r.settings, objects)
	}
	outcomes = outcomes[:0]
	for _, e := range es {
		outcomes = append(outcomes, r.buildOne(e))
	}
	return outcomes
}

// keptCluster stands for a Cluster that was not rebuilt: non-nil, so that
// Outcome.Valid holds.
var keptCluster = []byte{}

func (r *rebuilder) buildOne(e *extension) translate.Outcome {
	ec, st := r.model.Build(e.object)
	if ec == nil {
		return translate.Outcome{Status: st}
	}
	o := translate.Outcome{Status: st}
	if e.change == changeTargets && e.clusterVersion != "" {
		o.Cluster = translate.Resource{Name: ec.Name, Version: e.clusterVersion, Body: keptCluster}
	} else {
		cluster, err := r.marshal.Marshal(envoy.BuildCluster(ec))
		if err != nil {
			// Unreachable: a Cluster built from a model always marshals.
			panic(fmt.Sprintf("marshal Cluster %s: %v", ec.Name, err))
		}
		o.Cluster = translate.Resource{Name: ec.Name, Version: contentVersion(cluster), Body: cluster}
	}
	cla := envoy.AppendClusterLoadAssignment(nil, ec)
	o.ClusterLoadAssignment = translate.Resource{Name: ec.Name, Version: contentVersion(cla), Body: cla}
	return o
}

// contentVersion is translate's resource version: xxhash64 of the body,
// big-endian, in hex.
func contentVersion(body []byte) string {
	h := xxhash.Sum64(body)
	var sum [8]byte
	for i := range sum {
		sum[i] = byte(h >> (56 - 8*i))
	}
	return hex.EncodeToString(sum[:])
}
