package xds

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// NodeGroup is the group an xDS client belongs to: its node.cluster, or its
// node.id when node.cluster is empty. A Sync session publishes to a group,
// so every replica of one proxy deployment (same node.cluster, distinct
// node.id) sees the same resources, while a lone client can be addressed by
// its id alone.
func NodeGroup(node *corev3.Node) string {
	if c := node.GetCluster(); c != "" {
		return c
	}
	return node.GetId()
}

// served reports whether typeURL is a type of xDS resource the cache
// serves: any go-control-plane knows. Tributary publishes Clusters,
// ClusterLoadAssignments and Listeners; a client asking for another
// known type (an Envoy's RDS, say) is answered that there is none, as a
// client of an empty group is, rather than having its stream ended. An
// unknown type ends the stream, so that a client cannot make the server
// keep state for arbitrary type URLs.
func served(typeURL string) bool {
	return cachev3.GetResponseType(typeURL) != types.UnknownType
}

// fullState reports whether a State-of-the-World response of typeURL must
// hold every resource the client subscribes to (CDS and LDS), rather than
// only those that changed (EDS).
func fullState(typeURL string) bool {
	return cachev3.ResourceRequiresFullStateInSotw(typeURL)
}

// cache is the cache behind go-control-plane's xDS server, and its stream
// callbacks. It replaces go-control-plane's LinearCache, whose every change
// and every re-watch after an ACK compares the version of every name a
// stream subscribes to, so that the cost of a change grew with the names
// each stream holds rather than with the streams that hold the names that
// changed.
//
// The cache's guarantees, which its tests check against a model:
//   - a change of K resources of a group with S streams subscribed to them
//     costs O(K·S) under the lock; an ACK or re-watch costs what its request
//     holds (a Delta request's names, a State-of-the-World request's full
//     list) and nothing proportional to the names a stream already holds;
//   - every resource version is decoded and validated once (by the
//     Publisher, see intern), and its bytes are held once, shared by every
//     group and stream it is sent to;
//   - a stream is never sent what it was sent already, NACKed or not: each
//     (stream, type) keeps the version it was last sent of every name;
//   - a stream that is not reading is sent, when it asks again, the latest
//     version of each resource that changed meanwhile: changes are merged
//     into a set of names per (stream, type), never queued;
//   - publishing never blocks on a stream: a (stream, type) is woken by a
//     response that is built when the server sends it;
//   - a group's state goes when nothing is published to it and its last
//     stream closes;
//   - while the cache holds back (see holding), a group that nothing has
//     been published to yet is told nothing that says a resource does not
//     exist: no State-of-the-World first response (which, empty, would
//     say that no Cluster or Listener exists), no Delta removal, nor any
//     other response. When a Publication's first update has been applied
//     (see markKnown), its streams are sent exactly the published state
//     (over Delta with the removal of only those names the stream holds
//     that the group does not publish); when the hold ends, exactly what
//     they would have been sent without it.
//
// It identifies the stream a watch belongs to through the callbacks: the
// server calls OnStreamRequest (or OnStreamDeltaRequest) with a request on
// the stream's goroutine right before it calls CreateWatch (or
// CreateDeltaWatch) with the same request.
type cache struct {
	versionPrefix string
	limits        Limits
	logger        *slog.Logger
	metrics       Metrics
	// report is told of every NACK, outside the lock.
	report func(Nack)

	mu      sync.Mutex
	groups  map[string]*groupState
	streams map[streamID]*streamState
	// requests maps a request being handled to its stream: from the
	// request callback to the watch it creates.
	requests map[any]*streamState
	// interned holds every resource version published to some group.
	interned map[resourceKey]*resource
	// version counts changes: State-of-the-World responses carry it as
	// version_info, Delta responses as system_version_info.
	version uint64
	// names counts the names all streams subscribe to (Limits.MaxNames).
	names int
	// holding is set for the Publisher's first grace period: a server
	// that has just started cannot know what the sessions of the server
	// before it published, so it holds back every answer that would
	// say a resource does not exist to the clients of a group that no
	// Publication has published to yet, as the previous server would have
	// kept the group's resources for the grace period after its sessions
	// ended. known holds, meanwhile, the groups published to, which stay
	// known when their state goes (forgetLocked).
	holding bool
	known   map[string]struct{}
}

