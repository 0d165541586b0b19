package xds

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// streamID identifies a stream: the State-of-the-World and the Delta server
// number their streams each from 1.
type streamID struct {
	variant Variant
	id      int64
}

func (id streamID) String() string { return fmt.Sprintf("%s-%d", id.variant, id.id) }

// streamState is what the cache knows of one xDS stream.
type streamState struct {
	id streamID
	// defaultType is the type of a per-type service's stream ("" for
	// ADS): a Delta request may leave its type out.
	defaultType string
	openedAt    time.Time
	// node is the stream's node, once a request has named it; opened says
	// the stream was logged as open (at its first request, which names the
	// node).
	node   *corev3.Node
	opened bool
	// watches holds the stream's watch of each type it asked for.
	watches map[string]*watch
	// lastRequest is the request handed from the request callback to the
	// watch it creates (a key of cache.requests).
	lastRequest any
}

// watch is one stream's subscription to one type: what it asked for, what
// it was sent, and what changed since. Unlike go-control-plane's watches,
// which end with the response they answer, it lives as long as its stream;
// open says the server waits for a response to it.
type watch struct {
	stream *streamState
	group  *groupState
	typ    *typeState
	delta  bool

	wildcard bool
	// names are the names subscribed to explicitly.
	names map[string]struct{}
	// requestNames are a State-of-the-World request's names as sent: a
	// request that repeats them (as every ACK does) changes nothing.
	requestNames []string
	// sent holds the version of every name the stream was sent and still
	// holds.
	sent map[string]string
	// changed holds the names that changed since the last response and
	// have something to send (a removal the client never heard of has
	// not); changedSince is when the oldest of them changed.
	changed      map[string]struct{}
	changedSince time.Time

	// The open watch: the server's channel and request, and a generation
	// that tells a current cancel function from a stale one.
	open       bool
	generation uint64
	sotwOut    chan cachev3.Response
	sotwReq    *cachev3.Request
	deltaOut   chan cachev3.DeltaResponse
	deltaReq   *cachev3.DeltaRequest
	// owed says the open watch is owed a response even if it has nothing
	// to send (see wakeLocked's force), held back while its group is.
	owed bool
	// serverView is the map handed to the server as the subscription's
	// returned resources. The server keeps and edits its own view; the
	// cache keeps its own in sent, under its lock, and reads nothing of
	// this one.
	serverView map[string]string

	// unseen, while a Delta request is handled, holds the sorted names of
	// the last response if the request does not answer it (see
	// forgetSent).
	unseen []string
	// building holds the names of the response built and not yet sent;
	// response is the last one sent and what became of it (see
	// callbacks.go).
	building []string
	response responseRecord
}

// watchLocked returns the watch of the stream req came on for typeURL,
// creating it, and attaches it to the group of node.
func (c *cache) watchLocked(req any, typeURL string, node *corev3.Node) (*watch, error) {
	st := c.requests[req]
	if st == nil {
		// Only a server that skipped the request callback gets here.
		return nil, status.Error(codes.Internal, "xDS request without its stream")
	}
	delete(c.requests, req)
	st.lastRequest = nil
	if !served(typeURL) {
		return nil, status.Errorf(codes.InvalidArgument, "type %q is not served", clip(typeURL))
	}
	w := st.watches[typeURL]
	if w == nil {
		w = &watch{
			stream:     st,
			delta:      st.id.variant == Delta,
			names:      map[string]struct{}{},
			sent:       map[string]string{},
			changed:    map[string]struct{}{},
			serverView: map[string]string{},
		}
		st.watches[typeURL] = w
		if c.metrics != nil {
			c.metrics.Streams(st.id.variant, typeURL, 1)
		}
	}
	g := c.groupLocked(NodeGroup(node))
	if w.group != g {
		// A node names one group for all the stream's types.
		for t, other := range st.watches {
			if other.group != g {
				c.moveLocked(other, g, t)
				if other != w {
					other.wakeLocked(c, false)
				}
			}
		}
	}
	return w, nil
}

