package xds_test

import (
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	clusterservice "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpointservice "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/workload"
	"github.com/tributary-dev/tributary/internal/xds"
	"github.com/tributary-dev/tributary/internal/xdstest"
)

func mustOpen(t *testing.T, p *xds.Publisher, group string, opts xds.PublicationOptions) *xds.Publication {
	t.Helper()
	pub, err := p.Open(group, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(pub.Close)
	return pub
}

// moveEndpoint moves the first endpoint of EndpointSlice i elsewhere: only
// one ClusterLoadAssignment changes.
func moveEndpoint(objs *source.Objects, i int, to string) {
	eps := objs.EndpointSlices[i].Endpoints.Unpack()
	eps[0] = workload.ReadyEndpoint(to)
	objs.EndpointSlices[i].Endpoints = source.MakeEndpoints(eps...)
}

// State of the World over ADS: the first responses hold everything; after
// one endpoint moves, only its ClusterLoadAssignment is sent (EDS is not a
// full-state type), and no CDS response at all; after a Cluster changes,
// CDS sends every Cluster (the protocol requires it for CDS), with a new
// version.
func TestSotWSendsOnlyChangedResources(t *testing.T) {
	p, conn := startServer(t, xds.Options{})
	objs, v1 := translated(3, 2)
	pub := mustOpen(t, p, "edge", xds.PublicationOptions{})
	pub.Apply(everything(v1))
	all := names(v1.Clusters)

	c := xdstest.NewSotW(t, conn)
	c.Send(&discoveryv3.DiscoveryRequest{Node: node("envoy-1"), TypeUrl: resourcev3.ClusterType})
	cds := c.Recv()
	if got := xdstest.SotWNames(t, cds); !slices.Equal(got, all) {
		t.Fatalf("CDS: got %v, want %v", got, all)
	}
	c.Ack(cds)
	c.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNames: all})
	eds := c.Recv()
	if got := xdstest.SotWNames(t, eds); !slices.Equal(got, all) {
		t.Fatalf("EDS: got %v, want %v", got, all)
	}
	c.Ack(eds, all...)

	// Every Cluster served gets its endpoints over ADS.
	cl := unpack(t, cds.GetResources()[0], new(clusterv3.Cluster))
	if cl.GetEdsClusterConfig().GetEdsConfig().GetAds() == nil {
		t.Errorf("Cluster %s: eds_config is %v, want ads", cl.GetName(), cl.GetEdsClusterConfig().GetEdsConfig())
	}

	moveEndpoint(objs, 2, "10.200.0.1")
	v2 := translate.Translate(objs, source.Settings{})
	ch := changes(v1, v2)
	if len(ch.Clusters) != 0 || len(ch.ClusterLoadAssignments) != 1 {
		t.Fatalf("test setup: moving an endpoint changed %v and %v", names(ch.Clusters), names(ch.ClusterLoadAssignments))
	}
	pub.Apply(ch)
	eds2 := c.Recv()
	if eds2.GetTypeUrl() != resourcev3.EndpointType {
		t.Fatalf("after an endpoint moved, got a %s response, want EDS only", eds2.GetTypeUrl())
	}
	if got, want := xdstest.SotWNames(t, eds2), names(ch.ClusterLoadAssignments); !slices.Equal(got, want) {
		t.Fatalf("EDS after a move: got %v, want exactly %v", got, want)
	}
	if eds2.GetVersionInfo() == eds.GetVersionInfo() {
		t.Errorf("EDS version %q did not change", eds2.GetVersionInfo())
	}
	got := unpack(t, eds2.GetResources()[0], new(endpointv3.ClusterLoadAssignment))
	want := new(endpointv3.ClusterLoadAssignment)
	if err := proto.Unmarshal(ch.ClusterLoadAssignments[0].Body, want); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
		t.Errorf("published ClusterLoadAssignment differs from the translated one (-want +got):\n%s", d)
	}
	c.Ack(eds2, all...)

	objs.ExtensionServices[0].Spec.LoadBalancerPolicy = &source.LoadBalancerPolicy{Strategy: "Random"}
	v3 := translate.Translate(objs, source.Settings{})
	ch = changes(v2, v3)
	if len(ch.Clusters) != 1 || len(ch.ClusterLoadAssignments) != 0 {
		t.Fatalf("test setup: a new load balancer policy changed %v and %v", names(ch.Clusters), names(ch.ClusterLoadAssignments))
	}
	pub.Apply(ch)
	cds2 := c.Recv()
	if cds2.GetTypeUrl() != resourcev3.ClusterType {
		t.Fatalf("after a Cluster changed, got a %s response, want CDS", cds2.GetTypeUrl())
	}
	if got := xdstest.SotWNames(t, cds2); !slices.Equal(got, all) {
		t.Errorf("CDS is full-state: got %v, want %v", got, all)
	}
	if cds2.GetVersionInfo() == cds.GetVersionInfo() {
		t.Errorf("CDS version %q did not change", cds2.GetVersionInfo())
	}
}

