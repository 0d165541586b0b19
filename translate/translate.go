// Package translate runs the whole pipeline, source → model → envoy, over a
// complete set of objects and returns serialised Envoy resources and a status
// per ExtensionService. It has no gRPC in it: the server, the command line
// and tests call it alike.
package translate

import (
	"cmp"
	"encoding/hex"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/cespare/xxhash/v2"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/envoy"
	"github.com/tributary-dev/tributary/model"
	"github.com/tributary-dev/tributary/source"
)

// Type URLs of the resources a Result holds.
const (
	ClusterType               = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	ClusterLoadAssignmentType = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
)

// Resource is one serialised Envoy resource.
type Resource struct {
	// Name is Cluster.name or ClusterLoadAssignment.cluster_name.
	Name string
	// Version is a hash of Body: equal versions mean equal bytes.
	Version string
	// Body is the deterministic protobuf encoding of the resource.
	Body []byte
}

// Result is the outcome of one translation. Clusters and
// ClusterLoadAssignments hold one entry per valid ExtensionService and
// Statuses one per ExtensionService, each sorted by namespace then name, so
// equal inputs give equal Results.
type Result struct {
	Clusters               []Resource
	ClusterLoadAssignments []Resource
	Statuses               []model.Status
}

// Translate translates objs under settings. It never fails: problems with an
// ExtensionService are reported in its status. It uses every CPU.
func Translate(objs *source.Objects, settings source.Settings) *Result {
	return translate(objs, settings, encodeFast)
}

// claEncoder serialises the ClusterLoadAssignment of ec, appending to dst.
type claEncoder func(dst []byte, ec *model.ExtensionCluster) []byte

// encodeFast is the production encoder: straight to wire bytes.
func encodeFast(dst []byte, ec *model.ExtensionCluster) []byte {
	return envoy.AppendClusterLoadAssignment(dst, ec)
}

// encodeReference marshals the proto the reference builder gives; tests hold
// encodeFast to its exact bytes.
func encodeReference(dst []byte, ec *model.ExtensionCluster) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(dst, envoy.BuildClusterLoadAssignment(ec))
	if err != nil {
		panic(fmt.Sprintf("marshal ClusterLoadAssignment %s: %v", ec.Name, err))
	}
	return b
}

// Outcome is what one ExtensionService yields: its status, and its Cluster
// and ClusterLoadAssignment when it is valid (Body nil otherwise).
type Outcome struct {
	Cluster               Resource
	ClusterLoadAssignment Resource
	Status                model.Status
}

// Valid reports whether the ExtensionService yielded resources.
func (o *Outcome) Valid() bool { return o.Cluster.Body != nil }

func translate(objs *source.Objects, settings source.Settings, encodeCLA claEncoder) *Result {
	order := make([]*source.ExtensionService, len(objs.ExtensionServices))
	for i := range objs.ExtensionServices {
		order[i] = &objs.ExtensionServices[i]
	}
	slices.SortFunc(order, func(a, b *source.ExtensionService) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	outcomes := build(model.NewIndex(objs), settings, order, encodeCLA)

	res := &Result{Statuses: make([]model.Status, len(outcomes))}
	valid := 0
	for i := range outcomes {
		if outcomes[i].Valid() {
			valid++
		}
	}
	res.Clusters = make([]Resource, 0, valid)
	res.ClusterLoadAssignments = make([]Resource, 0, valid)
	for i := range outcomes {
		o := &outcomes[i]
		res.Statuses[i] = o.Status
		if o.Valid() {
			res.Clusters = append(res.Clusters, o.Cluster)
			res.ClusterLoadAssignments = append(res.ClusterLoadAssignments, o.ClusterLoadAssignment)
		}
	}
	return res
}

// Build translates the given ExtensionServices against idx, spreading the work
// over every CPU when there is enough of it; outcome i is for es[i]. idx must
// not change until Build returns. Incremental callers (a Sync session) use it
// to rebuild just the ExtensionServices a change touched.
func Build(idx *model.Index, settings source.Settings, es []*source.ExtensionService) []Outcome {
	return build(idx, settings, es, encodeFast)
}

// minPerWorker keeps small rebuilds on the calling goroutine, where starting
// workers would cost more than it saves.
const minPerWorker = 64

func build(idx *model.Index, settings source.Settings, es []*source.ExtensionService, encodeCLA claEncoder) []Outcome {
	outcomes := make([]Outcome, len(es))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(es)/minPerWorker))
	if workers == 1 {
		b := model.NewBuilder(idx, settings)
		for i := range es {
			outcomes[i] = translateOne(b, es[i], encodeCLA)
		}
		return outcomes
	}
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*len(es)/workers, (w+1)*len(es)/workers
		wg.Go(func() {
			b := model.NewBuilder(idx, settings)
			for i := lo; i < hi; i++ {
				outcomes[i] = translateOne(b, es[i], encodeCLA)
			}
		})
	}
	wg.Wait()
	return outcomes
}

func translateOne(b *model.Builder, es *source.ExtensionService, encodeCLA claEncoder) Outcome {
	ec, st := b.Build(es)
	if ec == nil {
		return Outcome{Status: st}
	}
	cluster, err := proto.MarshalOptions{Deterministic: true}.Marshal(envoy.BuildCluster(ec))
	if err != nil {
		// Unreachable: a Cluster built from a model always marshals.
		panic(fmt.Sprintf("marshal Cluster %s: %v", ec.Name, err))
	}
	cla := encodeCLA(nil, ec)
	return Outcome{
		Cluster:               Resource{Name: ec.Name, Version: version(cluster), Body: cluster},
		ClusterLoadAssignment: Resource{Name: ec.Name, Version: version(cla), Body: cla},
		Status:                st,
	}
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
