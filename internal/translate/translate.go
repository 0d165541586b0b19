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

	"github.com/tributary-dev/tributary/internal/envoy"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
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

// encoding chooses how resources become bytes.
type encoding int

const (
	// encodeFast is production: ClusterLoadAssignments straight to wire
	// bytes, Clusters from a per-shape template.
	encodeFast encoding = iota
	// encodeReference builds every resource as a proto and marshals it;
	// tests hold encodeFast to its exact bytes.
	encodeReference
)

// Outcome is what one ExtensionService yields: its status, and its Cluster
// and ClusterLoadAssignment when it is valid (Body nil otherwise).
type Outcome struct {
	Cluster               Resource
	ClusterLoadAssignment Resource
	Status                model.Status
}

// Valid reports whether the ExtensionService yielded resources.
func (o *Outcome) Valid() bool { return o.Cluster.Body != nil }

func translate(objs *source.Objects, settings source.Settings, enc encoding) *Result {
	order := make([]*source.ExtensionService, len(objs.ExtensionServices))
	for i := range objs.ExtensionServices {
		order[i] = &objs.ExtensionServices[i]
	}
	slices.SortFunc(order, func(a, b *source.ExtensionService) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return ResultOf(build(model.NewIndex(objs), settings, order, enc))
}

// ResultOf gathers outcomes, in their order, into a Result.
func ResultOf(outcomes []Outcome) *Result {
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
// not change until Build returns.
func Build(idx *model.Index, settings source.Settings, es []*source.ExtensionService) []Outcome {
	return build(idx, settings, es, encodeFast)
}

// minPerWorker keeps small sets on the calling goroutine, where starting
// workers would cost more than it saves.
const minPerWorker = 64

// ParallelThreshold is the smallest set Build may spread over more than one
// worker; smaller sets run on the calling goroutine.
const ParallelThreshold = 2 * minPerWorker

func build(idx *model.Index, settings source.Settings, es []*source.ExtensionService, enc encoding) []Outcome {
	outcomes := make([]Outcome, len(es))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(es)/minPerWorker))
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*len(es)/workers, (w+1)*len(es)/workers
		run := func() {
			b := newBuilder(idx, settings, enc)
			for i := lo; i < hi; i++ {
				outcomes[i] = b.Build(es[i])
			}
		}
		if workers == 1 {
			run()
			break
		}
		wg.Go(run)
	}
	wg.Wait()
	return outcomes
}

// Builder translates ExtensionServices one at a time against an Index. It
// keeps its memory from one call to the next, so an incremental caller (a
// Sync session rebuilding the one ExtensionService a batch touched) pays
// for the output alone. A Builder is not safe for concurrent use; the Index
// must not change during a call.
type Builder struct {
	model    *model.Builder
	clusters *envoy.ClusterEncoder
	marshal  proto.MarshalOptions
	encoding encoding
}

// NewBuilder returns a Builder over idx for a caller that keeps it as idx
// changes: it keeps each EndpointSlice parsed (model.Builder's
// CacheEndpointSlices), so a rebuild after one slice changed parses that
// slice alone.
func NewBuilder(idx *model.Index, settings source.Settings) *Builder {
	b := newBuilder(idx, settings, encodeFast)
	b.model.CacheEndpointSlices()
	return b
}

func newBuilder(idx *model.Index, settings source.Settings, enc encoding) *Builder {
	return &Builder{
		model:    model.NewBuilder(idx, settings),
		clusters: envoy.NewClusterEncoder(),
		marshal:  proto.MarshalOptions{Deterministic: true},
		encoding: enc,
	}
}

// SweepEndpointSlices lets go of the EndpointSlices b keeps parsed that the
// Index no longer holds (model.Builder's SweepEndpointSlices): for a caller
// that rebuilds many ExtensionServices with the function Build, whose
// reading of the slices b does not see.
func (b *Builder) SweepEndpointSlices() { b.model.SweepEndpointSlices() }

// Build translates es.
func (b *Builder) Build(es *source.ExtensionService) Outcome {
	return b.build(es, nil)
}

// RebuildEndpoints translates es after a change that cannot alter its
// Cluster: only Services or EndpointSlices it targets changed. A Cluster
// depends on nothing those hold, so when es is still valid its Outcome
// carries cluster as it is instead of building and hashing it again.
func (b *Builder) RebuildEndpoints(es *source.ExtensionService, cluster Resource) Outcome {
	return b.build(es, &cluster)
}

func (b *Builder) build(es *source.ExtensionService, keep *Resource) Outcome {
	ec, st := b.model.Build(es)
	if ec == nil {
		return Outcome{Status: st}
	}
	o := Outcome{Status: st}
	if keep != nil {
		o.Cluster = *keep
	} else {
		cluster := b.encodeCluster(ec)
		o.Cluster = Resource{Name: ec.Name, Version: version(cluster), Body: cluster}
	}
	cla := b.encodeClusterLoadAssignment(ec)
	o.ClusterLoadAssignment = Resource{Name: ec.Name, Version: version(cla), Body: cla}
	return o
}

func (b *Builder) encodeCluster(ec *model.ExtensionCluster) []byte {
	if b.encoding == encodeFast {
		return b.clusters.Append(nil, ec)
	}
	return b.mustMarshal(envoy.BuildCluster(ec), ec.Name)
}

func (b *Builder) encodeClusterLoadAssignment(ec *model.ExtensionCluster) []byte {
	if b.encoding == encodeFast {
		return envoy.AppendClusterLoadAssignment(nil, ec)
	}
	return b.mustMarshal(envoy.BuildClusterLoadAssignment(ec), ec.Name)
}

// mustMarshal marshals a resource built from a model, which cannot fail.
func (b *Builder) mustMarshal(m proto.Message, name string) []byte {
	out, err := b.marshal.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("marshal %T %s: %v", m, name, err))
	}
	return out
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