// Delta over ADS: every resource carries its own version; a change sends
// exactly the changed resource, and a removal names exactly what was
// removed.
func TestDeltaSendsOnlyChangedResources(t *testing.T) {
	p, conn := startServer(t, xds.Options{})
	objs, v1 := translated(3, 2)
	pub := mustOpen(t, p, "edge", xds.PublicationOptions{})
	pub.Apply(everything(v1))
	all := names(v1.Clusters)

	c := xdstest.NewDelta(t, conn)
	c.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node("envoy-1"), TypeUrl: resourcev3.ClusterType})
	cds := c.Recv()
	if got := xdstest.DeltaNames(cds); !slices.Equal(got, all) {
		t.Fatalf("CDS: got %v, want %v", got, all)
	}
	c.Ack(cds)
	c.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: all})
	eds := c.Recv()
	if got := xdstest.DeltaNames(eds); !slices.Equal(got, all) {
		t.Fatalf("EDS: got %v, want %v", got, all)
	}
	versions := map[string]string{}
	for _, r := range eds.GetResources() {
		if r.GetVersion() == "" {
			t.Errorf("%s has no version", r.GetName())
		}
		versions[r.GetName()] = r.GetVersion()
	}
	c.Ack(eds)

	moveEndpoint(objs, 4, "10.200.0.2")
	v2 := translate.Translate(objs, source.Settings{})
	ch := changes(v1, v2)
	pub.Apply(ch)
	eds2 := c.Recv()
	if got, want := xdstest.DeltaNames(eds2), names(ch.ClusterLoadAssignments); eds2.GetTypeUrl() != resourcev3.EndpointType || !slices.Equal(got, want) || len(eds2.GetRemovedResources()) != 0 {
		t.Fatalf("after an endpoint moved: got %s %v removing %v, want EDS %v only", eds2.GetTypeUrl(), got, eds2.GetRemovedResources(), want)
	}
	if r := eds2.GetResources()[0]; r.GetVersion() == versions[r.GetName()] {
		t.Errorf("%s: version %q did not change", r.GetName(), r.GetVersion())
	}
	c.Ack(eds2)

	// Deleting an ExtensionService removes its Cluster and its
	// ClusterLoadAssignment, and nothing else.
	objs.ExtensionServices = objs.ExtensionServices[1:]
	v3 := translate.Translate(objs, source.Settings{})
	ch = changes(v2, v3)
	pub.Apply(ch)
	expectDeltaRemovals(t, c, ch, "after a deletion")
}

