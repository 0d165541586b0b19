package xds

import (
	"context"
	"slices"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/types/known/anypb"
)

// Nack is one response an xDS client rejected.
type Nack struct {
	// NodeID and NodeGroup identify the client (see NodeGroup).
	NodeID, NodeGroup string
	// TypeURL is the type of the rejected resources.
	TypeURL string
	// ResourceNames are the resources the rejected response carried, sorted.
	ResourceNames []string
	// ErrorDetail is the client's reason.
	ErrorDetail string
	// RejectedVersion is the rejected response's version_info (State of the
	// World) or system_version_info (Delta); AcceptedVersion is the version
	// the client keeps using (State of the World only).
	RejectedVersion, AcceptedVersion string
	// Delta says the client spoke incremental xDS.
	Delta bool
}

// nackTracker implements go-control-plane's server callbacks to notice
// NACKs. It remembers, per stream and type, the last response sent (a
// client can only NACK that one: the server ignores requests with an older
// nonce), and reports a NACK of it once, however often the client repeats
// it.
type nackTracker struct {
	report func(Nack)
	// sent is told how many resources of a type each response carries.
	sent func(typeURL string, n int)

	mu sync.Mutex
	// sotw and delta streams are numbered by separate counters, hence two
	// maps.
	sotw, delta map[int64]*trackedStream
}

type trackedStream struct {
	// node is the stream's node: clients may send it on the first request
	// only.
	node *corev3.Node
	last map[string]*sentResponse // by type URL
}

// sentResponse is the last response of one type on one stream.
type sentResponse struct {
	nonce, version string
	// names holds a Delta response's resource names; resources holds a
	// State-of-the-World response's resources, whose names are decoded only
	// if the response is NACKed.
	names     []string
	resources []*anypb.Any
	reported  bool
}

func newNackTracker(report func(Nack), sent func(string, int)) *nackTracker {
	return &nackTracker{report: report, sent: sent, sotw: map[int64]*trackedStream{}, delta: map[int64]*trackedStream{}}
}

var _ serverv3.Callbacks = (*nackTracker)(nil)

func (t *nackTracker) stream(streams map[int64]*trackedStream, id int64) *trackedStream {
	s := streams[id]
	if s == nil {
		s = &trackedStream{last: map[string]*sentResponse{}}
		streams[id] = s
	}
	return s
}

// OnStreamOpen implements sotw.Callbacks.
func (t *nackTracker) OnStreamOpen(context.Context, int64, string) error { return nil }

// OnStreamClosed implements sotw.Callbacks.
func (t *nackTracker) OnStreamClosed(id int64, _ *corev3.Node) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.sotw, id)
}

// OnStreamRequest implements sotw.Callbacks: it reports a NACK of the last
// response of the request's type.
func (t *nackTracker) OnStreamRequest(id int64, req *discoveryv3.DiscoveryRequest) error {
	nack, ok := t.sotwNack(id, req)
	if ok {
		t.report(nack)
	}
	return nil
}

// ackRequest is what State-of-the-World and Delta requests share for
// acknowledging a response.
type ackRequest interface {
	GetNode() *corev3.Node
	GetTypeUrl() string
	GetResponseNonce() string
	GetErrorDetail() *rpcstatus.Status
}

// refused records req's node on its stream and, when req NACKs the last
// response of its type on that stream and that NACK was not reported yet,
// returns the refused response and the node. A client that keeps NACKing the
// same response is reported once.
func (t *nackTracker) refused(streams map[int64]*trackedStream, id int64, req ackRequest) (*sentResponse, *corev3.Node, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stream(streams, id)
	if req.GetNode() != nil {
		s.node = req.GetNode()
	}
	if req.GetErrorDetail() == nil {
		return nil, nil, false
	}
	sent := s.last[req.GetTypeUrl()]
	if sent == nil || sent.reported || sent.nonce != req.GetResponseNonce() {
		return nil, nil, false
	}
	sent.reported = true
	return sent, s.node, true
}

