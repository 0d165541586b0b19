package contour_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/tributary-dev/tributary/client"
	"github.com/tributary-dev/tributary/client/contour"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/internal/xdstest"
)

// startReplica runs bin serve with Sync and xDS on free loopback ports
// until the test ends.
func startReplica(t *testing.T, bin string) *testproc.Process {
	t.Helper()
	return testproc.Start(t, bin, "serve", "--address", "127.0.0.1:0", "--xds-address", "127.0.0.1:0", "--shutdown-timeout", "1s")
}

// fakeDNS answers the adapter's lookups with the addresses the test sets,
// like DNS for a headless Service whose ready pods change.
type fakeDNS struct {
	mu    sync.Mutex
	addrs []string
}

func (d *fakeDNS) set(addrs ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.addrs = addrs
}

func (d *fakeDNS) resolve(context.Context) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.addrs), nil
}

// viewState is a session's view in the caches' shape.
func viewState(v client.View) state {
	s := state{clusters: v.Clusters, clas: v.ClusterLoadAssignments, statuses: map[string]*tributaryv1.ExtensionServiceStatus{}}
	for n, st := range v.Statuses {
		s.statuses[n.Namespace+"/"+n.Name] = st
	}
	return s
}

// TestReplicatedAdapterFailover runs two real `tributary serve` processes
// behind a fake headless-Service lookup and feeds the adapter an informer
// sequence. It shows that every replica converges to the same complete
// output, that the caches get every change exactly once from one replica,
// that killing that replica moves the caches to the other with nothing
// delivered twice or lost, and that a replacement replica gets the full
// state and can take over in turn.
func TestReplicatedAdapterFailover(t *testing.T) {
	bin := testproc.Build(t)
	first, second := startReplica(t, bin), startReplica(t, bin)
	// An Envoy on each replica, as Envoys connect to any of them.
	envoys := map[string]*xdstest.Watcher{first.Address: watchXDS(t, first.XDSAddress), second.Address: watchXDS(t, second.XDSAddress)}
	dns := &fakeDNS{}
	dns.set(first.Address, second.Address)

	logs := &testproc.Buffer{}
	defer func() {
		if t.Failed() {
			t.Logf("adapter log:\n%s", logs)
			for _, p := range []*testproc.Process{first, second} {
				t.Logf("replica %s log:\n%s", p.Address, p.Log())
			}
		}
	}()
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ca1, ca2 := newCA(t, "authz CA 1"), newCA(t, "authz CA 2")
	sink := newCaches()
	a, err := contour.NewReplicatedAdapter(t.Context(), &contour.Config{XDSClusterName: "tributary"}, dns.resolve,
		contour.WithClusterSink(sink), contour.WithEndpointSink(sink), contour.WithStatusWriter(sink),
		contour.WithDebounce(-1), // every step ends with an explicit Flush
		contour.WithSyncOptions(client.WithLogger(logger), client.WithBackoff(10*time.Millisecond, 100*time.Millisecond),
			client.WithXDSPublishing(xdsNode.GetCluster(), false)),
		contour.WithResolveInterval(10*time.Millisecond),
		contour.WithLogger(logger),
		contour.WithXDSNackHandler(func(replica string, n *tributaryv1.XdsNack) {
			t.Errorf("replica %s: an xDS client rejected %v: %s", replica, n.GetResourceNames(), n.GetErrorDetail())
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	// step flushes and checks what the caches got: exactly wantCalls and
	// the state want. Then every replica the adapter knows must converge to
	// want; wantReplicas lists them.
	step := func(name string, wantCalls []string, want state, wantReplicas ...*testproc.Process) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if err := a.Flush(ctx); err != nil {
			t.Fatalf("%s: Flush: %v", name, err)
		}
		if d := cmp.Diff(wantCalls, sink.takeCalls(), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: calls (-want +got):\n%s", name, d)
		}
		if d := cmp.Diff(want, sink.state(), cmp.AllowUnexported(state{}), protocmp.Transform(), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: caches (-want +got):\n%s", name, d)
		}
		var wantAddrs []string
		for _, p := range wantReplicas {
			wantAddrs = append(wantAddrs, p.Address)
		}
		slices.Sort(wantAddrs)
		awaitReplicas(t, name, a, envoys, wantAddrs, want)
	}
	one := func(c *clusterv3.Cluster, cla *endpointv3.ClusterLoadAssignment, st *tributaryv1.ExtensionServiceStatus) state {
		// Envoy fetches the endpoints from Tributary, through its
		// bootstrap cluster "tributary".
		eds := c.GetEdsClusterConfig().GetEdsConfig().GetApiConfigSource().GetGrpcServices()[0].GetEnvoyGrpc()
		eds.ClusterName, eds.Authority = "tributary", "tributary"
		return state{
			clusters: map[string]*clusterv3.Cluster{clusterName: c},
			clas:     map[string]*endpointv3.ClusterLoadAssignment{clusterName: cla},
			statuses: map[string]*tributaryv1.ExtensionServiceStatus{"auth/ext-authz": st},
		}
	}

	// The initial list.
	stableV1 := endpointSlice("authz-stable-7x2kq", "authz-stable", pod{ip: "10.244.1.17", ready: true}, pod{ip: "10.244.2.9", ready: true})
	canary := endpointSlice("authz-canary-p4n8d", "authz-canary", pod{ip: "10.244.2.30", ready: true})
	a.OnAdd(authzService("authz-canary"), true)
	a.OnAdd(extAuthz(1, 80, 20), true)
	a.OnAdd(canary, true)
	a.OnAdd(caSecret(ca1), true)
	a.OnAdd(stableV1, true)
	a.OnAdd(authzService("authz-stable"), true)
	step("initial list", []string{
		"clusters changed=[extension/auth/ext-authz] removed=[]",
		"endpoints changed=[extension/auth/ext-authz] removed=[]",
		"status auth/ext-authz True",
	}, one(wantCluster(t, ca1),
		wantCLA(locality{"authz-stable", 80, []string{"10.244.1.17", "10.244.2.9"}}, locality{"authz-canary", 20, []string{"10.244.2.30"}}),
		validStatus(1, locality{"authz-stable", 80, []string{"10.244.1.17", "10.244.2.9"}}, locality{"authz-canary", 20, []string{"10.244.2.30"}})), first, second)

	canaryV2 := endpointSlice("authz-canary-p4n8d", "authz-canary", pod{ip: "10.244.2.30", ready: true}, pod{ip: "10.244.1.31", ready: true})
	a.OnUpdate(canary, canaryV2)
	step("canary scaled up", []string{"endpoints changed=[extension/auth/ext-authz] removed=[]", "status auth/ext-authz True"},
		one(wantCluster(t, ca1),
			wantCLA(locality{"authz-stable", 80, []string{"10.244.1.17", "10.244.2.9"}}, locality{"authz-canary", 20, []string{"10.244.1.31", "10.244.2.30"}}),
			validStatus(1, locality{"authz-stable", 80, []string{"10.244.1.17", "10.244.2.9"}}, locality{"authz-canary", 20, []string{"10.244.1.31", "10.244.2.30"}})), first, second)

	// The replica the caches follow dies; DNS still lists it for a while.
	// The next change reaches the caches through the survivor, once.
	primary, survivor := first, second
	if a.Primary() == second.Address {
		primary, survivor = second, first
	}
	if a.Primary() != primary.Address {
		t.Fatalf("primary %q, want one of the replicas", a.Primary())
	}
	primary.Kill()
	stableV2 := endpointSlice("authz-stable-9kd2m", "authz-stable", pod{ip: "10.244.1.40", ready: true}, pod{ip: "10.244.3.41", ready: true})
	a.OnAdd(stableV2, false)
	a.OnDelete(deletedFinalStateUnknown{Key: "auth/authz-stable-7x2kq", Obj: stableV1})
	afterRollout := one(wantCluster(t, ca1),
		wantCLA(locality{"authz-stable", 80, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 20, []string{"10.244.1.31", "10.244.2.30"}}),
		validStatus(1, locality{"authz-stable", 80, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 20, []string{"10.244.1.31", "10.244.2.30"}}))
	step("stable rollout with the primary dead", []string{"endpoints changed=[extension/auth/ext-authz] removed=[]"}, afterRollout)
	if got := a.Primary(); got != survivor.Address {
		t.Errorf("primary %q after the failover, want the survivor %s", got, survivor.Address)
	}

	// A replacement starts and DNS moves to it: it is sent the complete
	// object set at once and converges with no Flush. The caches get
	// nothing: their replica did not change.
	replacement := startReplica(t, bin)
	envoys[replacement.Address] = watchXDS(t, replacement.XDSAddress)
	dns.set(survivor.Address, replacement.Address)
	awaitReplicas(t, "replacement started", a, envoys, slices.Sorted(slices.Values([]string{survivor.Address, replacement.Address})), afterRollout)
	if calls := sink.takeCalls(); len(calls) != 0 {
		t.Errorf("calls when the replacement joined: %q", calls)
	}

	update := func(old, obj any) { a.OnUpdate(old, obj) }
	update(extAuthz(1, 80, 20), extAuthz(2, 50, 50))
	afterReweight := one(wantCluster(t, ca1),
		wantCLA(locality{"authz-stable", 50, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 50, []string{"10.244.1.31", "10.244.2.30"}}),
		validStatus(2, locality{"authz-stable", 50, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 50, []string{"10.244.1.31", "10.244.2.30"}}))
	step("weights 50/50", []string{
		"endpoints changed=[extension/auth/ext-authz] removed=[]",
		"status auth/ext-authz True",
	}, afterReweight, survivor, replacement)

	// The survivor dies too: the replacement, which has followed every
	// change, takes over.
	survivor.Kill()
	update(caSecret(ca1), caSecret(ca2))
	step("CA rotated with the survivor dead", []string{"clusters changed=[extension/auth/ext-authz] removed=[]"},
		one(wantCluster(t, ca2),
			wantCLA(locality{"authz-stable", 50, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 50, []string{"10.244.1.31", "10.244.2.30"}}),
			validStatus(2, locality{"authz-stable", 50, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 50, []string{"10.244.1.31", "10.244.2.30"}})))
	if got := a.Primary(); got != replacement.Address {
		t.Errorf("primary %q after the second failover, want the replacement %s", got, replacement.Address)
	}
}

// awaitReplicas waits until the adapter knows exactly the replicas at addrs,
// each one's output is want, and each serves want's Clusters and
// ClusterLoadAssignments to its Envoy.
func awaitReplicas(t *testing.T, name string, a *contour.ReplicatedAdapter, envoys map[string]*xdstest.Watcher, addrs []string, want state) {
	t.Helper()
	if addrs == nil {
		return
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		views := a.Views()
		var diffs []string
		if got := slices.Sorted(maps.Keys(views)); !slices.Equal(got, addrs) {
			diffs = append(diffs, fmt.Sprintf("replicas %v, want %v", got, addrs))
		}
		for _, addr := range addrs {
			v, ok := views[addr]
			if !ok {
				continue
			}
			if d := cmp.Diff(want, viewState(v), cmp.AllowUnexported(state{}), protocmp.Transform(), cmpopts.EquateEmpty()); d != "" {
				diffs = append(diffs, fmt.Sprintf("replica %s (-want +got):\n%s", addr, d))
			}
			served, err := servedState(envoys[addr])
			if err != nil {
				t.Fatalf("%s: replica %s: xDS stream: %v", name, addr, err)
			}
			if d := cmp.Diff(servedOverXDS(want), served, cmp.AllowUnexported(state{}), protocmp.Transform(), cmpopts.EquateEmpty()); d != "" {
				diffs = append(diffs, fmt.Sprintf("replica %s over xDS (-want +got):\n%s", addr, d))
			}
		}
		if len(diffs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: replicas did not converge within 30s:\n%s", name, diffs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// xdsNode is the node an Envoy of Contour's example installation sends:
// Contour starts it with --service-cluster $(CONTOUR_NAMESPACE).
var xdsNode = &corev3.Node{Id: "envoy-7d9f", Cluster: "projectcontour"}

// watchXDS is an Envoy's view of the xDS server at addr until the test
// ends: one State of the World ADS stream subscribed to every Cluster and
// to the ClusterLoadAssignment of ext-authz, ACKing each response and
// keeping what it accepted.
func watchXDS(t *testing.T, addr string) *xdstest.Watcher {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return xdstest.Watch(context.Background(), t, conn, xdstest.SotW, xdsNode, map[string][]string{
		resourcev3.ClusterType:  nil,
		resourcev3.EndpointType: {clusterName},
	})
}

// servedState returns the Clusters and ClusterLoadAssignments w accepted so
// far, and the stream's error.
func servedState(w *xdstest.Watcher) (state, error) {
	st, err := w.State()
	out := state{clusters: map[string]*clusterv3.Cluster{}, clas: map[string]*endpointv3.ClusterLoadAssignment{}}
	for name, m := range st.Resources[resourcev3.ClusterType] {
		out.clusters[name] = m.(*clusterv3.Cluster)
	}
	for name, m := range st.Resources[resourcev3.EndpointType] {
		out.clas[name] = m.(*endpointv3.ClusterLoadAssignment)
	}
	return out, err
}

// servedOverXDS is what an xDS server that serves want's Clusters and
// ClusterLoadAssignments on one ADS stream sends: the Clusters' EDS config
// names that stream ("ads") instead of the translator's xDS cluster.
func servedOverXDS(want state) state {
	out := state{clusters: map[string]*clusterv3.Cluster{}, clas: want.clas}
	for name, c := range want.clusters {
		c = proto.CloneOf(c)
		c.GetEdsClusterConfig().EdsConfig = &corev3.ConfigSource{
			ResourceApiVersion:    corev3.ApiVersion_V3,
			ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		}
		out.clusters[name] = c
	}
	return out
}
