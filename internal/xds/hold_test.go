package xds

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// The hold of groups not published yet (see cache.holding) is tested on
// the cache driven as go-control-plane's servers drive it, one call at a
// time: the cache hands a response to the server's channel within the call
// that wakes its watch, so that "nothing was sent" is an empty channel
// right after the call, not a wait.

// holdClients are two clients of group "edge" that reconnect to a server
// that has just started: a State-of-the-World one (CDS wildcard, EDS of a
// and b) and a Delta one that holds a, b and gone from the server before
// (CDS wildcard with initial_resource_versions, EDS of a and nothing).
type holdClients struct {
	t *testing.T
	c *cache
	// out holds the server's channel of each (stream, type), by label.
	sotwOut  map[string]chan cachev3.Response
	deltaOut map[string]chan cachev3.DeltaResponse
	sotwSub  map[string]*stream.Subscription
	deltaSub map[string]*stream.Subscription
	nonces   int
}

const (
	holdSotWID, holdDeltaID = 1, 1
	holdGroup               = "edge"
)

func holdNode() *corev3.Node { return &corev3.Node{Id: "envoy", Cluster: holdGroup} }

func newHoldCache(holding bool) *cache {
	return newCache("test-", Limits{}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, func(Nack) {}, holding)
}

// connectHoldClients opens the two clients' streams and sends their first
// requests.
func connectHoldClients(t *testing.T, c *cache) *holdClients {
	t.Helper()
	h := &holdClients{
		t: t, c: c,
		sotwOut: map[string]chan cachev3.Response{}, deltaOut: map[string]chan cachev3.DeltaResponse{},
		sotwSub: map[string]*stream.Subscription{}, deltaSub: map[string]*stream.Subscription{},
	}
	if err := c.OnStreamOpen(t.Context(), holdSotWID, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.OnDeltaStreamOpen(t.Context(), holdDeltaID, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.OnStreamClosed(holdSotWID, nil)
		c.OnDeltaStreamClosed(holdDeltaID, nil)
	})
	// The State-of-the-World client holds a version of the server before:
	// not this server's, so it asks for everything.
	h.sotw(resourcev3.ClusterType, &discoveryv3.DiscoveryRequest{Node: holdNode(), TypeUrl: resourcev3.ClusterType, VersionInfo: "previous-7"})
	h.sotw(resourcev3.EndpointType, &discoveryv3.DiscoveryRequest{Node: holdNode(), TypeUrl: resourcev3.EndpointType, ResourceNames: []string{"a", "b"}, VersionInfo: "previous-7"})
	h.delta(resourcev3.ClusterType, &discoveryv3.DeltaDiscoveryRequest{
		Node: holdNode(), TypeUrl: resourcev3.ClusterType,
		InitialResourceVersions: map[string]string{"a": "v1", "b": "old", "gone": "v1"},
	})
	h.delta(resourcev3.EndpointType, &discoveryv3.DeltaDiscoveryRequest{Node: holdNode(), TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: []string{"a", "nothing"}})
	return h
}

// sotw hands req to the cache as the server does.
func (h *holdClients) sotw(typeURL string, req *discoveryv3.DiscoveryRequest) {
	h.t.Helper()
	if h.sotwOut[typeURL] == nil {
		h.sotwOut[typeURL] = make(chan cachev3.Response, 1)
		sub := stream.NewSotwSubscription(req.GetResourceNames(), true)
		h.sotwSub[typeURL] = &sub
	}
	h.sotwSub[typeURL].SetResourceSubscription(req.GetResourceNames())
	if err := h.c.OnStreamRequest(holdSotWID, req); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.c.CreateWatch(req, *h.sotwSub[typeURL], h.sotwOut[typeURL]); err != nil {
		h.t.Fatal(err)
	}
}

