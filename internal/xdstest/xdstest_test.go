package xdstest_test

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tributary-dev/tributary/internal/xdstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var node = &corev3.Node{Id: "envoy-1", Cluster: "edge"}

// serve runs go-control-plane's ADS server over a snapshot cache on
// loopback until the test ends, and returns the cache and a connection.
func serve(t *testing.T) (cachev3.SnapshotCache, *grpc.ClientConn) {
	t.Helper()
	cache := cachev3.NewSnapshotCache(false, cachev3.IDHash{}, nil)
	s := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(s, serverv3.NewServer(context.Background(), cache, nil))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		s.Stop()
		<-done
	})
	return cache, conn
}

func cluster(name string) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 name,
		ConnectTimeout:       durationpb.New(time.Second),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{EdsConfig: &corev3.ConfigSource{
			ResourceApiVersion:    corev3.ApiVersion_V3,
			ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		}},
	}
}

func cla(name string, weight uint32) *endpointv3.ClusterLoadAssignment {
	return &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointv3.LocalityLbEndpoints{{
		Locality:            &corev3.Locality{Zone: "a"},
		LoadBalancingWeight: wrapperspb.UInt32(weight),
	}}}
}

func setSnapshot(t *testing.T, cache cachev3.SnapshotCache, version string, clusters []types.Resource, clas []types.Resource) {
	t.Helper()
	snap, err := cachev3.NewSnapshot(version, map[resourcev3.Type][]types.Resource{
		resourcev3.ClusterType: clusters, resourcev3.EndpointType: clas,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cache.SetSnapshot(context.Background(), node.GetId(), snap); err != nil {
		t.Fatal(err)
	}
}

// The stepwise clients get what they subscribe to, in both variants.
func TestClients(t *testing.T) {
	cache, conn := serve(t)
	setSnapshot(t, cache, "1", []types.Resource{cluster("a"), cluster("b")}, []types.Resource{cla("a", 1), cla("b", 1)})

	sotw := xdstest.NewSotW(t, conn)
	if got := xdstest.SotWNames(t, sotw.Subscribe(node, resourcev3.ClusterType)); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("SotW CDS: %v, want [a b]", got)
	}
	if got := xdstest.SotWNames(t, sotw.Subscribe(nil, resourcev3.EndpointType, "b")); !slices.Equal(got, []string{"b"}) {
		t.Errorf("SotW EDS: %v, want [b]", got)
	}

	delta := xdstest.NewDelta(t, conn)
	if got := xdstest.DeltaNames(delta.Subscribe(node, resourcev3.ClusterType)); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Delta CDS: %v, want [a b]", got)
	}
	if got := xdstest.DeltaNames(delta.Subscribe(nil, resourcev3.EndpointType, "a")); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Delta EDS: %v, want [a]", got)
	}
}

// A Watcher follows changes and removals in both variants, and NACKs a
// resource that fails validation, which ends its stream.
func TestWatcher(t *testing.T) {
	for _, mode := range []xdstest.Mode{xdstest.SotW, xdstest.Delta} {
		t.Run(string(mode), func(t *testing.T) {
			cache, conn := serve(t)
			setSnapshot(t, cache, "1", []types.Resource{cluster("a"), cluster("b")}, []types.Resource{cla("a", 1)})
			w := xdstest.Watch(t.Context(), t, conn, mode, node, map[string][]string{
				resourcev3.ClusterType: nil, resourcev3.EndpointType: {"a"},
			})
			st := w.WaitFor(t, "two Clusters and a ClusterLoadAssignment", time.Minute, func(s xdstest.State) bool {
				return len(s.Resources[resourcev3.ClusterType]) == 2 && s.Get(resourcev3.EndpointType, "a") != nil
			})
			if st.Acked[resourcev3.ClusterType] == 0 || st.At.IsZero() {
				t.Errorf("state %+v counts no ACK or has no time", st)
			}

			setSnapshot(t, cache, "2", []types.Resource{cluster("a")}, []types.Resource{cla("a", 2)})
			w.WaitFor(t, "b removed and a reweighted", time.Minute, func(s xdstest.State) bool {
				got, _ := s.Get(resourcev3.EndpointType, "a").(*endpointv3.ClusterLoadAssignment)
				return len(s.Resources[resourcev3.ClusterType]) == 1 && got.GetEndpoints()[0].GetLoadBalancingWeight().GetValue() == 2
			})

			setSnapshot(t, cache, "3", []types.Resource{cluster("a")}, []types.Resource{cla("a", 0)})
			_, err := w.Await(time.Minute, func(xdstest.State) bool { return false }, true)
			if err == nil || !strings.Contains(err.Error(), "NACKed") {
				t.Errorf("after an invalid ClusterLoadAssignment: %v, want the NACK", err)
			}
			if _, err := w.State(); err == nil {
				t.Error("State reports no error after the NACK")
			}
		})
	}
}

// A Watcher made with KeepEncoded (in both variants) or Undecoded (Delta)
// holds what it accepted as the Any it arrived in.
func TestWatcherKeepEncoded(t *testing.T) {
	for _, c := range []struct {
		name string
		mode xdstest.Mode
		opt  xdstest.WatchOption
	}{
		{"sotw", xdstest.SotW, xdstest.KeepEncoded()},
		{"delta", xdstest.Delta, xdstest.KeepEncoded()},
		{"delta-undecoded", xdstest.Delta, xdstest.Undecoded()},
	} {
		t.Run(c.name, func(t *testing.T) {
			cache, conn := serve(t)
			setSnapshot(t, cache, "1", nil, []types.Resource{cla("a", 3)})
			w := xdstest.Watch(t.Context(), t, conn, c.mode, node, map[string][]string{resourcev3.EndpointType: {"a"}}, c.opt)
			st := w.WaitFor(t, "the ClusterLoadAssignment", time.Minute, func(s xdstest.State) bool {
				return s.Get(resourcev3.EndpointType, "a") != nil
			})
			a, ok := st.Get(resourcev3.EndpointType, "a").(*anypb.Any)
			if !ok {
				t.Fatalf("held %T, want *anypb.Any", st.Get(resourcev3.EndpointType, "a"))
			}
			got := &endpointv3.ClusterLoadAssignment{}
			if err := a.UnmarshalTo(got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(cla("a", 3), got, protocmp.Transform()); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
}
