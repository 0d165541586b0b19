package contour

import (
	"cmp"
	"context"
	"log/slog"
	"reflect"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// DefaultDebounce is the shortest time between two automatic flushes of an
// Adapter. A change that arrives when no automatic flush has started for
// that long is sent at once, since Contour's own EndpointSlice path has no
// hold-off and a lone change must not wait for a burst that never comes;
// the changes that follow it within the interval are sent together when
// it ends, and those that arrive while a flush waits for its answer go in
// the next one, so a burst of updates goes in batches of up to a hundred
// a second however fast it comes. It is short because a rollout is rarely
// that fast: a Deployment's rollout updates its EndpointSlices a few dozen
// times a second, and against a real API server at 50 updates a second a
// 100 ms interval held each one back 50 ms at the median where Contour,
// which holds nothing back, took 2 ms; at 10 ms each goes at once (see
// BENCHMARKS.md).
const DefaultDebounce = 10 * time.Millisecond

// ClusterSink receives Clusters, as Contour's cluster cache would. changed
// holds added or changed Clusters (sorted by name), removed the names of
// Clusters that are gone. It is called only when one of them is non-empty.
type ClusterSink interface {
	UpdateClusters(changed []*clusterv3.Cluster, removed []string)
}

// EndpointSink receives ClusterLoadAssignments, as Contour's EDS cache
// would, with the same conventions as ClusterSink.
type EndpointSink interface {
	UpdateClusterLoadAssignments(changed []*endpointv3.ClusterLoadAssignment, removed []string)
}

// StatusWriter receives ExtensionService statuses: WriteStatus for a status
// that is new or changed, RemoveStatus when the ExtensionService was deleted.
// A status also changes when only its availability does (a target's ready
// endpoints or effective weight), which is not part of Contour's
// ExtensionService status: a writer of Contour's conditions skips a write
// whose conditions are those it last wrote, as Contour's status updater
// does, so endpoint churn costs the API server nothing.
type StatusWriter interface {
	WriteStatus(namespace, name string, st *tributaryv1.ExtensionServiceStatus)
	RemoveStatus(namespace, name string)
}

// Adapter turns the informer events Contour already receives into a Sync
// session, and the session's output into calls on its caches and status
// writer. Its OnAdd, OnUpdate and OnDelete have the signatures of client-go's
// cache.ResourceEventHandler, so one Adapter can be registered on the
// ExtensionService, Service, EndpointSlice, Secret and
// TLSCertificateDelegation informers; objects of other kinds are ignored.
//
// The informers list the whole cluster, but of the Services,
// EndpointSlices and Secrets the session gets only those an
// ExtensionService names (a target Service, its EndpointSlices, a CA
// Secret) or has named since the Adapter was made, and the Secret of the
// clientCertificate setting; the rest waits in the Adapter until an
// ExtensionService names it. The output is the same as if everything were
// sent, since translation reads nothing else, and stays so across a
// rejected batch.
//
// Nothing is sent before the first Flush: call it once every informer has
// synced, so the first batch holds the complete initial list and no status
// is ever written from a partial view (an ExtensionService whose Service has
// not been listed yet is not "unresolved"). After that, changes flush by
// themselves, at most once per debounce interval (WithDebounce): a change
// that arrives after a quiet period, when no automatic flush has started
// within the interval, is sent at once; changes that arrive while a flush
// runs or within the interval after the last one started are sent together
// when the interval ends (at once, if that flush outlasted it). So a lone
// change, such as one EndpointSlice update, reaches Envoy without waiting,
// as on Contour's own EndpointSlice path, and a rollout's burst is still
// coalesced into a batch per interval. Each sink is called with only what
// changed.
//
// With controller-runtime's cache, as Contour has it, the wiring is: one
// AddEventHandler(adapter) per informer; wait for the cache
// (WaitForCacheSync) and for every registration's HasSynced, which also
// says the initial list has been handed to the adapter; then Flush. The
// StatusWriter must not block: it is called on the goroutine that delivers
// Clusters and answers Flush. docs/direct-eds.md shows the wiring that the
// end-to-end tests run against a real API server
// (test/e2e/cmd/contourhost).
//
// An Adapter is safe for concurrent use.
type Adapter struct {
	// target receives the objects: session itself, or one session per
	// replica (see NewReplicatedAdapter).
	target    syncTarget
	session   *client.SyncSession
	ctx       context.Context
	clusters  ClusterSink
	endpoints EndpointSink
	statuses  StatusWriter
	debounce  time.Duration
	unwrap    func(any) (any, bool)
	onError   func(error)

	// now and afterFunc are time.Now and time.AfterFunc, replaced in
	// tests to step through the debounce interval without waiting.
	now       func() time.Time
	afterFunc func(time.Duration, func()) stopper

	mu sync.Mutex
	// started is set by the first Flush: from then on changes flush by
	// themselves.
	started bool
	// dirty marks changes not yet taken by a flush.
	dirty bool
	// scheduled is set while an automatic flush waits or runs; one at a time.
	scheduled bool
	// lastAutoFlush is when the last automatic flush started: the next may
	// start a debounce interval later, no sooner.
	lastAutoFlush time.Time
	closed        bool
	timer         stopper
	flushes       sync.WaitGroup
}

// stopper is the part of *time.Timer an Adapter uses.
type stopper interface {
	Stop() bool
}

func afterFunc(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }

// syncTarget is what an Adapter's events and flushes go to. The batching
// (debounce, the first Flush, error reporting) is the Adapter's; the target
// only holds objects and sends them.
type syncTarget interface {
	// Upsert and Delete report whether what the target will send changed:
	// an update that changes nothing the session holds (a resync, the echo
	// of a status write, an object no ExtensionService names) must not
	// start a flush, whose debounce interval would hold back the next real
	// change.
	Upsert(objs ...*tributaryv1.KubernetesObject) (changed bool)
	Delete(refs ...*tributaryv1.ObjectReference) (changed bool)
	Flush(ctx context.Context) error
	Close()
}

// NewAdapter opens a Sync session over c under settings and returns an
// Adapter feeding it. The session lives until ctx ends or Close is called.
func NewAdapter(ctx context.Context, c *client.Client, settings *Config, opts ...AdapterOption) *Adapter {
	var o adapterOptions
	for _, opt := range opts {
		opt.applyToAdapter(&o)
	}
	a := newAdapter(ctx, o)
	syncSettings := Settings(settings)
	a.session = c.Sync(ctx, syncSettings, a.syncOptions(o.syncOptions)...)
	a.target = newReferencedOnly(a.session, syncSettings)
	return a
}

// newAdapter returns an Adapter with no target yet.
func newAdapter(ctx context.Context, opts adapterOptions) *Adapter {
	a := &Adapter{
		ctx:       ctx,
		clusters:  opts.clusters,
		endpoints: opts.endpoints,
		statuses:  opts.statuses,
		debounce:  opts.debounce,
		unwrap:    opts.unwrap,
		onError:   opts.onFlushError,
		now:       time.Now,
		afterFunc: afterFunc,
	}
	if a.debounce == 0 {
		a.debounce = DefaultDebounce
	}
	if a.unwrap == nil {
		a.unwrap = unwrapByShape
	}
	if a.onError == nil {
		logger := cmp.Or(opts.logger, slog.Default())
		a.onError = func(err error) { logger.Error("tributary: sending informer changes failed", "error", err) }
	}
	return a
}

// syncOptions are the caller's session options with the adapter's update
// handler last, so that it wins.
func (a *Adapter) syncOptions(opts []client.SyncOption) []client.SyncOption {
	return append(append([]client.SyncOption{}, opts...), client.WithUpdateHandler(a.apply))
}

// OnAdd upserts obj. isInInitialList changes nothing: until the first
// Flush, nothing is sent anyway.
func (a *Adapter) OnAdd(obj any, isInInitialList bool) { a.upsert(obj) }

// OnUpdate upserts newObj; a resync that changes nothing sends nothing.
func (a *Adapter) OnUpdate(oldObj, newObj any) { a.upsert(newObj) }

// OnDelete deletes obj, which may be a tombstone (see
// WithTombstoneUnwrapper).
func (a *Adapter) OnDelete(obj any) {
	o, ok := convert(obj)
	if !ok {
		inner, isTombstone := a.unwrap(obj)
		if !isTombstone {
			return
		}
		if o, ok = convert(inner); !ok {
			return
		}
	}
	if a.target.Delete(client.Reference(o)) {
		a.changed()
	}
}

func (a *Adapter) upsert(obj any) {
	o, ok := convert(obj)
	if !ok {
		return
	}
	if a.target.Upsert(o) {
		a.changed()
	}
}

func convert(obj any) (*tributaryv1.KubernetesObject, bool) {
	ro, ok := obj.(runtime.Object)
	if !ok {
		return nil, false
	}
	return Object(ro)
}

// unwrapByShape recognises client-go's cache.DeletedFinalStateUnknown (a
// struct, or pointer to one, with a Key and an interface-typed Obj field)
// without importing client-go, which this module does not otherwise need.
func unwrapByShape(obj any) (any, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, false
	}
	key, inner := v.FieldByName("Key"), v.FieldByName("Obj")
	if !key.IsValid() || key.Kind() != reflect.String || !inner.IsValid() || inner.Kind() != reflect.Interface || !inner.CanInterface() {
		return nil, false
	}
	return inner.Interface(), true
}

