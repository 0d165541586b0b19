package xds

import (
	"io"
	"log/slog"
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// A Delta client with a wildcard subscription that unsubscribes from a
// name it holds drops it, so the server sends it again; if the resource is
// withdrawn before that response is built, the response removes it. The
// cache is driven here as go-control-plane's Delta server drives it, one
// call at a time, so that the withdrawal falls exactly in that gap (over a
// real stream it does only now and then, with a slow reader).
func TestWildcardUnsubscribeThenWithdraw(t *testing.T) {
	c := newCache("test-", Limits{}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, func(Nack) {}, false)
	const id, name = 1, "extension/ns/c"
	if err := c.OnDeltaStreamOpen(t.Context(), id, ""); err != nil {
		t.Fatal(err)
	}
	out := make(chan cachev3.DeltaResponse, 2)
	first := &discoveryv3.DeltaDiscoveryRequest{
		Node: &corev3.Node{Id: "envoy", Cluster: "edge"}, TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: []string{"*", name},
	}
	sub := stream.NewDeltaSubscription(first.GetResourceNamesSubscribe(), nil, nil, true)
	watch := func(req *discoveryv3.DeltaDiscoveryRequest) {
		t.Helper()
		if err := c.OnStreamDeltaRequest(id, req); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateDeltaWatch(req, sub, out); err != nil {
			t.Fatal(err)
		}
	}
	send := func() *discoveryv3.DeltaDiscoveryResponse {
		t.Helper()
		var r cachev3.DeltaResponse
		select { // the cache answers a watch within the call that wakes it
		case r = <-out:
		default:
			t.Fatal("nothing to send")
		}
		resp, err := r.GetDeltaDiscoveryResponse()
		if err != nil {
			t.Fatal(err)
		}
		resp.Nonce = "n-" + resp.GetSystemVersionInfo()
		c.OnStreamDeltaResponse(id, nil, resp)
		return resp
	}

	c.update("edge", resourcev3.EndpointType, []*resource{{
		key: resourceKey{resourcev3.EndpointType, name, "v1"}, any: &anypb.Any{TypeUrl: resourcev3.EndpointType},
	}}, nil)
	watch(first)
	if got := send(); len(got.GetResources()) != 1 {
		t.Fatalf("first response: %v, want %s", got, name)
	}
	unsubscribe := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResponseNonce: "n-test-1", ResourceNamesUnsubscribe: []string{name}}
	sub.UpdateResourceSubscriptions(nil, unsubscribe.GetResourceNamesUnsubscribe())
	watch(unsubscribe)
	c.update("edge", resourcev3.EndpointType, nil, []string{name}) // before the response is built
	resp := send()
	if len(resp.GetResources()) != 0 || !slices.Equal(resp.GetRemovedResources(), []string{name}) {
		t.Errorf("after unsubscribing and the withdrawal: sent %d resources, removed %v; want only the removal of %s", len(resp.GetResources()), resp.GetRemovedResources(), name)
	}
	c.OnDeltaStreamClosed(id, nil)
}
