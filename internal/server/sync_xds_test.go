package server

import (
	"slices"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/xds"
	"github.com/tributary-dev/tributary/internal/xdstest"
)

// xdsServers serves a Publisher with the given grace on loopback, and
// TranslationService publishing to it; it returns connections to both.
func xdsServers(t *testing.T, grace time.Duration) (translation, xdsConn *grpc.ClientConn) {
	t.Helper()
	opts := quietOptions()
	p := xds.NewPublisher(xds.Options{WithdrawGrace: grace, Logger: opts.Logger})
	t.Cleanup(p.Shutdown)
	xdsServer := grpc.NewServer()
	p.Register(xdsServer)
	xdsConn = dialTCP(t, xdsServer)
	opts.XDS = p
	return dialBufconn(t, NewGRPCServer(opts)), xdsConn
}

// openXDSSync opens a Sync stream publishing to group.
func openXDSSync(t *testing.T, conn *grpc.ClientConn, group string, listeners bool) *syncClient {
	t.Helper()
	c := openStream(t.Context(), t, conn)
	c.sendRequest(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{
		Settings: &tributaryv1.Settings{XdsClusterName: "contour"}, XdsNodeGroup: group, PublishListeners: listeners,
	}}})
	return c
}

// servedBy maps a Delta response's resources by name.
func servedBy(resp *discoveryv3.DeltaDiscoveryResponse) map[string]*discoveryv3.Resource {
	out := map[string]*discoveryv3.Resource{}
	for _, r := range resp.GetResources() {
		out[r.GetName()] = r
	}
	return out
}

// xdsEquivalent decodes what Sync sent as the Publisher serves it: a
// Cluster gets its endpoints over ADS.
func xdsEquivalent(t *testing.T, r *tributaryv1.Resource) proto.Message {
	t.Helper()
	m, err := r.GetResource().UnmarshalNew()
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := m.(*clusterv3.Cluster); ok {
		c.EdsClusterConfig.EdsConfig = &corev3.ConfigSource{
			ResourceApiVersion:    corev3.ApiVersion_V3,
			ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		}
	}
	return m
}

// checkServed asserts that resp serves exactly the Sync resources want.
func checkServed(t *testing.T, resp *discoveryv3.DeltaDiscoveryResponse, want []*tributaryv1.Resource) {
	t.Helper()
	served := servedBy(resp)
	if len(served) != len(want) {
		t.Errorf("%s: served %d resources, want %d", resp.GetTypeUrl(), len(served), len(want))
	}
	for _, w := range want {
		got := served[w.GetName()]
		if got == nil {
			t.Errorf("%s: %s not served", resp.GetTypeUrl(), w.GetName())
			continue
		}
		m, err := got.GetResource().UnmarshalNew()
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(xdsEquivalent(t, w), m, protocmp.Transform()); d != "" {
			t.Errorf("%s: served differs from what Sync sent (-sync +xds):\n%s", w.GetName(), d)
		}
	}
}

// A Sync session naming a node group publishes its resources (and, with
// publish_listeners, a Listener per Cluster) to that group's xDS clients,
// sends only what a batch changed, forwards the clients' NACKs into its
// stream, and its resources are withdrawn when it ends (grace 1ns).
func TestSyncPublishesToXDS(t *testing.T) {
	conn, xdsConn := xdsServers(t, 1)
	s := openXDSSync(t, conn, "edge", true)
	s.send(batch(1, fixture(t)...))
	full := s.delta()
	clusters := []string{plainCluster, tlsCluster}

	c := xdstest.NewDelta(t, xdsConn)
	node := &corev3.Node{Id: "ext-authz-client-7", Cluster: "edge"}
	checkServed(t, c.Subscribe(node, resourcev3.ClusterType), full.GetClusters())
	eds := c.Subscribe(nil, resourcev3.EndpointType, clusters...)
	checkServed(t, eds, full.GetClusterLoadAssignments())
	lds := c.Subscribe(nil, resourcev3.ListenerType)
	if got := slices.Sorted(func(yield func(string) bool) {
		for name := range servedBy(lds) {
			if !yield(name) {
				return
			}
		}
	}); !slices.Equal(got, clusters) {
		t.Fatalf("Listeners %v, want %v", got, clusters)
	}
	l := new(listenerv3.Listener)
	if err := servedBy(lds)[plainCluster].GetResource().UnmarshalTo(l); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(xds.BuildListener(plainCluster), l, protocmp.Transform()); d != "" {
		t.Errorf("Listener (-want +got):\n%s", d)
	}

	// An endpoint change: exactly the one ClusterLoadAssignment goes out.
	s.send(batch(2, slice("a", "10.0.0.1", "10.0.0.3")))
	d2 := s.delta()
	eds2 := c.Recv()
	if eds2.GetTypeUrl() != resourcev3.EndpointType {
		t.Fatalf("after an endpoint change, xDS sent %s, want EDS", eds2.GetTypeUrl())
	}
	checkServed(t, eds2, d2.GetClusterLoadAssignments())
	if v1, v2 := servedBy(eds)[plainCluster].GetVersion(), servedBy(eds2)[plainCluster].GetVersion(); v1 == v2 {
		t.Errorf("the ClusterLoadAssignment's version %q did not change", v2)
	}

	// The client rejects it: the Sync stream hears of it.
	c.Send(&discoveryv3.DeltaDiscoveryRequest{
		TypeUrl: resourcev3.EndpointType, ResponseNonce: eds2.GetNonce(),
		ErrorDetail: &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: "duplicate endpoint with the same address"},
	})
	want := &tributaryv1.XdsNack{
		NodeId: "ext-authz-client-7", NodeGroup: "edge", TypeUrl: resourcev3.EndpointType,
		ResourceNames: []string{plainCluster}, ErrorDetail: "duplicate endpoint with the same address",
		RejectedVersion: eds2.GetSystemVersionInfo(),
	}
	if d := cmp.Diff(want, s.recv().GetXdsNack(), protocmp.Transform()); d != "" {
		t.Errorf("XdsNack (-want +got):\n%s", d)
	}

	// The session ends: everything it published is withdrawn.
	s.closeAndEnd()
	removed := map[string][]string{}
	for range 3 {
		resp := c.Recv()
		removed[resp.GetTypeUrl()] = slices.Sorted(slices.Values(resp.GetRemovedResources()))
		c.Ack(resp)
	}
	for _, typ := range []string{resourcev3.ClusterType, resourcev3.EndpointType, resourcev3.ListenerType} {
		if !slices.Equal(removed[typ], clusters) {
			t.Errorf("%s: withdrew %v, want %v", typ, removed[typ], clusters)
		}
	}
}