// A client of another node group sees nothing of "edge"; node.cluster
// names the group, node.id does when node.cluster is empty.
func TestNodeGroups(t *testing.T) {
	p, conn := startServer(t, xds.Options{})
	_, res := translated(2, 1)
	mustOpen(t, p, "edge", xds.PublicationOptions{}).Apply(everything(res))
	_, other := translated(1, 1)
	mustOpen(t, p, "lone-client", xds.PublicationOptions{}).Apply(everything(other))

	for _, tc := range []struct {
		node *corev3.Node
		want []string
	}{
		{&corev3.Node{Id: "x", Cluster: "edge"}, names(res.Clusters)},
		{&corev3.Node{Id: "lone-client"}, names(other.Clusters)},
		{&corev3.Node{Id: "lone-client", Cluster: "elsewhere"}, []string{}},
	} {
		c := xdstest.NewDelta(t, conn)
		c.Send(&discoveryv3.DeltaDiscoveryRequest{Node: tc.node, TypeUrl: resourcev3.ClusterType})
		if got := xdstest.DeltaNames(c.Recv()); !slices.Equal(got, tc.want) {
			t.Errorf("node %v: got %v, want %v", tc.node, got, tc.want)
		}
	}
	if got := xds.NodeGroup(&corev3.Node{Id: "a", Cluster: "b"}); got != "b" {
		t.Errorf("NodeGroup = %q, want the node's cluster", got)
	}
}

// The per-type services serve the same groups as ADS: EDS in State of the
// World, CDS in Delta.
func TestPerTypeServices(t *testing.T) {
	p, conn := startServer(t, xds.Options{})
	_, res := translated(2, 1)
	mustOpen(t, p, "edge", xds.PublicationOptions{}).Apply(everything(res))
	all := names(res.Clusters)

	eds, err := endpointservice.NewEndpointDiscoveryServiceClient(conn).StreamEndpoints(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := eds.Send(&discoveryv3.DiscoveryRequest{Node: node("envoy-1"), ResourceNames: all}); err != nil {
		t.Fatal(err)
	}
	resp, err := eds.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if got := xdstest.SotWNames(t, resp); resp.GetTypeUrl() != resourcev3.EndpointType || !slices.Equal(got, all) {
		t.Errorf("EDS service: got %s %v, want %v", resp.GetTypeUrl(), got, all)
	}

	cds, err := clusterservice.NewClusterDiscoveryServiceClient(conn).DeltaClusters(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := cds.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node("envoy-1")}); err != nil {
		t.Fatal(err)
	}
	dresp, err := cds.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if got := xdstest.DeltaNames(dresp); dresp.GetTypeUrl() != resourcev3.ClusterType || !slices.Equal(got, all) {
		t.Errorf("CDS service: got %s %v, want %v", dresp.GetTypeUrl(), got, all)
	}
}

// With Listeners, a Cluster refused by validation gets no Listener: it
// would route to nothing.
func TestListenersOnlyForPublishedClusters(t *testing.T) {
	rec := newRecorder()
	p, conn := startServer(t, xds.Options{Metrics: rec})
	_, res := translated(2, 1)
	ch := everything(res)
	ch.Clusters = append(ch.Clusters, translate.Resource{Name: "extension/x/undecodable", Version: "junk", Body: []byte{0xff}})
	mustOpen(t, p, "edge", xds.PublicationOptions{Listeners: true}).Apply(ch)

	c := xdstest.NewDelta(t, conn)
	c.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node("grpc-1"), TypeUrl: resourcev3.ListenerType})
	if got, want := xdstest.DeltaNames(c.Recv()), names(res.Clusters); !slices.Equal(got, want) {
		t.Errorf("Listeners %v, want %v", got, want)
	}
	if got := rec.refusedSoFar(); !slices.Equal(got, []string{"edge " + resourcev3.ClusterType + " extension/x/undecodable"}) {
		t.Errorf("refused %v", got)
	}
}

// expectDeltaRemovals receives and acknowledges the CDS and the EDS
// response that follow ch, which must remove exactly ch's names and send
// nothing else.
func expectDeltaRemovals(t *testing.T, c *xdstest.DeltaClient, ch translate.Changes, when string) {
	t.Helper()
	for range 2 {
		resp := c.Recv()
		want := ch.RemovedClusters
		if resp.GetTypeUrl() == resourcev3.EndpointType {
			want = ch.RemovedClusterLoadAssignments
		}
		if len(resp.GetResources()) != 0 || !slices.Equal(resp.GetRemovedResources(), want) {
			t.Errorf("%s %s: got %v removing %v, want only the removal of %v", resp.GetTypeUrl(), when, xdstest.DeltaNames(resp), resp.GetRemovedResources(), want)
		}
		c.Ack(resp)
	}
}
