// Package translate runs the whole pipeline, source → model → envoy, over a
// complete set of objects and returns serialised Envoy resources and a status
// per ExtensionService. It has no gRPC in it: the server, the command line
// and tests call it alike.
package translate

import (
	"cmp"
	"runtime"
	"slices"
	"sync"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
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
// and ClusterLoadAssignment when it is valid (Body nil otherwise). A
// Cluster that Incremental kept rather than rebuilt (see Rebuild) carries
// its name and version and no Body: the caller holds it already.
type Outcome struct {
	Cluster               Resource
	ClusterLoadAssignment Resource
	Status                model.Status
}

// Valid reports whether the ExtensionService yielded resources.
func (o *Outcome) Valid() bool { return o.ClusterLoadAssignment.Body != nil }

func translate(objs *source.Objects, settings source.Settings, enc encoding) *Result {
	order := make([]*source.ExtensionService, len(objs.ExtensionServices))
	for i := range objs.ExtensionServices {
		order[i] = &objs.ExtensionServices[i]
	}
	slices.SortFunc(order, func(a, b *source.ExtensionService) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return resultOf(build(model.NewIndex(objs), settings, order, enc))
}

// resultOf gathers outcomes, in their order, into a Result.
func resultOf(outcomes []Outcome) *Result {
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

// minPerWorker keeps small sets on the calling goroutine, where starting
// workers would cost more than it saves.
const minPerWorker = 64

// parallelThreshold is the smallest set build may spread over more than one
// worker; smaller sets run on the calling goroutine.
const parallelThreshold = 2 * minPerWorker

// build translates es against idx, spreading the work over every CPU when
// there is enough of it; outcome i is for es[i]. idx must not change until
// build returns.
func build(idx *model.Index, settings source.Settings, es []*source.ExtensionService, enc encoding) []Outcome {
	outcomes := make([]Outcome, len(es))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(es)/minPerWorker))
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*len(es)/workers, (w+1)*len(es)/workers
		run := func() {
			b := newBuilder(idx, settings, enc)
			for i := lo; i < hi; i++ {
				outcomes[i] = b.build(es[i], Resource{})
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
