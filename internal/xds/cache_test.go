package xds_test

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/codes"

	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/internal/xds"
	"github.com/tributary-dev/tributary/internal/xdstest"
)

// An Envoy may ask for a type Tributary never publishes (RDS, say) on its
// ADS stream: it is answered that there is none, and the stream goes on.
func TestKnownTypeWithNothingPublished(t *testing.T) {
	p, conn := startServer(t, xds.Options{})
	_, res := translated(1, 1)
	mustOpen(t, p, "edge", xds.PublicationOptions{}).Apply(everything(res))

	c := xdstest.NewSotW(t, conn)
	routes := c.Subscribe(node("envoy-1"), resourcev3.RouteType, "some-route")
	if routes.GetTypeUrl() != resourcev3.RouteType || len(routes.GetResources()) != 0 {
		t.Errorf("RDS: got %s with %d resources, want an empty RDS answer", routes.GetTypeUrl(), len(routes.GetResources()))
	}
	eds := c.Subscribe(nil, resourcev3.EndpointType, names(res.ClusterLoadAssignments)...)
	if got := xdstest.SotWNames(t, eds); !slices.Equal(got, names(res.ClusterLoadAssignments)) {
		t.Errorf("EDS after RDS: got %v", got)
	}
}

// A client that names another node group on a later request is served the
// new group: over Delta, what it held of the old group and the new one
// lacks is removed; in State of the World, CDS sends the new group whole.
func TestStreamMovesToAnotherGroup(t *testing.T) {
	p, conn := startServer(t, xds.Options{})
	_, a := translated(3, 1)
	mustOpen(t, p, "a", xds.PublicationOptions{}).Apply(everything(a))
	_, b := translated(1, 1) // the first of a's, in the same version
	mustOpen(t, p, "b", xds.PublicationOptions{}).Apply(everything(b))

	d := xdstest.NewDelta(t, conn)
	d.Subscribe(&corev3.Node{Id: "d", Cluster: "a"}, resourcev3.ClusterType)
	d.Send(&discoveryv3.DeltaDiscoveryRequest{Node: &corev3.Node{Id: "d", Cluster: "b"}, TypeUrl: resourcev3.ClusterType, ResourceNamesSubscribe: []string{"extension/x/y"}})
	resp := d.Recv()
	if got, want := resp.GetRemovedResources(), append(names(a.Clusters)[1:], "extension/x/y"); len(resp.GetResources()) != 0 || !slices.Equal(got, want) {
		t.Errorf("Delta, after moving to b: got %v removing %v, want only the removal of %v", xdstest.DeltaNames(resp), got, want)
	}

	s := xdstest.NewSotW(t, conn)
	s.Subscribe(&corev3.Node{Id: "s", Cluster: "a"}, resourcev3.ClusterType)
	s.Send(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: "s", Cluster: "b"}, TypeUrl: resourcev3.ClusterType, VersionInfo: resp.GetSystemVersionInfo()})
	if got := xdstest.SotWNames(t, s.Recv()); !slices.Equal(got, names(b.Clusters)) {
		t.Errorf("SotW CDS after moving to b: got %v, want %v", got, names(b.Clusters))
	}
}

// A Delta client that reconnects says what it holds: it is sent what
// changed and the removal of what is gone, among what it subscribes to.
func TestDeltaInitialResourceVersions(t *testing.T) {
	p, conn := startServer(t, xds.Options{})
	_, res := translated(2, 1)
	mustOpen(t, p, "edge", xds.PublicationOptions{}).Apply(everything(res))
	held, changed := res.ClusterLoadAssignments[0], res.ClusterLoadAssignments[1]
	c := xdstest.NewDelta(t, conn)
	c.Send(&discoveryv3.DeltaDiscoveryRequest{
		Node: node("envoy-1"), TypeUrl: resourcev3.EndpointType,
		ResourceNamesSubscribe: []string{held.Name, changed.Name, "extension/gone/gone"},
		InitialResourceVersions: map[string]string{
			held.Name: held.Version, changed.Name: "older", "extension/gone/gone": "old", "extension/not/subscribed": "old",
		},
	})
	resp := c.Recv()
	if got := xdstest.DeltaNames(resp); !slices.Equal(got, []string{changed.Name}) {
		t.Errorf("sent %v, want only %s, which changed", got, changed.Name)
	}
	if got := resp.GetRemovedResources(); !slices.Equal(got, []string{"extension/gone/gone"}) {
		t.Errorf("removed %v, want only the subscribed name that is gone", got)
	}
}

// A resource name longer than any served ends its stream, without being
// repeated.
func TestNameTooLong(t *testing.T) {
	_, conn := startServer(t, xds.Options{})
	got := refusedStream(t, conn, &discoveryv3.DiscoveryRequest{Node: node("a"), TypeUrl: resourcev3.EndpointType, ResourceNames: []string{strings.Repeat("n", 600)}})
	wantStatus(t, got, codes.InvalidArgument, "a resource name is 600 bytes, longer than any this server serves (512)")
}

// A stream is logged when its first request is admitted and when it
// closes; one refused at once is logged neither way.
func TestStreamLogLines(t *testing.T) {
	var log testproc.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" {
				return slog.Attr{}
			}
			return a
		},
	}))
	p, conn := startServer(t, xds.Options{Logger: logger, Limits: xds.Limits{MaxNamesPerStream: 1}})
	refusedStream(t, conn, &discoveryv3.DiscoveryRequest{Node: node("refused"), TypeUrl: resourcev3.EndpointType, ResourceNames: []string{"a", "b"}})
	c := xdstest.NewDelta(t, conn)
	c.Subscribe(node("admitted"), resourcev3.EndpointType, "a")
	c.CloseSend()
	testproc.WaitFor(t, "the stream to close", func() bool { return len(p.Streams()) == 0 })
	want := "level=INFO msg=\"xDS stream opened\" stream=delta-1 node=admitted group=edge\n" +
		"level=INFO msg=\"xDS stream closed\" stream=delta-1 node=admitted group=edge\n"
	if got := log.String(); got != want {
		t.Errorf("logged:\n%s\nwant:\n%s", got, want)
	}
}
