package session

import (
	"testing"

	"github.com/cespare/xxhash/v2"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/internal/envoy"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/workload"
)

// BenchmarkRebuildParts splits the rebuild of one ExtensionService of the
// standard workload (two Services of 100 endpoints) into its parts: model
// validation and endpoint resolution, CLA encoding, Cluster build and
// marshal, and hashing. It shows where BenchmarkApplyOneEndpoint's time goes.
func BenchmarkRebuildParts(b *testing.B) {
	objs := workload.Standard(1000, 100)
	idx := model.NewIndex(objs)
	mb := model.NewBuilder(idx, source.Settings{})
	es := &objs.ExtensionServices[0]
	var st model.Status
	b.Run("model", func(b *testing.B) {
		for b.Loop() {
			mb.Build(es, nil, &st)
		}
	})
	ec := mb.Build(es, nil, &st)
	b.Run("cla", func(b *testing.B) {
		for b.Loop() {
			envoy.AppendClusterLoadAssignment(nil, ec)
		}
	})
	marshal := proto.MarshalOptions{Deterministic: true}
	b.Run("cluster", func(b *testing.B) {
		for b.Loop() {
			c, _ := marshal.Marshal(envoy.BuildCluster(ec))
			xxhash.Sum64(c)
		}
	})
	cla := envoy.AppendClusterLoadAssignment(nil, ec)
	b.Run("hash", func(b *testing.B) {
		for b.Loop() {
			xxhash.Sum64(cla)
		}
	})
}
