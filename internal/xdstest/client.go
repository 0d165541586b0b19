// Package xdstest holds the xDS clients that tests of several packages
// share: SotWClient and DeltaClient, raw ADS streams a test drives one
// message at a time, and Watcher, which ACKs on its own like an Envoy and
// keeps the resources it accepted.
//
// It is an ordinary package rather than a _test file so that tests of
// different packages can import it; only tests import it. Every helper
// fails the test it is given instead of returning errors, except where a
// caller needs the error itself (Watcher.Await, Watcher.State).
package xdstest

import (
	"context"
	"slices"
	"testing"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
)

// stream is a raw ADS stream of either protocol, which fails its test on
// any error.
type stream[Req, Resp any] struct {
	tb     testing.TB
	stream grpc.BidiStreamingClient[Req, Resp]
}

// openStream opens an ADS stream with open, which names the method in
// errors; the stream ends with the test.
func openStream[Req, Resp any](tb testing.TB, method string, open func(context.Context, ...grpc.CallOption) (grpc.BidiStreamingClient[Req, Resp], error)) stream[Req, Resp] {
	tb.Helper()
	ctx, cancel := context.WithCancel(tb.Context())
	tb.Cleanup(cancel)
	s, err := open(ctx)
	if err != nil {
		tb.Fatalf("%s: %v", method, err)
	}
	return stream[Req, Resp]{tb: tb, stream: s}
}

// Send sends req as it is.
func (c *stream[Req, Resp]) Send(req *Req) {
	c.tb.Helper()
	if err := c.stream.Send(req); err != nil {
		c.tb.Fatalf("Send: %v", err)
	}
}

// CloseSend ends the client's side of the stream, as a client that goes
// away does.
func (c *stream[Req, Resp]) CloseSend() {
	c.tb.Helper()
	if err := c.stream.CloseSend(); err != nil {
		c.tb.Fatalf("CloseSend: %v", err)
	}
}

// Recv waits for the next response.
func (c *stream[Req, Resp]) Recv() *Resp {
	c.tb.Helper()
	resp, err := c.stream.Recv()
	if err != nil {
		c.tb.Fatalf("Recv: %v", err)
	}
	return resp
}

// SotWClient is a raw State-of-the-World ADS stream
// (StreamAggregatedResources). It sends nothing on its own: the test sends
// each request and reads each response. The stream ends with the test.
type SotWClient struct {
	stream[discoveryv3.DiscoveryRequest, discoveryv3.DiscoveryResponse]
}

// NewSotW opens a State-of-the-World ADS stream on conn.
func NewSotW(tb testing.TB, conn grpc.ClientConnInterface) *SotWClient {
	tb.Helper()
	return &SotWClient{openStream(tb, "StreamAggregatedResources", discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources)}
}

// Ack acknowledges resp, subscribing to names (every resource when none):
// in State of the World each request restates the subscription.
func (c *SotWClient) Ack(resp *discoveryv3.DiscoveryResponse, names ...string) {
	c.tb.Helper()
	c.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resp.GetTypeUrl(), VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce(), ResourceNames: names})
}

// Subscribe asks for names of typeURL (every resource when none), as node
// when node is not nil, and returns the answer, acknowledged.
func (c *SotWClient) Subscribe(node *corev3.Node, typeURL string, names ...string) *discoveryv3.DiscoveryResponse {
	c.tb.Helper()
	c.Send(&discoveryv3.DiscoveryRequest{Node: node, TypeUrl: typeURL, ResourceNames: names})
	resp := c.Recv()
	c.Ack(resp, names...)
	return resp
}

// DeltaClient is a raw Delta ADS stream (DeltaAggregatedResources). It
// sends nothing on its own. The stream ends with the test.
type DeltaClient struct {
	stream[discoveryv3.DeltaDiscoveryRequest, discoveryv3.DeltaDiscoveryResponse]
}

// NewDelta opens a Delta ADS stream on conn.
func NewDelta(tb testing.TB, conn grpc.ClientConnInterface) *DeltaClient {
	tb.Helper()
	return &DeltaClient{openStream(tb, "DeltaAggregatedResources", discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources)}
}

// Ack acknowledges resp. A Delta ACK names only the nonce: the
// subscription stays as it was.
func (c *DeltaClient) Ack(resp *discoveryv3.DeltaDiscoveryResponse) {
	c.tb.Helper()
	c.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce()})
}

// Subscribe subscribes to names of typeURL (every resource when none), as
// node when node is not nil, and returns the answer, acknowledged.
func (c *DeltaClient) Subscribe(node *corev3.Node, typeURL string, names ...string) *discoveryv3.DeltaDiscoveryResponse {
	c.tb.Helper()
	c.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: typeURL, ResourceNamesSubscribe: names})
	resp := c.Recv()
	c.Ack(resp)
	return resp
}

// SotWNames lists the names of a State-of-the-World response's resources,
// sorted. It fails the test if one cannot be decoded.
func SotWNames(tb testing.TB, resp *discoveryv3.DiscoveryResponse) []string {
	tb.Helper()
	out := make([]string, 0, len(resp.GetResources()))
	for _, a := range resp.GetResources() {
		m, err := a.UnmarshalNew()
		if err != nil {
			tb.Fatalf("UnmarshalNew: %v", err)
		}
		out = append(out, cachev3.GetResourceName(m))
	}
	slices.Sort(out)
	return out
}

// DeltaNames lists a Delta response's resource names, sorted.
func DeltaNames(resp *discoveryv3.DeltaDiscoveryResponse) []string {
	out := make([]string, 0, len(resp.GetResources()))
	for _, r := range resp.GetResources() {
		out = append(out, r.GetName())
	}
	slices.Sort(out)
	return out
}
