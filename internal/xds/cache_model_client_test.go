package xds_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"

	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/xds"
)

// modelClient is an ADS client of ClusterLoadAssignments that keeps what
// it accepted, as Envoy does, and checks each response it reads.
type modelClient struct {
	t       *testing.T
	name    string
	variant xds.Variant
	node    *corev3.Node

	sotw      grpc.BidiStreamingClient[discoveryv3.DiscoveryRequest, discoveryv3.DiscoveryResponse]
	delta     grpc.BidiStreamingClient[discoveryv3.DeltaDiscoveryRequest, discoveryv3.DeltaDiscoveryResponse]
	responses chan any
	cancel    context.CancelFunc

	names    map[string]bool
	wildcard bool // Delta only
	// held maps each name to the version accepted; rejected to the version
	// (or "" for a removal) last NACKed; seen to the version last sent,
	// accepted or not, as far as the server knows (a new stream's server
	// knows only what the client says it holds).
	held, rejected, seen map[string]string
	// regained holds the names the client subscribed to anew (or by a new
	// wildcard), whose next sending may repeat a version.
	regained map[string]int
	// nonce and accepted are the last response's nonce and the last
	// accepted version_info (State of the World).
	nonce, accepted string
	// acceptedFrom is the server whose version accepted is: another
	// server's is no version to this one.
	acceptedFrom *xds.Publisher
	first        bool // the next request is the stream's first

	slowFor  int
	nackRate float64
	// quiet says the server must send nothing (its group is held back);
	// kept holds what it publishes, which a Delta response must not
	// remove (the first publication after a restart).
	quiet    bool
	kept     map[string]translate.Resource
	universe []string
	p        *xds.Publisher
	// log is what the client did and got, for a failure to show.
	log []string
	// versions maps every ClusterLoadAssignment's bytes to its version: a
	// State-of-the-World response carries no version per resource.
	versions map[string]string
}

func newModelClient(t *testing.T, p *xds.Publisher, conn *grpc.ClientConn, v xds.Variant, name string, versions map[string]string, universe []string) *modelClient {
	c := &modelClient{t: t, p: p, name: name, variant: v, node: node(name), names: map[string]bool{}, held: map[string]string{}, versions: versions, universe: universe}
	c.open(conn)
	return c
}

// open opens a new stream, with a goroutine that hands its responses over.
func (c *modelClient) open(conn *grpc.ClientConn) {
	ctx, cancel := context.WithCancel(c.t.Context())
	c.cancel = cancel
	c.t.Cleanup(cancel)
	c.responses = make(chan any, 16)
	c.rejected = map[string]string{} // a new stream's server forgets them
	c.seen = map[string]string{}
	c.regained = map[string]int{}
	if c.variant == xds.Delta {
		c.seen = maps.Clone(c.held) // its initial_resource_versions
	}
	c.first, c.nonce = true, ""
	ads := discoveryv3.NewAggregatedDiscoveryServiceClient(conn)
	var err error
	var recv func() (any, error)
	if c.variant == xds.SotW {
		c.sotw, err = ads.StreamAggregatedResources(ctx)
		recv = func() (any, error) { return c.sotw.Recv() }
	} else {
		c.delta, err = ads.DeltaAggregatedResources(ctx)
		recv = func() (any, error) { return c.delta.Recv() }
	}
	if err != nil {
		c.t.Fatalf("%s: %v", c.name, err)
	}
	responses := c.responses
	go func() {
		defer close(responses)
		for {
			resp, err := recv()
			if err != nil {
				return
			}
			responses <- resp
		}
	}()
}

// reconnect closes the stream and opens a new one that says what it holds:
// Delta its initial_resource_versions, State of the World the version it
// accepted last.
func (c *modelClient) reconnect(conn *grpc.ClientConn) {
	c.cancel()
	for range c.responses { // the old stream's goroutine ends
	}
	c.open(conn)
	c.request(nil, nil, "", nil)
}

func (c *modelClient) describe() string {
	if c.wildcard {
		return "* and " + fmt.Sprint(slices.Sorted(maps.Keys(c.names)))
	}
	return fmt.Sprint(slices.Sorted(maps.Keys(c.names)))
}