// delta hands req to the cache as the server does.
func (h *holdClients) delta(typeURL string, req *discoveryv3.DeltaDiscoveryRequest) {
	h.t.Helper()
	if h.deltaOut[typeURL] == nil {
		h.deltaOut[typeURL] = make(chan cachev3.DeltaResponse, 1)
		sub := stream.NewDeltaSubscription(req.GetResourceNamesSubscribe(), nil, req.GetInitialResourceVersions(), true)
		h.deltaSub[typeURL] = &sub
	} else {
		h.deltaSub[typeURL].UpdateResourceSubscriptions(req.GetResourceNamesSubscribe(), req.GetResourceNamesUnsubscribe())
	}
	if err := h.c.OnStreamDeltaRequest(holdDeltaID, req); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.c.CreateDeltaWatch(req, *h.deltaSub[typeURL], h.deltaOut[typeURL]); err != nil {
		h.t.Fatal(err)
	}
}

// sent returns what the cache has handed the server since the last call,
// one line per response ("sotw CDS: a@v1 b@v2", "delta EDS: a@v1 -nothing",
// a removal after a minus), sorted, and acknowledges every response, so
// that its watch waits for the next change.
func (h *holdClients) sent() []string {
	h.t.Helper()
	var out []string
	for _, typeURL := range slices.Sorted(maps.Keys(h.sotwOut)) {
		select {
		case r := <-h.sotwOut[typeURL]:
			resp, err := r.GetDiscoveryResponse()
			if err != nil {
				h.t.Fatal(err)
			}
			h.nonces++
			resp.Nonce = fmt.Sprint(h.nonces)
			h.c.OnStreamResponse(h.t.Context(), holdSotWID, nil, resp)
			var got []string
			for _, a := range resp.GetResources() {
				got = append(got, string(a.GetValue()))
			}
			out = append(out, "sotw "+shortType(typeURL)+": "+strings.Join(got, " "))
			ack := &discoveryv3.DiscoveryRequest{Node: holdNode(), TypeUrl: typeURL, VersionInfo: resp.GetVersionInfo(), ResponseNonce: resp.GetNonce(),
				ResourceNames: r.GetRequest().GetResourceNames()}
			h.sotw(typeURL, ack)
		default:
		}
	}
	for _, typeURL := range slices.Sorted(maps.Keys(h.deltaOut)) {
		select {
		case r := <-h.deltaOut[typeURL]:
			resp, err := r.GetDeltaDiscoveryResponse()
			if err != nil {
				h.t.Fatal(err)
			}
			h.nonces++
			resp.Nonce = fmt.Sprint(h.nonces)
			h.c.OnStreamDeltaResponse(holdDeltaID, nil, resp)
			var got []string
			for _, res := range resp.GetResources() {
				got = append(got, string(res.GetResource().GetValue()))
			}
			for _, name := range resp.GetRemovedResources() {
				got = append(got, "-"+name)
			}
			out = append(out, "delta "+shortType(typeURL)+": "+strings.Join(got, " "))
			h.delta(typeURL, &discoveryv3.DeltaDiscoveryRequest{Node: holdNode(), TypeUrl: typeURL, ResponseNonce: resp.GetNonce()})
		default:
		}
	}
	return out
}

func shortType(typeURL string) string {
	switch typeURL {
	case resourcev3.ClusterType:
		return "CDS"
	case resourcev3.EndpointType:
		return "EDS"
	}
	return typeURL
}

// holdResource is a resource whose bytes read name@version.
func holdResource(typeURL, name, version string) *resource {
	return &resource{key: resourceKey{typeURL, name, version}, any: &anypb.Any{TypeUrl: typeURL, Value: []byte(name + "@" + version)}}
}

// publishHoldState publishes, as a Publication's first Apply does, the
// group's first state: Clusters a@v1 and b@v2, ClusterLoadAssignments a@v1
// and b@v1.
func publishHoldState(c *cache) {
	c.update(holdGroup, resourcev3.ClusterType, []*resource{
		holdResource(resourcev3.ClusterType, "a", "v1"), holdResource(resourcev3.ClusterType, "b", "v2"),
	}, nil)
	c.update(holdGroup, resourcev3.EndpointType, []*resource{
		holdResource(resourcev3.EndpointType, "a", "v1"), holdResource(resourcev3.EndpointType, "b", "v1"),
	}, nil)
}

