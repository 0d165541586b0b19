package xds

import (
	"context"
	"maps"
	"slices"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// The cache is also the server's callbacks: they tell it which stream a
// request comes on, what was sent, and what the client answered.
var _ serverv3.Callbacks = (*cache)(nil)

// maxNackDetail bounds a client's NACK message as logged and reported.
const maxNackDetail = 1024

// responseRecord is the last response of one type sent on one stream, and
// what the client made of the responses.
type responseRecord struct {
	nonce, version string
	// names are the resources the response carried, sorted.
	names    []string
	sentAt   time.Time
	answered bool // ACKed or NACKed: a repeated NACK is reported once

	lastAcked, lastNacked, nackDetail string
	ackedAt                           time.Time
}

// OnStreamOpen implements sotw.Callbacks.
func (c *cache) OnStreamOpen(_ context.Context, id int64, typeURL string) error {
	return c.openStream(streamID{SotW, id}, typeURL)
}

// OnDeltaStreamOpen implements delta.Callbacks.
func (c *cache) OnDeltaStreamOpen(_ context.Context, id int64, typeURL string) error {
	return c.openStream(streamID{Delta, id}, typeURL)
}

// openStream admits a stream within Limits.MaxStreams.
func (c *cache) openStream(id streamID, typeURL string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.streams); n >= c.limits.MaxStreams {
		return status.Errorf(codes.ResourceExhausted, "the server has %d xDS streams open, its limit (--xds-max-streams)", n)
	}
	if !served(typeURL) {
		typeURL = "" // ADS
	}
	c.streams[id] = &streamState{id: id, defaultType: typeURL, openedAt: time.Now(), watches: map[string]*watch{}}
	return nil
}

// OnStreamClosed implements sotw.Callbacks.
func (c *cache) OnStreamClosed(id int64, _ *corev3.Node) { c.closeStream(streamID{SotW, id}) }

// OnDeltaStreamClosed implements delta.Callbacks.
func (c *cache) OnDeltaStreamClosed(id int64, _ *corev3.Node) { c.closeStream(streamID{Delta, id}) }

// closeStream forgets a stream and its watches.
func (c *cache) closeStream(id streamID) {
	c.mu.Lock()
	st := c.streams[id]
	if st == nil { // refused by openStream
		c.mu.Unlock()
		return
	}
	delete(c.streams, id)
	delete(c.requests, st.lastRequest)
	for typeURL, w := range st.watches {
		w.open = false
		if w.group != nil {
			c.detachLocked(w)
		}
		if c.metrics != nil {
			c.metrics.Streams(id.variant, typeURL, -1)
		}
	}
	c.mu.Unlock()
	if st.opened {
		c.logger.Info("xDS stream closed", "stream", id.String(), "node", clip(st.node.GetId()), "group", clip(NodeGroup(st.node)),
			"duration", time.Since(st.openedAt).Round(time.Millisecond))
	}
}

// OnStreamRequest implements sotw.Callbacks.
func (c *cache) OnStreamRequest(id int64, req *discoveryv3.DiscoveryRequest) error {
	if err := checkNames(req.GetResourceNames()); err != nil {
		return err
	}
	return c.request(streamID{SotW, id}, req, req, func(w *watch) int {
		// A State-of-the-World request names all it subscribes to.
		return len(req.GetResourceNames()) - len(w.names)
	})
}

// OnStreamDeltaRequest implements delta.Callbacks.
func (c *cache) OnStreamDeltaRequest(id int64, req *discoveryv3.DeltaDiscoveryRequest) error {
	if err := checkNames(req.GetResourceNamesSubscribe()); err != nil {
		return err
	}
	if err := checkNames(req.GetResourceNamesUnsubscribe()); err != nil {
		return err
	}
	if err := checkNames(slices.Collect(maps.Keys(req.GetInitialResourceVersions()))); err != nil {
		return err
	}
	return c.request(streamID{Delta, id}, req, req, func(*watch) int {
		return len(req.GetResourceNamesSubscribe()) // at most this many more
	})
}

// maxNodeBytes bounds a client's node, metadata included, which the server
// keeps for the stream's life: Envoy's is a few KiB.
const maxNodeBytes = 64 << 10

// maxNameLength bounds the resource names a client may ask for: longer
// than any Tributary serves ("extension/", a namespace of at most 63 bytes,
// "/", a name of at most 253), so that a client's names cannot make the
// server hold more than its requests' size per name.
const maxNameLength = 512

// checkNames refuses a request with a name over maxNameLength.
func checkNames(names []string) error {
	for _, name := range names {
		if len(name) > maxNameLength {
			return status.Errorf(codes.InvalidArgument, "a resource name is %d bytes, longer than any this server serves (%d)", len(name), maxNameLength)
		}
	}
	return nil
}

// request is a request of either variant.
type request interface {
	GetNode() *corev3.Node
	GetTypeUrl() string
	GetResponseNonce() string
	GetErrorDetail() *rpcstatus.Status
}

