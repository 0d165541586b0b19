package translate

import (
	"encoding/hex"

	"github.com/cespare/xxhash/v2"

	"github.com/tributary-dev/tributary/internal/envoy"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
)

// builder translates ExtensionServices one at a time against an Index. It
// keeps its memory from one call to the next, so an incremental caller (a
// Sync session rebuilding the one ExtensionService a batch touched) pays
// for the output alone. A builder is not safe for concurrent use; the Index
// must not change during a call.
type builder struct {
	model    *model.Builder
	clusters *envoy.ClusterEncoder
	encoding encoding
}

func newBuilder(idx *model.Index, settings source.Settings, enc encoding) *builder {
	return &builder{
		model:    model.NewBuilder(idx, settings),
		clusters: envoy.NewClusterEncoder(),
		encoding: enc,
	}
}

// build translates es. With keep (its Version set), the caller's Cluster
// for es, only Services or EndpointSlices es targets have changed since it
// was built: a Cluster depends on nothing those hold, so when es is still
// valid its Outcome carries keep's name and version, without a Body,
// instead of building and hashing it again.
func (b *builder) build(es *source.ExtensionService, keep Resource) Outcome {
	ec, st := b.model.Build(es)
	if ec == nil {
		return Outcome{Status: st}
	}
	o := Outcome{Status: st}
	// A STRICT_DNS Cluster holds its Services' names, so it is never kept.
	if keep.Version != "" && ec.DNS == nil {
		o.Cluster = Resource{Name: keep.Name, Version: keep.Version}
	} else {
		cluster := b.encodeCluster(ec)
		o.Cluster = Resource{Name: ec.Name, Version: version(cluster), Body: cluster}
	}
	if ec.DNS != nil {
		return o // a STRICT_DNS Cluster carries its own endpoints
	}
	cla := b.encodeClusterLoadAssignment(ec)
	o.ClusterLoadAssignment = Resource{Name: ec.Name, Version: version(cla), Body: cla}
	return o
}

func (b *builder) encodeCluster(ec *model.ExtensionCluster) []byte {
	if b.encoding == encodeFast {
		return b.clusters.Append(nil, ec)
	}
	return envoy.MustMarshal(envoy.BuildCluster(ec))
}

func (b *builder) encodeClusterLoadAssignment(ec *model.ExtensionCluster) []byte {
	if b.encoding == encodeFast {
		return envoy.AppendClusterLoadAssignment(nil, ec)
	}
	return envoy.MustMarshal(envoy.BuildClusterLoadAssignment(ec))
}

// version is a 64-bit content hash in hex: cheap next to encoding, and wide
// enough that two different resources practically never share one.
func version(body []byte) string {
	var sum [8]byte
	h := xxhash.Sum64(body)
	for i := range sum {
		sum[i] = byte(h >> (56 - 8*i))
	}
	return hex.EncodeToString(sum[:])
}