func newCache(versionPrefix string, limits Limits, logger *slog.Logger, metrics Metrics, report func(Nack), holding bool) *cache {
	return &cache{
		holding:       holding,
		known:         map[string]struct{}{},
		versionPrefix: versionPrefix,
		limits:        limits.withDefaults(),
		logger:        logger,
		metrics:       metrics,
		report:        report,
		groups:        map[string]*groupState{},
		streams:       map[streamID]*streamState{},
		requests:      map[any]*streamState{},
		interned:      map[resourceKey]*resource{},
	}
}

var _ cachev3.Cache = (*cache)(nil)

// withDefaults fills the zero limits with their defaults.
func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxStreams, DefaultMaxStreams)
	def(&l.MaxNamesPerStream, DefaultMaxNamesPerStream)
	def(&l.MaxNames, DefaultMaxNames)
	def(&l.MaxNodeLength, DefaultMaxNodeLength)
	return l
}

// resourceKey names one version of one resource.
type resourceKey struct{ typeURL, name, version string }

// resource is one validated version of a resource, ready to send. It is
// never changed once interned: responses on many streams share its Any.
type resource struct {
	key resourceKey
	any *anypb.Any
	// refs counts the groups that publish it.
	refs int
}

func (r *resource) name() string    { return r.key.name }
func (r *resource) version() string { return r.key.version }

// groupState is what the cache holds for one node group.
type groupState struct {
	name string
	// types holds a typeState for every type published to the group or
	// asked for by one of its streams.
	types map[string]*typeState
	// watches holds the (stream, type) watches of the group's clients.
	watches map[*watch]struct{}
	// held says that the group is not known yet (see cache.holding): its
	// watches are not answered, and a removal is not marked for them.
	held bool
}

// typeState is one type's resources in a group and who subscribes to them.
type typeState struct {
	typeURL   string
	resources map[string]*resource
	// subscribers holds, by name, the watches that subscribe to it
	// explicitly; wildcards those that subscribe to every name.
	subscribers map[string]map[*watch]struct{}
	wildcards   map[*watch]struct{}
}

func (c *cache) groupLocked(name string) *groupState {
	g := c.groups[name]
	if g == nil {
		_, known := c.known[name]
		g = &groupState{name: name, types: map[string]*typeState{}, watches: map[*watch]struct{}{}, held: c.holding && !known}
		c.groups[name] = g
	}
	return g
}

// markKnown marks the group named name known, once a Publication's
// update has been applied to it (the whole of its first state, so that its
// clients are sent one consistent answer), and answers its watches as if
// the group had never been held (see releaseGroupLocked).
func (c *cache) markKnown(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.holding {
		return
	}
	c.known[name] = struct{}{}
	if g := c.groups[name]; g != nil {
		c.releaseGroupLocked(g)
	}
}

// endHold ends the hold: every group is known, and every held watch is
// answered as it would have been without the hold. It returns the names
// of the groups whose clients were held until then, sorted.
func (c *cache) endHold() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.holding {
		return nil
	}
	c.holding, c.known = false, nil
	var held []string
	for _, g := range c.groups {
		if g.held && len(g.watches) > 0 {
			held = append(held, g.name)
		}
		c.releaseGroupLocked(g)
	}
	slices.Sort(held)
	return held
}

// releaseGroupLocked ends g's hold: what its watches were not told
// meanwhile, the removal of what a stream holds that the group does not
// publish (a Delta stream's names that do not exist among them), is marked
// now, and every watch with something to send, or a first response owed,
// is answered.
func (c *cache) releaseGroupLocked(g *groupState) {
	if !g.held {
		return
	}
	g.held = false
	now := time.Now()
	for w := range g.watches {
		for name := range w.sent {
			w.markLocked(name, now)
		}
		w.wakeLocked(c, false)
	}
}

// typ returns g's typeState of typeURL, creating it.
func (g *groupState) typ(typeURL string) *typeState {
	t := g.types[typeURL]
	if t == nil {
		t = &typeState{
			typeURL:     typeURL,
			resources:   map[string]*resource{},
			subscribers: map[string]map[*watch]struct{}{},
			wildcards:   map[*watch]struct{}{},
		}
		g.types[typeURL] = t
	}
	return t
}