// subscribe changes the subscription to names (Delta: and the wildcard).
func (c *modelClient) subscribe(names []string, wildcard bool) {
	if c.variant == xds.SotW {
		wildcard = false // an explicit list is how gRPC and Envoy ask for EDS
	}
	if len(names) == 0 && !wildcard {
		// An empty first request would be a (legacy) wildcard.
		names = []string{"extension/default/none"}
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var sub, unsub []string
	for n := range want {
		if !c.names[n] {
			sub = append(sub, n)
			c.regained[n]++
		}
	}
	for n := range c.names {
		if !want[n] {
			unsub = append(unsub, n)
			// A Delta client drops what it unsubscribes from. A
			// State-of-the-World request that crosses a response is
			// ignored (its nonce is stale), so the server may never learn
			// of an unsubscription: the client keeps what it holds.
			if c.variant == xds.Delta {
				delete(c.held, n)
				delete(c.rejected, n)
				delete(c.seen, n)
				c.regained[n]++ // sent again if a wildcard keeps it
			}
		}
	}
	switch {
	case wildcard && !c.wildcard:
		sub = append(sub, "*")
		for _, n := range c.universe {
			c.regained[n]++
		}
	case !wildcard && c.wildcard:
		unsub = append(unsub, "*")
		for n := range c.held {
			if !want[n] {
				delete(c.held, n)
				delete(c.rejected, n)
				delete(c.seen, n)
			}
		}
	}
	c.names, c.wildcard = want, wildcard
	c.request(sub, unsub, c.nonce, nil)
}

// request sends a request: Delta with sub and unsub, State of the World
// with the whole subscription, either answering nonce (NACKing it with
// nack, if set).
func (c *modelClient) request(sub, unsub []string, nonce string, nack *status.Status) {
	c.log = append(c.log, fmt.Sprintf("send sub %v unsub %v nonce %q nack %v names %v first %v", sub, unsub, nonce, nack != nil, c.describe(), c.first))
	var node *corev3.Node
	if c.first {
		node, c.first = c.node, false
	}
	var err error
	if c.variant == xds.SotW {
		if c.acceptedFrom != c.p && nack == nil {
			// A request without a version (of this server) asks for
			// everything anew, what the client rejected too, so any of it
			// may come again. But
			// the server ignores the request if a response crossed it
			// (its nonce is stale), so what the client rejected stays
			// rejected: the server may owe it nothing.
			clear(c.seen)
		}
		err = c.sotw.Send(&discoveryv3.DiscoveryRequest{
			Node: node, TypeUrl: resourcev3.EndpointType, ResourceNames: slices.Sorted(maps.Keys(c.names)),
			VersionInfo: c.accepted, ResponseNonce: nonce, ErrorDetail: nack,
		})
	} else {
		req := &discoveryv3.DeltaDiscoveryRequest{
			Node: node, TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: sub, ResourceNamesUnsubscribe: unsub,
			ResponseNonce: nonce, ErrorDetail: nack,
		}
		if node != nil { // a new stream: everything it wants and holds
			req.ResourceNamesSubscribe = slices.Sorted(maps.Keys(c.names))
			if c.wildcard {
				req.ResourceNamesSubscribe = append(req.ResourceNamesSubscribe, "*")
			}
			req.InitialResourceVersions = maps.Clone(c.held)
		}
		err = c.delta.Send(req)
	}
	if err != nil {
		c.t.Fatalf("%s: Send: %v", c.name, err)
	}
}

// settle reads responses until the client holds what the model says, or
// fails the test after a while.
func (c *modelClient) settle(rng *rand.Rand, published map[string]translate.Resource, when string) {
	c.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		diff := c.diff(published)
		if diff == "" {
			return
		}
		select {
		case resp, ok := <-c.responses:
			if !ok {
				c.t.Fatalf("%s after %s: the stream ended", c.name, when)
			}
			c.take(rng, resp, when)
		case <-deadline:
			c.t.Fatalf("%s after %s, subscribed to %s: %s; the client saw:\n%s\nthe server: %+v", c.name, when, c.describe(), diff, strings.Join(c.log, "\n"), c.p.Streams())
		}
	}
}