// moveLocked attaches w to g (from the group it was in, if any: a client
// may name another node on a later request). What it was sent stays: a
// version is a content hash, so a resource of the same version in the new
// group is the same resource, and is not sent again.
func (c *cache) moveLocked(w *watch, g *groupState, typeURL string) {
	names, wildcard := w.names, w.wildcard
	if w.group != nil {
		c.detachLocked(w)
	}
	w.group, w.typ = g, g.typ(typeURL)
	g.watches[w] = struct{}{}
	w.names = map[string]struct{}{}
	w.wildcard = false
	c.subscribeLocked(w, slices.Collect(maps.Keys(names)))
	c.setWildcardLocked(w, wildcard)
	// What the stream holds of the old group is sent again where the new
	// group's version differs, and removed where the new group has none.
	now := time.Now()
	for name := range w.sent {
		w.markLocked(name, now)
	}
}

// markLocked notes that name changed (or was subscribed to), and reports
// whether w now has something to send that it had not: the current version
// of a resource the stream does not hold, or the removal of one it holds.
// A name that has nothing to send any more leaves w.changed.
func (w *watch) markLocked(name string, now time.Time) bool {
	r := w.typ.resources[name]
	v, held := w.sent[name]
	if (r != nil && held && v == r.version()) || (r == nil && !held) {
		// The stream holds this version already, or never held what is
		// gone: nothing to send (any more).
		delete(w.changed, name)
		return false
	}
	// A State-of-the-World client cannot be told of the removal of a
	// resource of a type that is not full-state: it keeps what it holds,
	// and is sent the resource again only in another version.
	if r == nil && !w.delta && !fullState(w.typ.typeURL) {
		return false
	}
	// Nor is a stream of a group not known yet (see cache.holding): the
	// group's first publication or the end of the hold marks it again.
	if r == nil && w.group.held {
		return false
	}
	first := len(w.changed) == 0
	if first {
		w.changedSince = now
	}
	w.changed[name] = struct{}{}
	return first
}

// wakeLocked answers w's open watch if it has something to send, or if
// force (the first response a client awaits even when it is empty). The
// answer is built when the server sends it (see response.go), so that a
// stream is sent the latest versions at the moment it is written to, and
// nothing is built for a stream whose watch the server drops.
//
// The watch of a group not known yet (see cache.holding) is not answered,
// even with a resource: the group's first publication answers it with the
// whole of its first state. A first response it is owed waits until then.
func (w *watch) wakeLocked(c *cache, force bool) {
	if !w.open {
		return
	}
	if w.group.held {
		w.owed = w.owed || force
		return
	}
	if len(w.changed) == 0 && !force && !w.owed {
		return
	}
	w.open, w.owed = false, false
	var sent bool
	if w.delta {
		select {
		case w.deltaOut <- &deltaResponse{c: c, w: w, req: w.deltaReq}:
			sent = true
		default:
		}
	} else {
		select {
		case w.sotwOut <- &sotwResponse{c: c, w: w, req: w.sotwReq}:
			sent = true
		default:
		}
	}
	if !sent {
		// The server's channels hold one response per watch it waits
		// for: a full one means the server broke that promise. The
		// changes stay marked and go with the next response.
		c.logger.Error("xDS response channel full; the stream gets the change with its next response", "stream", w.stream.id.String())
	}
}