// A session that reconnects within the grace period republishes the same
// resources: xDS clients see no change at all, only what really changed.
func TestSyncReconnectWithinGrace(t *testing.T) {
	conn, xdsConn := xdsServers(t, time.Hour)
	first := openXDSSync(t, conn, "edge", false)
	first.send(batch(1, fixture(t)...))
	first.delta()

	c := xdstest.NewDelta(t, xdsConn)
	node := &corev3.Node{Id: "envoy-1", Cluster: "edge"}
	c.Subscribe(node, resourcev3.ClusterType)
	c.Subscribe(nil, resourcev3.EndpointType, plainCluster, tlsCluster)
	first.closeAndEnd()

	second := openXDSSync(t, conn, "edge", false)
	objs := fixture(t)
	objs[2] = slice("a", "10.0.0.9") // one endpoint moved meanwhile
	second.send(batch(1, objs...))
	d := second.delta()
	resp := c.Recv()
	if resp.GetTypeUrl() != resourcev3.EndpointType {
		t.Fatalf("after the reconnect, xDS sent %s %v, want only the changed ClusterLoadAssignment", resp.GetTypeUrl(), resp.GetResources())
	}
	checkServed(t, resp, []*tributaryv1.Resource{pick(t, d.GetClusterLoadAssignments(), plainCluster)[0]})
}

func TestSyncXDSErrors(t *testing.T) {
	wantCode := func(t *testing.T, err error, code codes.Code) {
		t.Helper()
		if status.Code(err) != code {
			t.Errorf("stream ended with %v, want %v", err, code)
		}
	}
	t.Run("no xDS served", func(t *testing.T) {
		conn := dialBufconn(t, NewGRPCServer(quietOptions()))
		wantCode(t, openXDSSync(t, conn, "edge", false).end(), codes.FailedPrecondition)
	})
	t.Run("listeners without a group", func(t *testing.T) {
		conn, _ := xdsServers(t, 0)
		wantCode(t, openXDSSync(t, conn, "", true).end(), codes.InvalidArgument)
	})
	t.Run("taken over", func(t *testing.T) {
		conn, _ := xdsServers(t, 0)
		old := openXDSSync(t, conn, "edge", false)
		old.send(batch(1, service("a")))
		old.delta() // the session is open
		newer := openXDSSync(t, conn, "edge", false)
		newer.send(batch(1, service("a")))
		newer.delta()
		wantCode(t, old.end(), codes.Aborted)
		newer.closeAndEnd()
	})
}

// TestSyncEmptyFirstStateEndsTheHold: on a server that has just started,
// the clients of a node group are told nothing until a session has
// published its whole state there (xds.NewPublisher); a session whose
// objects translate to nothing has published its whole state too, so its
// group's clients are answered, empty, at once rather than when the grace
// period ends.
func TestSyncEmptyFirstStateEndsTheHold(t *testing.T) {
	conn, xdsConn := xdsServers(t, time.Hour)
	c := xdstest.NewSotW(t, xdsConn)
	c.Send(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: "envoy-1", Cluster: "edge"}, TypeUrl: resourcev3.ClusterType})

	s := openXDSSync(t, conn, "edge", false)
	s.send(batch(1))
	if d := s.delta(); len(d.GetClusters()) != 0 {
		t.Fatalf("an empty batch translated to %d Clusters", len(d.GetClusters()))
	}
	if got := xdstest.SotWNames(t, c.Recv()); len(got) != 0 {
		t.Errorf("the first Cluster response names %v, want none", got)
	}
}