func expectSent(t *testing.T, h *holdClients, when string, want ...string) {
	t.Helper()
	if got := h.sent(); !slices.Equal(got, want) {
		t.Errorf("%s: sent\n\t%s\nwant\n\t%s", when, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// Without a hold, a server that has just started answers at once that the
// group holds nothing: what the hold holds back, and what the end of the
// hold must send.
var answersOfAnEmptyGroup = []string{
	"sotw CDS: ",
	"sotw EDS: ",
	"delta CDS: -a -b -gone",
	"delta EDS: -a -nothing",
}

// During the hold, the clients of a group nothing was published to are
// sent nothing at all; the group's first publication, once applied whole,
// sends them exactly its state: over Delta only what they hold in another
// version, and the removal of only what they hold (or ask for) that it
// does not publish. Changes flow as usual afterwards.
func TestHoldUntilFirstPublication(t *testing.T) {
	c := newHoldCache(true)
	h := connectHoldClients(t, c)
	expectSent(t, h, "while the group is not known")

	publishHoldState(c)
	expectSent(t, h, "before the publication's first state is marked applied")
	c.markKnown(holdGroup)
	expectSent(t, h, "once the first publication is applied",
		"sotw CDS: a@v1 b@v2",
		"sotw EDS: a@v1 b@v1",
		"delta CDS: b@v2 -gone",
		"delta EDS: a@v1 -nothing",
	)

	c.update(holdGroup, resourcev3.EndpointType, []*resource{holdResource(resourcev3.EndpointType, "a", "v2")}, []string{"b"})
	expectSent(t, h, "after a change", "sotw EDS: a@v2", "delta EDS: a@v2")
}

// When the hold ends with the group still not published to, its clients
// are sent exactly what a server without the hold sent them at once.
func TestHoldEnds(t *testing.T) {
	h := connectHoldClients(t, newHoldCache(false))
	expectSent(t, h, "without a hold", answersOfAnEmptyGroup...)

	c := newHoldCache(true)
	h = connectHoldClients(t, c)
	expectSent(t, h, "during the hold")
	c.endHold()
	expectSent(t, h, "at the end of the hold", answersOfAnEmptyGroup...)

	// The group is known from now on: a new stream is answered at once.
	h.c.OnStreamClosed(holdSotWID, nil)
	h.c.OnDeltaStreamClosed(holdDeltaID, nil)
	h = connectHoldClients(t, c)
	expectSent(t, h, "after the hold", answersOfAnEmptyGroup...)
}

// A group's first publication ends its hold even when it publishes
// nothing: nothing is then what the group holds. The group stays known
// when its state goes (no resource, no stream), while other groups are
// still held.
func TestHoldEmptyFirstPublication(t *testing.T) {
	c := newHoldCache(true)
	h := connectHoldClients(t, c)
	c.markKnown(holdGroup) // Publication.Apply of no change
	expectSent(t, h, "after an empty first publication", answersOfAnEmptyGroup...)

	h.c.OnStreamClosed(holdSotWID, nil)
	h.c.OnDeltaStreamClosed(holdDeltaID, nil)
	if _, ok := c.groups[holdGroup]; ok {
		t.Fatal("the group's state stayed with no resource and no stream")
	}
	h = connectHoldClients(t, c)
	expectSent(t, h, "a new stream of the group", answersOfAnEmptyGroup...)

	// Another group is still held.
	if err := c.OnStreamOpen(t.Context(), 2, ""); err != nil {
		t.Fatal(err)
	}
	defer c.OnStreamClosed(2, nil)
	out := make(chan cachev3.Response, 1)
	req := &discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: "other"}, TypeUrl: resourcev3.ClusterType}
	if err := c.OnStreamRequest(2, req); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateWatch(req, stream.NewSotwSubscription(nil, true), out); err != nil {
		t.Fatal(err)
	}
	if len(out) != 0 {
		t.Error("a client of a group not published to was answered during the hold")
	}
	c.endHold()
	if len(out) != 1 {
		t.Error("the end of the hold did not answer a client of a group not published to")
	}
}