// Flush sends every change not yet sent and waits for the answer (see
// client.SyncSession.Flush); the sinks have been called when it returns. The
// first Flush also turns on automatic flushing.
func (a *Adapter) Flush(ctx context.Context) error {
	a.mu.Lock()
	a.started = true
	a.dirty = false
	a.mu.Unlock()
	return a.target.Flush(ctx)
}

// Session returns the underlying session, for its View and Err.
func (a *Adapter) Session() *client.SyncSession { return a.session }

// Close stops automatic flushing and ends the session.
func (a *Adapter) Close() {
	a.mu.Lock()
	a.closed = true
	if a.timer != nil && a.timer.Stop() {
		a.flushes.Done()
	}
	a.mu.Unlock()
	a.target.Close()
	a.flushes.Wait()
}

// changed records a change and, once started, arranges an automatic flush
// unless one is already waiting or running; a flush that finds changes made
// while it ran arranges the next.
func (a *Adapter) changed() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dirty = true
	a.schedule()
}

// schedule arms an automatic flush for the end of the debounce interval
// that began when the last automatic flush started: at once (on a
// goroutine of the timer's, never the informer's) after a quiet period,
// later when a flush started less than an interval ago. Called with a.mu
// held.
func (a *Adapter) schedule() {
	if !a.started || a.scheduled || a.closed || a.debounce < 0 {
		return
	}
	a.scheduled = true
	a.flushes.Add(1)
	wait := max(a.lastAutoFlush.Add(a.debounce).Sub(a.now()), 0)
	a.timer = a.afterFunc(wait, a.autoFlush)
}