// openSotWLocked opens w for a State-of-the-World request and returns its
// cancel function. A request that repeats the last one's names changes no
// subscription; a request with no version of this server (the stream's
// first, or one to a restarted server) is answered at once with everything
// it subscribes to, or, while its group is held back, once the group is
// known (see wakeLocked).
func (w *watch) openSotWLocked(c *cache, req *cachev3.Request, sub cachev3.Subscription, out chan cachev3.Response) (func(), error) {
	if !slices.Equal(req.GetResourceNames(), w.requestNames) || sub.IsWildcard() != w.wildcard {
		subscribed := sub.SubscribedResources()
		var gone []string
		for name := range w.names {
			if _, ok := subscribed[name]; !ok {
				gone = append(gone, name)
			}
		}
		c.subscribeLocked(w, req.GetResourceNames())
		c.setWildcardLocked(w, sub.IsWildcard())
		c.unsubscribeLocked(w, gone)
		distinct := len(subscribed)
		if slices.Contains(req.GetResourceNames(), "*") {
			distinct++ // the wildcard is not among subscribed
		}
		if len(req.GetResourceNames()) != distinct {
			// The limits count distinct names; a request that repeats
			// them would be kept (see requestNames) at any size.
			return nil, status.Error(codes.InvalidArgument, "a State-of-the-World request names a resource more than once")
		}
		w.requestNames = req.GetResourceNames()
	}
	// A NACK of a stream's first response of a type carries no version:
	// it is not a request for everything, which would resend the rejected
	// resources in a loop.
	fresh := req.GetErrorDetail() == nil && !strings.HasPrefix(req.GetVersionInfo(), c.versionPrefix)
	if fresh {
		clear(w.sent)
		c.markAllLocked(w)
	}
	w.open, w.generation = true, w.generation+1
	w.sotwReq, w.sotwOut = req, out
	w.wakeLocked(c, fresh)
	return w.cancel(c), nil
}

// openDeltaLocked opens w for a Delta request and returns its cancel
// function. The first request's initial_resource_versions are what the
// stream holds already (a client reconnecting); a wildcard stream's first
// request is answered at once, even when empty, or, while its group is held
// back, once the group is known (see wakeLocked).
func (w *watch) openDeltaLocked(c *cache, req *cachev3.DeltaRequest, sub cachev3.Subscription, out chan cachev3.DeltaResponse) func() {
	// The last response's names may still be on their way to a client
	// that asks without having seen it.
	w.unseen = nil
	if req.GetResponseNonce() != w.response.nonce {
		w.unseen = w.response.names
	}
	defer func() { w.unseen = nil }()
	first := req.GetResponseNonce() == ""
	// The wildcard first: a name unsubscribed from is sent again only if
	// the stream keeps its wildcard subscription (see unsubscribeLocked).
	c.subscribeLocked(w, req.GetResourceNamesSubscribe())
	c.setWildcardLocked(w, sub.IsWildcard())
	c.unsubscribeLocked(w, req.GetResourceNamesUnsubscribe())
	if first {
		// What a reconnecting client holds of what it subscribes to is
		// sent again only where it changed, and removed where it is gone;
		// what it holds of anything else is none of the server's business.
		now := time.Now()
		for name, v := range req.GetInitialResourceVersions() {
			if w.subscribes(name) {
				w.sent[strings.Clone(name)] = v
				w.markLocked(name, now)
			}
		}
	}
	clear(w.serverView)
	w.open, w.generation = true, w.generation+1
	w.deltaReq, w.deltaOut = req, out
	w.wakeLocked(c, first && w.wildcard)
	return w.cancel(c)
}

// markAllLocked marks every name w subscribes to.
func (c *cache) markAllLocked(w *watch) {
	now := time.Now()
	for name := range w.names {
		w.markLocked(name, now)
	}
	if w.wildcard {
		for name := range w.typ.resources {
			w.markLocked(name, now)
		}
	}
}

// cancel returns the cancel function of w's current open watch. The server
// calls it before it handles the stream's next request of the type, and
// when the stream ends.
func (w *watch) cancel(c *cache) func() {
	generation := w.generation
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if w.generation == generation {
			w.open = false
			w.sotwOut, w.sotwReq, w.deltaOut, w.deltaReq = nil, nil, nil, nil
		}
	}
}

// clip cuts a client's string to a length fit for a log line or an error.
func clip(s string) string { return clipTo(s, 128) }

// clipTo cuts s to at most n bytes, saying how long it was.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", strings.ToValidUTF8(s[:n], ""), len(s))
}