// expectNothing fails the test if the client has been sent anything. A
// response on its way may be read only later: take checks quiet too.
func (c *modelClient) expectNothing(when string) {
	c.t.Helper()
	select {
	case resp, ok := <-c.responses:
		if ok {
			c.take(nil, resp, when)
		}
	default:
	}
}

// diff says how what the client holds differs from what it must hold.
func (c *modelClient) diff(published map[string]translate.Resource) string {
	wanted := func(name string) bool { return c.names[name] || c.wildcard }
	for name, r := range published {
		if wanted(name) && c.held[name] != r.Version && c.rejected[name] != r.Version {
			return fmt.Sprintf("%s: holds %q, want %q", name, c.held[name], r.Version)
		}
	}
	if c.variant == xds.Delta {
		for name, v := range c.held {
			if _, ok := published[name]; !ok {
				if r, nacked := c.rejected[name]; !nacked || r != "" {
					return fmt.Sprintf("%s: holds %q, want it removed", name, v)
				}
			}
		}
	}
	return ""
}

// take checks resp, then accepts or (at nackRate) rejects it.
func (c *modelClient) take(rng *rand.Rand, resp any, when string) {
	c.t.Helper()
	got := map[string]string{} // name → version, "" for a removal
	var nonce string
	switch resp := resp.(type) {
	case *discoveryv3.DiscoveryResponse:
		nonce = resp.GetNonce()
		for _, a := range resp.GetResources() {
			cla := unpack(c.t, a, new(endpointv3.ClusterLoadAssignment))
			got[cla.GetClusterName()] = c.versions[string(a.GetValue())]
		}
	case *discoveryv3.DeltaDiscoveryResponse:
		nonce = resp.GetNonce()
		for _, r := range resp.GetResources() {
			got[r.GetName()] = r.GetVersion()
		}
		for _, name := range resp.GetRemovedResources() {
			got[name] = ""
		}
	}
	c.log = append(c.log, fmt.Sprintf("  raw nonce %s: %v", nonce, got))
	if c.quiet {
		c.t.Fatalf("%s after %s: sent %v while the server holds the group back; the client saw:\n%s", c.name, when, got, strings.Join(c.log, "\n"))
	}
	for name, v := range got {
		if _, ok := c.kept[name]; ok && v == "" {
			c.t.Fatalf("%s after %s: told that %s, which is published, was removed; the client saw:\n%s", c.name, when, name, strings.Join(c.log, "\n"))
		}
	}
	for name, v := range got {
		if !c.names[name] && !c.wildcard {
			// Sent before the server read the request that unsubscribed
			// from it: a client ignores what it did not ask for.
			delete(got, name)
			continue
		}
		if last, ok := c.seen[name]; ok && last == v {
			if c.regained[name] == 0 {
				c.t.Fatalf("%s after %s: sent %s version %q again; the client saw:\n%s", c.name, when, name, v, strings.Join(c.log, "\n"))
			}
			// Subscribed to anew while a response was on its way: that
			// response and the server's answer to the new subscription
			// may both carry it.
			c.regained[name]--
		}
		c.seen[name] = v
	}
	c.nonce = nonce
	c.log = append(c.log, fmt.Sprintf("  got nonce %s: %v", nonce, got))
	if rng.Float64() < c.nackRate {
		c.log = append(c.log, "  NACK")
		for name, v := range got {
			c.rejected[name] = v
		}
		c.request(nil, nil, nonce, &status.Status{Code: 3, Message: "rejected by the model client"})
		return
	}
	for name, v := range got {
		if v == "" {
			delete(c.held, name)
		} else {
			c.held[name] = v
		}
		delete(c.rejected, name)
	}
	if r, ok := resp.(*discoveryv3.DiscoveryResponse); ok {
		c.accepted, c.acceptedFrom = r.GetVersionInfo(), c.p
	}
	c.request(nil, nil, nonce, nil)
}
