package translate

import (
	"bytes"
	"encoding/binary"
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
	// claScratch is where ClusterLoadAssignments are encoded before their
	// bytes are copied out at their exact size (see
	// encodeClusterLoadAssignment).
	claScratch []byte
}

func newBuilder(idx *model.Index, settings source.Settings, enc encoding) *builder {
	return &builder{
		model:    model.NewBuilder(idx, settings),
		clusters: envoy.NewClusterEncoder(),
		encoding: enc,
	}
}

// build translates es and writes its Outcome to out. With keep (its
// Version set), the caller's Cluster for es, only Services or
// EndpointSlices es targets have changed since it was built: a Cluster
// depends on nothing those hold, so when es is still valid its Outcome
// carries keep's name and version, without a Body, instead of building and
// hashing it again.
func (b *builder) build(es *source.ExtensionService, found []model.TargetService, keep Resource, out slots) {
	ec := b.model.Build(es, found, out.status)
	if ec == nil {
		*out.cluster, *out.clusterLoadAssignment = Resource{}, Resource{}
		return
	}
	// A STRICT_DNS Cluster holds its Services' names, so it is never kept.
	kept := keep.Version != "" && ec.DNS == nil
	var cluster, cla []byte
	if !kept {
		cluster = b.encodeCluster(ec)
	}
	// A STRICT_DNS Cluster carries its own endpoints: no CLA.
	if ec.DNS == nil {
		cla = b.encodeClusterLoadAssignment(ec)
	}
	clusterVersion, claVersion := versions(cluster, cla)
	if kept {
		*out.cluster = Resource{Name: keep.Name, Version: keep.Version}
	} else {
		*out.cluster = Resource{Name: ec.Name, Version: clusterVersion, Body: cluster}
	}
	if ec.DNS == nil {
		*out.clusterLoadAssignment = Resource{Name: ec.Name, Version: claVersion, Body: cla}
	} else {
		*out.clusterLoadAssignment = Resource{}
	}
}

func (b *builder) encodeCluster(ec *model.ExtensionCluster) []byte {
	if b.encoding == encodeFast {
		return b.clusters.Append(nil, ec)
	}
	return envoy.MustMarshal(envoy.BuildCluster(ec))
}

func (b *builder) encodeClusterLoadAssignment(ec *model.ExtensionCluster) []byte {
	if b.encoding == encodeFast {
		// The encoder grows its buffer by an estimate; encoding into a
		// buffer that lives from one CLA to the next and copying the bytes
		// out gives each body its exact size, and the copy costs what
		// zeroing a new buffer of that size would. A buffer grown past
		// maxKeptCLAScratch for one large CLA is not kept for the rest.
		b.claScratch = envoy.AppendClusterLoadAssignment(b.claScratch[:0], ec)
		body := bytes.Clone(b.claScratch)
		if cap(b.claScratch) > maxKeptCLAScratch {
			b.claScratch = nil
		}
		return body
	}
	return envoy.MustMarshal(envoy.BuildClusterLoadAssignment(ec))
}

// maxKeptCLAScratch is the largest buffer a builder keeps for encoding
// ClusterLoadAssignments: room for some 10,000 dotted quads, far more than
// an ExtensionService usually has.
const maxKeptCLAScratch = 1 << 20

// versions are the versions of a and of b ("" for a nil body), made in one
// allocation, as an ExtensionService's Cluster and ClusterLoadAssignment are
// versioned together. A version is a 64-bit content hash in hex: cheap next
// to encoding, and wide enough that two different resources practically
// never share one.
func versions(a, b []byte) (string, string) {
	var buf [2 * versionLen]byte
	text := buf[:0]
	for _, body := range [2][]byte{a, b} {
		if body != nil {
			var sum [8]byte
			binary.BigEndian.PutUint64(sum[:], xxhash.Sum64(body))
			text = hex.AppendEncode(text, sum[:])
		}
	}
	both := string(text)
	switch {
	case a == nil:
		return "", both
	case b == nil:
		return both, ""
	}
	return both[:versionLen], both[versionLen:]
}

// versionLen is the length of a version: 8 bytes in hex.
const versionLen = 2 * 8
