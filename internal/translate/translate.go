// Package translate runs the whole pipeline, source → model → envoy, over a
// complete set of objects and returns serialised Envoy resources and a status
// per ExtensionService. It has no gRPC in it: the server, the command line
// and tests call it alike.
package translate

import (
	"context"
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

// Translate translates objs under settings, without a bound on the output
// and to the end: the oracle of tests and benchmarks. Problems with an
// ExtensionService are reported in its status. It uses every CPU. A caller
// that answers a client uses Bounded.
func Translate(objs *source.Objects, settings source.Settings) *Result {
	res, err := Bounded(context.Background(), objs, settings, Limits{})
	if err != nil {
		panic("translate: unbounded, uncancellable translation failed: " + err.Error()) // unreachable
	}
	return res
}

// Limits bound one translation; the zero value bounds nothing.
type Limits struct {
	// MaxOutputBytes bounds the output's encoded size (see Estimator); 0
	// means no bound.
	MaxOutputBytes int64
	// JSON says every resource will also be rendered as protojson, which
	// the bound then counts too (see jsonExpansion).
	JSON bool
	// Reserve, when set, is given the output's estimated size (as Check
	// counts it) once it is within MaxOutputBytes, before anything is
	// built; an error from it is Bounded's. It must take nothing when it
	// fails: given Quick's bound first, it is called once more with the
	// precise one after an error. The server takes the memory of the
	// response from its in-flight budget there.
	Reserve func(bytes int64) error
}

// jsonExpansion bounds how many bytes of protojson one byte of an encoded
// resource becomes. The worst field is an endpoint with the shortest
// address: "::1" on port 1 is 15 bytes encoded and 71 bytes of JSON, plus
// the spaces protojson may add (it varies its whitespace from build to
// build); a CA bundle, in base64, grows by a third.
// TestEstimateBoundsShortAddresses holds it at its worst.
const jsonExpansion = 6

// Check returns a *TooLargeError when an output whose Estimates sum to
// bytes may exceed l.MaxOutputBytes, nil otherwise; cause says what makes
// it large (Tally.Cause), and is called only then.
func (l Limits) Check(bytes int64, cause func() string) error {
	if l.Fits(bytes) {
		return nil
	}
	return &TooLargeError{Bytes: l.reserved(bytes), Limit: l.MaxOutputBytes, Cause: cause()}
}

// Fits reports whether an output whose Estimates (or Quick bounds) sum to
// bytes is within l.MaxOutputBytes: Check would return nil.
func (l Limits) Fits(bytes int64) bool {
	return l.MaxOutputBytes <= 0 || l.reserved(bytes) <= l.MaxOutputBytes
}

// Bounded is Translate for a caller answering a client:
//   - with l.MaxOutputBytes set, it first bounds the output from the
//     objects alone (see Estimator), and when the bound exceeds the limit
//     returns a *TooLargeError naming what makes the output large, having
//     built nothing;
//   - it stops soon (within one ExtensionService per worker) after ctx is
//     done, and returns ctx.Err().
func Bounded(ctx context.Context, objs *source.Objects, settings source.Settings, l Limits) (*Result, error) {
	return translate(ctx, objs, settings, l, encodeFast)
}

// translate is Bounded with the encoding chosen (tests hold the fast one to
// the reference). It visits the ExtensionServices in the order they were
// given and puts each outcome at its place in name order. Lists, from a
// client or from Kubernetes (which lists a kind in name order), tend to
// give an ExtensionService's Services and EndpointSlices places near its
// own, so visiting in that order reads the objects nearly in the order
// they lie in memory; visiting in name order, where names and lists
// disagree, made nearly every Service and slice a cache miss (12% of the
// CPU at 10000 ExtensionServices, see BENCHMARKS.md).
func translate(ctx context.Context, objs *source.Objects, settings source.Settings, l Limits, enc encoding) (*Result, error) {
	given := make([]*source.ExtensionService, len(objs.ExtensionServices))
	for i := range objs.ExtensionServices {
		given[i] = &objs.ExtensionServices[i]
	}
	places := namePlaces(objs.ExtensionServices)
	idx := model.NewIndex(objs)
	var found *targetsFound
	if l.MaxOutputBytes > 0 {
		var err error
		if found, err = checkOutput(ctx, idx, settings, given, l); err != nil {
			return nil, err
		}
	}
	res, at, closeGaps := gather(len(given))
	if err := build(ctx, idx, settings, given, enc, found, func(i int) slots { return at(int(places[i])) }); err != nil {
		return nil, err
	}
	closeGaps()
	return res, nil
}

// checkOutput returns a *TooLargeError when the output of es may exceed
// l.MaxOutputBytes, or ctx.Err() once ctx is done, and reserves the
// output's size. It bounds the output with Quick, and only when that is
// over the limit, or more than Reserve grants, decides with the precise
// Estimates: what fits them is accepted as it was before Quick.
//
// Each ExtensionService's targets are looked up once, here, and what was
// found is returned for build to use: a lookup, keyed by two strings and
// a cache miss or more, costs about as much as the rest of a bound, and
// build would otherwise make it again. Quick saves the pass over the
// endpoints; once the Quick bounds so far, at their rate over all of es,
// would exceed the limit, each ExtensionService gets both bounds at once,
// and only those before it are estimated again if the precise Estimates
// are needed. That changes what checkOutput costs, never what it decides:
// every Quick bound is summed, and a Tally is the same in any order.
func checkOutput(ctx context.Context, idx *model.Index, settings source.Settings, es []*source.ExtensionService, l Limits) (*targetsFound, error) {
	estimator := NewEstimator(idx, settings)
	found := newTargetsFound(es)
	var quick int64
	// t holds the precise Estimates of es[from:].
	var t Tally
	from := len(es)
	for i, e := range es {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		targets := found.add(idx, e)
		if i >= from {
			q, est := estimator.estimate(e, targets, true)
			quick += q
			t.Add(e.NamespacedName(), &est)
			continue
		}
		q, _ := estimator.estimate(e, targets, false)
		quick += q
		if seen := int64(i + 1); seen >= projectAfter && !l.Fits(quick/seen*int64(len(es))) {
			from = i + 1
		}
	}
	if !l.Fits(quick) {
		if err := preciseTally(ctx, estimator, es[:from], found, &t); err != nil {
			return nil, err
		}
		if err := l.Check(t.Bytes, func() string { return t.Cause(settings) }); err != nil {
			return nil, err
		}
		if l.Reserve == nil {
			return found, nil
		}
		return found, l.Reserve(l.reserved(t.Bytes))
	}
	if l.Reserve == nil {
		return found, nil
	}
	if err := l.Reserve(l.reserved(quick)); err == nil {
		return found, nil
	}
	if err := preciseTally(ctx, estimator, es[:from], found, &t); err != nil {
		return nil, err
	}
	return found, l.Reserve(l.reserved(t.Bytes))
}

// targetsFound is what the targets of a list of ExtensionServices were
// found to be in an Index, in one array: those of the i-th are
// all[starts[i]:starts[i+1]].
type targetsFound struct {
	all    []model.TargetService
	starts []int
}

// newTargetsFound makes room for the targets of es.
func newTargetsFound(es []*source.ExtensionService) *targetsFound {
	n := 0
	for _, e := range es {
		n += len(e.Spec.Services)
	}
	return &targetsFound{all: make([]model.TargetService, 0, n), starts: append(make([]int, 0, len(es)+1), 0)}
}

// add finds the targets of the next ExtensionService, es, and returns them.
func (f *targetsFound) add(idx *model.Index, es *source.ExtensionService) []model.TargetService {
	f.all = idx.AppendTargetServices(f.all, es)
	f.starts = append(f.starts, len(f.all))
	return f.of(len(f.starts) - 2)
}

// of returns the targets of the i-th ExtensionService; nil for a nil f,
// which found nothing.
func (f *targetsFound) of(i int) []model.TargetService {
	if f == nil {
		return nil
	}
	return f.all[f.starts[i]:f.starts[i+1]:f.starts[i+1]]
}

// projectAfter is how many ExtensionServices checkOutput bounds with
// Quick alone before it projects their rate over the rest: enough that
// one large ExtensionService first does not start the precise Estimates
// of a set that fits, few enough that those done again are a small part.
const projectAfter = 256

// preciseTally adds the Estimates of es, whose targets were found, to t,
// or returns ctx.Err() once ctx is done.
func preciseTally(ctx context.Context, estimator *Estimator, es []*source.ExtensionService, found *targetsFound, t *Tally) error {
	for i, e := range es {
		if err := ctx.Err(); err != nil {
			return err
		}
		_, est := estimator.estimate(e, found.of(i), true)
		t.Add(e.NamespacedName(), &est)
	}
	return nil
}

// reserved is the size of an output whose estimates sum to bytes, as
// Check counts it and Reserve is given it: with its protojson when
// l.JSON.
func (l Limits) reserved(bytes int64) int64 {
	if l.JSON {
		return bytes * (1 + jsonExpansion)
	}
	return bytes
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
// and ClusterLoadAssignment when it is valid (Body nil otherwise). A valid
// ExtensionService whose targets are ExternalName Services has no
// ClusterLoadAssignment: its STRICT_DNS Cluster holds its endpoints. A
// Cluster that Incremental kept rather than rebuilt (see Rebuild) carries
// its name and version and no Body: the caller holds it already.
type Outcome struct {
	Cluster               Resource
	ClusterLoadAssignment Resource
	Status                model.Status
}

// slots is where build writes the parts of one Outcome, in place: a
// Result keeps them in three lists, Incremental in an Outcome.
type slots struct {
	cluster, clusterLoadAssignment *Resource
	status                         *model.Status
}

// slots are the parts of o.
func (o *Outcome) slots() slots {
	return slots{cluster: &o.Cluster, clusterLoadAssignment: &o.ClusterLoadAssignment, status: &o.Status}
}

// Valid reports whether the ExtensionService yielded resources.
func (o *Outcome) Valid() bool { return o.Cluster.Version != "" }

// HasClusterLoadAssignment reports whether the ExtensionService yielded a
// ClusterLoadAssignment: it is valid, and its Cluster is EDS.
func (o *Outcome) HasClusterLoadAssignment() bool { return o.ClusterLoadAssignment.Body != nil }

// gather returns a Result with room for n outcomes and the function that
// gives the slots of outcome i, safe to call from several goroutines for
// distinct i. Once every outcome is in, close the gaps: the Result then
// holds what each valid ExtensionService yielded, in order. Workers write
// straight into the Result, so no outcome is copied.
func gather(n int) (res *Result, at func(i int) slots, closeGaps func()) {
	res = &Result{
		Clusters:               make([]Resource, n),
		ClusterLoadAssignments: make([]Resource, n),
		Statuses:               make([]model.Status, n),
	}
	at = func(i int) slots {
		return slots{cluster: &res.Clusters[i], clusterLoadAssignment: &res.ClusterLoadAssignments[i], status: &res.Statuses[i]}
	}
	closeGaps = func() {
		res.Clusters = slices.DeleteFunc(res.Clusters, func(r Resource) bool { return r.Version == "" })
		res.ClusterLoadAssignments = slices.DeleteFunc(res.ClusterLoadAssignments, func(r Resource) bool { return r.Body == nil })
	}
	return res, at, closeGaps
}

// minPerWorker keeps small sets on the calling goroutine, where starting
// workers would cost more than it saves.
const minPerWorker = 64

// parallelThreshold is the smallest set build may spread over more than one
// worker; smaller sets run on the calling goroutine.
const parallelThreshold = 2 * minPerWorker

// build translates es against idx, spreading the work over every CPU when
// there is enough of it, and writes outcome i (for es[i]) to at(i), which
// workers call at once for distinct i. idx must not change until build
// returns. Once ctx is done every worker stops after the ExtensionService
// at hand, and build returns ctx.Err(): some outcomes were written, not
// all.
func build(ctx context.Context, idx *model.Index, settings source.Settings, es []*source.ExtensionService, enc encoding, found *targetsFound, at func(i int) slots) error {
	workers := min(runtime.GOMAXPROCS(0), max(1, len(es)/minPerWorker))
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*len(es)/workers, (w+1)*len(es)/workers
		run := func() {
			b := newBuilder(idx, settings, enc)
			for i := lo; i < hi; i++ {
				// An atomic load: nothing next to building one
				// ExtensionService.
				if ctx.Err() != nil {
					return
				}
				b.build(es[i], found.of(i), Resource{}, at(i))
			}
		}
		if workers == 1 {
			run()
			break
		}
		wg.Go(run)
	}
	wg.Wait()
	return ctx.Err()
}