func (t *nackTracker) sotwNack(id int64, req *discoveryv3.DiscoveryRequest) (Nack, bool) {
	sent, node, ok := t.refused(t.sotw, id, req)
	if !ok {
		return Nack{}, false
	}
	// A stored response is never changed (a newer one replaces it), so its
	// names can be decoded outside the lock.
	return Nack{
		NodeID:          node.GetId(),
		NodeGroup:       NodeGroup(node),
		TypeURL:         req.GetTypeUrl(),
		ResourceNames:   resourceNames(sent.resources),
		ErrorDetail:     req.GetErrorDetail().GetMessage(),
		RejectedVersion: sent.version,
		AcceptedVersion: req.GetVersionInfo(),
	}, true
}

// OnStreamResponse implements sotw.Callbacks.
func (t *nackTracker) OnStreamResponse(_ context.Context, id int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
	t.sent(resp.GetTypeUrl(), len(resp.GetResources()))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stream(t.sotw, id).last[resp.GetTypeUrl()] = &sentResponse{nonce: resp.GetNonce(), version: resp.GetVersionInfo(), resources: resp.GetResources()}
}

// OnDeltaStreamOpen implements delta.Callbacks.
func (t *nackTracker) OnDeltaStreamOpen(context.Context, int64, string) error { return nil }

// OnDeltaStreamClosed implements delta.Callbacks.
func (t *nackTracker) OnDeltaStreamClosed(id int64, _ *corev3.Node) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.delta, id)
}

// OnStreamDeltaRequest implements delta.Callbacks.
func (t *nackTracker) OnStreamDeltaRequest(id int64, req *discoveryv3.DeltaDiscoveryRequest) error {
	nack, ok := t.deltaNack(id, req)
	if ok {
		t.report(nack)
	}
	return nil
}

func (t *nackTracker) deltaNack(id int64, req *discoveryv3.DeltaDiscoveryRequest) (Nack, bool) {
	sent, node, ok := t.refused(t.delta, id, req)
	if !ok {
		return Nack{}, false
	}
	// Sorted here, once, rather than on every response: refused hands a
	// response out only once, so nothing else reads its names meanwhile.
	slices.Sort(sent.names)
	return Nack{
		NodeID:          node.GetId(),
		NodeGroup:       NodeGroup(node),
		TypeURL:         req.GetTypeUrl(),
		ResourceNames:   sent.names,
		ErrorDetail:     req.GetErrorDetail().GetMessage(),
		RejectedVersion: sent.version,
		Delta:           true,
	}, true
}

// OnStreamDeltaResponse implements delta.Callbacks.
func (t *nackTracker) OnStreamDeltaResponse(id int64, _ *discoveryv3.DeltaDiscoveryRequest, resp *discoveryv3.DeltaDiscoveryResponse) {
	names := make([]string, 0, len(resp.GetResources()))
	for _, r := range resp.GetResources() {
		names = append(names, r.GetName())
	}
	t.sent(resp.GetTypeUrl(), len(names))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stream(t.delta, id).last[resp.GetTypeUrl()] = &sentResponse{nonce: resp.GetNonce(), version: resp.GetSystemVersionInfo(), names: names}
}

// OnFetchRequest implements rest.Callbacks (REST is not served).
func (t *nackTracker) OnFetchRequest(context.Context, *discoveryv3.DiscoveryRequest) error {
	return nil
}

// OnFetchResponse implements rest.Callbacks.
func (t *nackTracker) OnFetchResponse(*discoveryv3.DiscoveryRequest, *discoveryv3.DiscoveryResponse) {
}

// resourceNames decodes the names of a State-of-the-World response's
// resources, sorted; one that does not decode is left out.
func resourceNames(resources []*anypb.Any) []string {
	names := make([]string, 0, len(resources))
	for _, a := range resources {
		m, err := a.UnmarshalNew()
		if err != nil {
			continue
		}
		if name := cachev3.GetResourceName(m); name != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