// request checks a request against the limits, notes an ACK or NACK of the
// last response of its type, and hands the request on to the watch it
// will create. growth tells how many names the request adds to its watch's
// subscription (at most).
func (c *cache) request(id streamID, key any, req request, growth func(*watch) int) error {
	node := req.GetNode()
	if node != nil {
		if n := len(node.GetId()); n > c.limits.MaxNodeLength {
			return status.Errorf(codes.InvalidArgument, "node.id is %d bytes, over the limit of %d (--xds-max-node-length)", n, c.limits.MaxNodeLength)
		}
		if n := len(node.GetCluster()); n > c.limits.MaxNodeLength {
			return status.Errorf(codes.InvalidArgument, "node.cluster is %d bytes, over the limit of %d (--xds-max-node-length)", n, c.limits.MaxNodeLength)
		}
		if n := proto.Size(node); n > maxNodeBytes {
			return status.Errorf(codes.InvalidArgument, "node is %d bytes, over the limit of %d", n, maxNodeBytes)
		}
	}
	now := time.Now()
	c.mu.Lock()
	st := c.streams[id]
	if st == nil {
		c.mu.Unlock()
		return status.Error(codes.Internal, "xDS request on a stream that was never opened")
	}
	typeURL := req.GetTypeUrl()
	if typeURL == "" {
		typeURL = st.defaultType
	}
	if !served(typeURL) {
		c.mu.Unlock()
		return status.Errorf(codes.InvalidArgument, "type %q is not served", clip(typeURL))
	}
	w := st.watches[typeURL]
	if w == nil {
		w = &watch{} // for the counts only
	}
	if grown := growth(w); grown > 0 {
		if n := len(w.names) + grown; n > c.limits.MaxNamesPerStream {
			c.mu.Unlock()
			return status.Errorf(codes.ResourceExhausted, "a stream subscribes to %d names of %s, over the limit of %d (--xds-max-names-per-stream)", n, typeURL, c.limits.MaxNamesPerStream)
		}
		if n := c.names + grown; n > c.limits.MaxNames {
			c.mu.Unlock()
			return status.Errorf(codes.ResourceExhausted, "xDS streams would subscribe to %d names together, over the limit of %d (--xds-max-names)", n, c.limits.MaxNames)
		}
	}
	// Logged as open once a request that names the node is admitted, so
	// that a stream refused at once logs neither its opening nor its end.
	opened := false
	if node != nil {
		st.node = node
		opened, st.opened = !st.opened, true
	}
	nack, nacked := c.answerLocked(st, w, typeURL, req, now)
	delete(c.requests, st.lastRequest)
	c.requests[key] = st
	st.lastRequest = key
	c.mu.Unlock()

	if opened {
		c.logger.Info("xDS stream opened", "stream", id.String(), "node", clip(node.GetId()), "group", clip(NodeGroup(node)))
	}
	if nacked {
		c.report(nack)
	}
	return nil
}

// answerLocked notes what req says of the last response of its type on
// the stream, if it answers that response: an ACK, or a NACK to report.
// The server ignores requests with an older nonce, and so does this.
func (c *cache) answerLocked(st *streamState, w *watch, typeURL string, req request, now time.Time) (Nack, bool) {
	last := &w.response
	if last.nonce == "" || req.GetResponseNonce() != last.nonce || last.answered {
		return Nack{}, false
	}
	last.answered = true
	if req.GetErrorDetail() == nil {
		last.lastAcked, last.ackedAt = last.version, now
		if c.metrics != nil {
			c.metrics.SendToAck(typeURL, now.Sub(last.sentAt))
		}
		return Nack{}, false
	}
	detail := clipTo(req.GetErrorDetail().GetMessage(), maxNackDetail)
	last.lastNacked, last.nackDetail = last.version, detail
	n := Nack{
		NodeID:          st.node.GetId(),
		NodeGroup:       NodeGroup(st.node),
		TypeURL:         typeURL,
		ResourceNames:   last.names,
		ErrorDetail:     detail,
		RejectedVersion: last.version,
		Delta:           st.id.variant == Delta,
	}
	if r, ok := req.(*discoveryv3.DiscoveryRequest); ok {
		n.AcceptedVersion = clip(r.GetVersionInfo()) // the client's own string
	}
	return n, true
}

// OnStreamResponse implements sotw.Callbacks.
func (c *cache) OnStreamResponse(_ context.Context, id int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
	c.sent(streamID{SotW, id}, resp.GetTypeUrl(), resp.GetNonce(), resp.GetVersionInfo(), len(resp.GetResources()))
}

// OnStreamDeltaResponse implements delta.Callbacks.
func (c *cache) OnStreamDeltaResponse(id int64, _ *discoveryv3.DeltaDiscoveryRequest, resp *discoveryv3.DeltaDiscoveryResponse) {
	c.sent(streamID{Delta, id}, resp.GetTypeUrl(), resp.GetNonce(), resp.GetSystemVersionInfo(), len(resp.GetResources()))
}

// sent records the response just built for a watch (see builtLocked) as
// its last one, under the nonce the server gave it.
func (c *cache) sent(id streamID, typeURL, nonce, version string, n int) {
	if c.metrics != nil {
		c.metrics.Sent(typeURL, n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.streams[id]
	if st == nil {
		return
	}
	w := st.watches[typeURL]
	if w == nil {
		return
	}
	r := &w.response
	r.nonce, r.version, r.names, r.sentAt, r.answered = nonce, version, w.building, time.Now(), false
	w.building = nil
}

// OnFetchRequest implements rest.Callbacks (REST is not served).
func (c *cache) OnFetchRequest(context.Context, *discoveryv3.DiscoveryRequest) error { return nil }

// OnFetchResponse implements rest.Callbacks.
func (c *cache) OnFetchResponse(*discoveryv3.DiscoveryRequest, *discoveryv3.DiscoveryResponse) {}