// forgetLocked drops g once it holds no resource and no watch.
func (c *cache) forgetLocked(g *groupState) {
	if len(g.watches) > 0 || c.groups[g.name] != g {
		return
	}
	for _, t := range g.types {
		if len(t.resources) > 0 {
			return
		}
	}
	delete(c.groups, g.name)
}

// publishes reports whether group publishes typeURL's resource named name.
func (c *cache) publishes(group, typeURL, name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil || g.types[typeURL] == nil {
		return false
	}
	_, ok := g.types[typeURL].resources[name]
	return ok
}

// published returns the names of what group publishes, by type URL (the
// types with none left out).
func (c *cache) published(group string) map[string]map[string]struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]map[string]struct{}{}
	if g := c.groups[group]; g != nil {
		for typeURL, t := range g.types {
			if len(t.resources) == 0 {
				continue
			}
			names := make(map[string]struct{}, len(t.resources))
			for name := range t.resources {
				names[name] = struct{}{}
			}
			out[typeURL] = names
		}
	}
	return out
}

// interned returns the interned resource of key, if any: a version some
// group publishes already needs no decoding or validation.
func (c *cache) internedResource(key resourceKey) *resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.interned[key]
}

// update publishes upserts and withdraws deletes in one type of group, and
// wakes every watch that now has something to be sent. A resource whose
// version is already published is left alone. Upserts not yet interned are
// interned (when two groups validated the same new version at once, the
// first one interned wins).
func (c *cache) update(group, typeURL string, upserts []*resource, deletes []string) {
	if len(upserts) == 0 && len(deletes) == 0 {
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groupLocked(group)
	t := g.typ(typeURL)
	c.version++
	woken := map[*watch]struct{}{}
	for _, r := range upserts {
		if old := t.resources[r.name()]; old != nil {
			if old.version() == r.version() {
				continue
			}
			c.releaseLocked(old)
		}
		r = c.internLocked(r)
		t.resources[r.name()] = r
		c.markLocked(t, r.name(), now, woken)
	}
	for _, name := range deletes {
		old := t.resources[name]
		if old == nil {
			continue
		}
		delete(t.resources, name)
		c.releaseLocked(old)
		c.markLocked(t, name, now, woken)
	}
	for w := range woken {
		w.wakeLocked(c, false)
	}
	c.forgetLocked(g)
}

func (c *cache) internLocked(r *resource) *resource {
	if in := c.interned[r.key]; in != nil {
		r = in
	} else {
		c.interned[r.key] = r
	}
	r.refs++
	return r
}

func (c *cache) releaseLocked(r *resource) {
	r.refs--
	if r.refs == 0 {
		delete(c.interned, r.key)
	}
}

// markLocked marks name changed for every watch that subscribes to it, and
// collects in woken those that now have something to send.
func (c *cache) markLocked(t *typeState, name string, now time.Time, woken map[*watch]struct{}) {
	for w := range t.subscribers[name] {
		if w.markLocked(name, now) {
			woken[w] = struct{}{}
		}
	}
	for w := range t.wildcards {
		if w.markLocked(name, now) {
			woken[w] = struct{}{}
		}
	}
}

// CreateWatch opens a State-of-the-World watch: see (*watch).openSotW.
func (c *cache) CreateWatch(req *cachev3.Request, sub cachev3.Subscription, out chan cachev3.Response) (func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, err := c.watchLocked(req, req.GetTypeUrl(), req.GetNode())
	if err != nil {
		return nil, err
	}
	return w.openSotWLocked(c, req, sub, out)
}

// CreateDeltaWatch opens a Delta watch: see (*watch).openDelta.
func (c *cache) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, out chan cachev3.DeltaResponse) (func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, err := c.watchLocked(req, req.GetTypeUrl(), req.GetNode())
	if err != nil {
		return nil, err
	}
	return w.openDeltaLocked(c, req, sub, out), nil
}

// Fetch is not served: the REST (polling) xDS variant is not registered.
func (c *cache) Fetch(context.Context, *cachev3.Request) (cachev3.Response, error) {
	return nil, errors.New("fetch is not served")
}
