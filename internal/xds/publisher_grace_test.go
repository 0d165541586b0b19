package xds_test

import (
	"slices"
	"testing"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/xds"
	"github.com/tributary-dev/tributary/internal/xdstest"
)

// When a Publication closes, its resources are withdrawn after the grace
// period: a Delta client sees them removed.
func TestWithdrawAfterGrace(t *testing.T) {
	p, conn := startServer(t, xds.Options{WithdrawGrace: 1}) // 1ns: at once, but through the timer
	_, v1 := translated(2, 1)
	pub, err := p.Open("edge", xds.PublicationOptions{Listeners: true})
	if err != nil {
		t.Fatal(err)
	}
	pub.Apply(everything(v1))
	all := names(v1.Clusters)

	c := xdstest.NewDelta(t, conn)
	types := []string{resourcev3.ClusterType, resourcev3.EndpointType, resourcev3.ListenerType}
	for _, typ := range types {
		c.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node("envoy-1"), TypeUrl: typ})
		resp := c.Recv()
		if got := xdstest.DeltaNames(resp); !slices.Equal(got, all) {
			t.Fatalf("%s: got %v, want %v", typ, got, all)
		}
		c.Ack(resp)
	}
	pub.Close()
	removed := map[string][]string{}
	for range types {
		resp := c.Recv()
		removed[resp.GetTypeUrl()] = slices.Sorted(slices.Values(resp.GetRemovedResources()))
		c.Ack(resp)
	}
	for _, typ := range types {
		if !slices.Equal(removed[typ], all) {
			t.Errorf("%s: withdrew %v, want %v", typ, removed[typ], all)
		}
	}
}

// A session that reconnects within the grace period and publishes the same
// resources changes nothing for the clients; what it no longer publishes is
// withdrawn when the grace period ends. A newer Publication supersedes a
// live one.
func TestTakeoverWithinGrace(t *testing.T) {
	p, conn := startServer(t, xds.Options{WithdrawGrace: time.Hour})
	objs, v1 := translated(3, 1)
	old := mustOpen(t, p, "edge", xds.PublicationOptions{})
	old.Apply(everything(v1))
	all := names(v1.Clusters)

	c := xdstest.NewDelta(t, conn)
	c.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node("envoy-1"), TypeUrl: resourcev3.ClusterType})
	c.Ack(c.Recv())
	c.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: all})
	c.Ack(c.Recv())
	// A State-of-the-World client too: its versions are per response, so
	// only the Publisher's skipping of unchanged resources keeps it quiet.
	sc := xdstest.NewSotW(t, conn)
	sc.Send(&discoveryv3.DiscoveryRequest{Node: node("envoy-2"), TypeUrl: resourcev3.ClusterType})
	sc.Ack(sc.Recv())
	sc.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNames: all})
	sc.Ack(sc.Recv(), all...)

	superseded := make(chan struct{})
	old2, err := p.Open("edge-2", xds.PublicationOptions{OnSuperseded: func() { close(superseded) }})
	if err != nil {
		t.Fatal(err)
	}
	defer old2.Close()
	if _, err := p.Open("edge-2", xds.PublicationOptions{}); err != nil {
		t.Fatal(err)
	}
	<-superseded
	old2.Apply(everything(v1))
	for _, g := range p.Groups(false) {
		if g.Name == "edge-2" && len(g.Types) != 0 {
			t.Errorf("Apply of a superseded Publication published %+v; want nothing", g.Types)
		}
	}

	// The new session holds one ExtensionService fewer and one moved
	// endpoint: its full state republishes two resources unchanged.
	objs.ExtensionServices = objs.ExtensionServices[:2]
	moveEndpoint(objs, 0, "10.200.0.4")
	v2 := translate.Translate(objs, source.Settings{})
	renewed, err := p.Open("edge", xds.PublicationOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(renewed.Close)
	renewed.Apply(everything(v2))
	old.Close() // after the takeover, closing the old one changes nothing

	ch := changes(v1, v2)
	// Only the moved endpoint's ClusterLoadAssignment is sent, then,
	// once the grace period ends, the removal of the dropped
	// ExtensionService's resources.
	resp := c.Recv()
	if got := xdstest.DeltaNames(resp); resp.GetTypeUrl() != resourcev3.EndpointType || !slices.Equal(got, names(ch.ClusterLoadAssignments)) {
		t.Fatalf("after the takeover, got %s %v, want EDS %v", resp.GetTypeUrl(), got, names(ch.ClusterLoadAssignments))
	}
	c.Ack(resp)
	if resp := sc.Recv(); resp.GetTypeUrl() != resourcev3.EndpointType || !slices.Equal(xdstest.SotWNames(t, resp), names(ch.ClusterLoadAssignments)) {
		t.Fatalf("after the takeover, the SotW client got %s %v, want EDS %v", resp.GetTypeUrl(), xdstest.SotWNames(t, resp), names(ch.ClusterLoadAssignments))
	} else {
		sc.Ack(resp, all...)
	}
	xds.WithdrawStale(p, "edge")
	if resp := sc.Recv(); resp.GetTypeUrl() != resourcev3.ClusterType || !slices.Equal(xdstest.SotWNames(t, resp), names(v2.Clusters)) {
		t.Errorf("after the grace period, the SotW client got %s %v, want CDS %v", resp.GetTypeUrl(), xdstest.SotWNames(t, resp), names(v2.Clusters))
	}
	expectDeltaRemovals(t, c, ch, "after the grace period")
}