func (a *Adapter) autoFlush() {
	defer a.flushes.Done()
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.dirty = false
	a.lastAutoFlush = a.now()
	a.mu.Unlock()
	err := a.target.Flush(a.ctx)
	a.mu.Lock()
	closed := a.closed
	a.mu.Unlock()
	// Errors caused by Close are no news to the caller who closed.
	if err != nil && !closed {
		a.onError(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.scheduled = false
	if a.dirty {
		a.schedule()
	}
}

// apply hands one update to the sinks: Clusters first, so a cache that
// pushes as it goes never sends a ClusterLoadAssignment for a Cluster Envoy
// does not have yet.
func (a *Adapter) apply(u client.Update) {
	if a.clusters != nil && (len(u.Clusters) > 0 || len(u.RemovedClusters) > 0) {
		a.clusters.UpdateClusters(u.Clusters, u.RemovedClusters)
	}
	if a.endpoints != nil && (len(u.ClusterLoadAssignments) > 0 || len(u.RemovedClusterLoadAssignments) > 0) {
		a.endpoints.UpdateClusterLoadAssignments(u.ClusterLoadAssignments, u.RemovedClusterLoadAssignments)
	}
	if a.statuses != nil {
		for _, st := range u.Statuses {
			a.statuses.WriteStatus(st.GetNamespace(), st.GetName(), st)
		}
		for _, n := range u.RemovedStatuses {
			a.statuses.RemoveStatus(n.Namespace, n.Name)
		}
	}
}