// A Publisher that has just started is a restarted server, or a new
// replica: for the grace period, the clients of a group that no
// Publication has published to are told nothing, neither by a
// Publication that ends or is superseded before it applies anything; the
// session that restores the group sends them exactly its state, over Delta
// with the removal of only what they hold that it does not publish.
func TestHoldUntilSessionRestores(t *testing.T) {
	p, conn := startServer(t, xds.Options{WithdrawGrace: time.Hour})
	_, v1 := translated(3, 1)
	all := names(v1.Clusters)
	restored := translate.Changes{Clusters: v1.Clusters[:2], ClusterLoadAssignments: v1.ClusterLoadAssignments[:2]}

	c := xdstest.NewDelta(t, conn)
	held := map[string]string{} // what the client holds of the server before
	for _, r := range v1.Clusters {
		held[r.Name] = r.Version
	}
	held[all[1]] = "an older version"
	c.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node("envoy-1"), TypeUrl: resourcev3.ClusterType, InitialResourceVersions: held})
	sc := xdstest.NewSotW(t, conn)
	sc.Send(&discoveryv3.DiscoveryRequest{Node: node("envoy-2"), TypeUrl: resourcev3.ClusterType})
	awaitWatches(t, p, 2)

	// Sessions that end before they publish anything release nothing.
	closed := mustOpen(t, p, "edge", xds.PublicationOptions{})
	closed.Close()
	superseded := mustOpen(t, p, "edge", xds.PublicationOptions{})
	pub := mustOpen(t, p, "edge", xds.PublicationOptions{})
	superseded.Apply(translate.Changes{})

	// Responses on a stream come in order: the first one read is the
	// first one sent.
	pub.Apply(restored)
	resp := c.Recv()
	if got, want := xdstest.DeltaNames(resp), all[1:2]; !slices.Equal(got, want) {
		t.Errorf("Delta: the first response carries %v, want %v (what the client holds in another version)", got, want)
	}
	if got, want := resp.GetRemovedResources(), all[2:]; !slices.Equal(got, want) {
		t.Errorf("Delta: the first response removes %v, want %v (what the client holds that the session does not publish)", got, want)
	}
	if got, want := xdstest.SotWNames(t, sc.Recv()), all[:2]; !slices.Equal(got, want) {
		t.Errorf("State of the World: the first response carries %v, want %v", got, want)
	}
}

// When the grace period ends before a session publishes the group, its
// clients are answered as if there had been no hold.
func TestHoldEndsWithoutSession(t *testing.T) {
	p, conn := startServer(t, xds.Options{WithdrawGrace: time.Hour})
	sc := xdstest.NewSotW(t, conn)
	sc.Send(&discoveryv3.DiscoveryRequest{Node: node("envoy-2"), TypeUrl: resourcev3.ClusterType})
	c := xdstest.NewDelta(t, conn)
	c.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node("envoy-1"), TypeUrl: resourcev3.ClusterType, InitialResourceVersions: map[string]string{"extension/ns/gone": "v1"}})
	awaitWatches(t, p, 2)
	xds.EndHold(p)
	if got := xdstest.SotWNames(t, sc.Recv()); len(got) != 0 {
		t.Errorf("State of the World: got %v, want the empty first response", got)
	}
	if got := c.Recv().GetRemovedResources(); !slices.Equal(got, []string{"extension/ns/gone"}) {
		t.Errorf("Delta: removed %v, want what the client held", got)
	}
}

// awaitWatches waits until the server has opened n watches: the requests
// sent before have been handled.
func awaitWatches(t *testing.T, p *xds.Publisher, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := 0
		for _, s := range p.Streams() {
			got += len(s.Types)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server holds %d watches, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}
