package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/tributary-dev/tributary/client"
	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/internal/xds"
	"github.com/tributary-dev/tributary/internal/xdstest"
)

const (
	// nodeGroup is the xDS node group the split test publishes to; every
	// xDS client of the test names it as its node.cluster.
	nodeGroup = "e2e"
	// extensionName is the ExtensionService the caller dials; its Cluster,
	// ClusterLoadAssignment and Listener are all named clusterName.
	extensionName = "authz"
	clusterName   = "extension/" + namespace + "/" + extensionName
	// backendsPerService is how many authzbackend processes serve each
	// target Service.
	backendsPerService = 2
)

// Statistical bounds of the split assertions. Each call is a weighted
// random pick, so a share measured over n calls has a standard deviation
// of at most √(0.25/n): 1.1 points at n = 2000, where the issue allows ±5
// (4.5 σ or more: a false failure every 100,000 checks or so). Convergence
// is checked on small batches with a wider bound; it only needs to tell
// the new configuration from the old one, and every step moves some share
// by 20 points or more.
const (
	measureCalls     = 2000
	measureTolerance = 0.05
	probeCalls       = 200
	probeTolerance   = 0.10
)

// TestWeightedSplit is the end-to-end proof of weighted ExtensionServices:
// real processes on loopback (tributary serve with xDS, six ext_authz
// backends, two per Service, and a caller using gRPC-Go's own xDS client,
// which speaks State-of-the-World ADS), one ExtensionService fed through a
// Sync session, and the share of Check calls each Service receives,
// measured over 2000 calls per step:
//
//  1. 80/20 between Services a and b;
//  2. 50/50;
//  3. b scaled to zero (its EndpointSlices emptied): all to a;
//  4. b back and a third Service c added, 60/20/20;
//  5. the caller restarted (a new xDS client and ADS stream): 60/20/20;
//  6. the server killed and restarted on the same ports: the Sync session
//     reconnects and restores the objects, the caller's xDS client
//     reconnects and keeps 60/20/20, then follows a change to 20/20/60.
//
// At every step, two raw ADS clients (one State of the World, one Delta,
// the incremental variant gRPC-Go lacks) must receive exactly the
// ClusterLoadAssignment the Sync session reports, and ACK it; no xDS client
// may NACK anything.
func TestWeightedSplit(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: builds and runs processes")
	}
	srv := startTributary(t, "127.0.0.1:0", "127.0.0.1:0")

	services := []string{"authz-a", "authz-b", "authz-c"}
	backends := map[string][]netip.AddrPort{}
	for _, svc := range services {
		for i := range backendsPerService {
			backends[svc] = append(backends[svc], startBackend(t, fmt.Sprintf("%s/%d", svc, i)))
		}
	}

	conn := dialSync(t, srv.grpcAddress)
	session, nacks := openSync(t, conn, publication{nodeGroup: nodeGroup, publishListeners: true})
	generation := int64(0)
	setWeights := func(targets ...target) {
		generation++
		session.Upsert(extensionServiceObject(extensionName, generation, targets...))
	}
	scale := func(svc string, up bool) {
		for i, addr := range backends[svc] {
			if !up {
				addr = netip.AddrPort{}
			}
			session.Upsert(endpointSliceObject(svc, i, addr))
		}
	}
	for _, svc := range services[:2] {
		session.Upsert(serviceObject(svc))
		scale(svc, true)
	}

	watchers := watchBoth(t, srv.xdsAddress)
	caller := startCaller(t, srv.xdsAddress, "e2e-caller-1")

	// step applies the changes made since the last one and checks that
	// every client follows.
	step := func(name string, timeout time.Duration, want map[string]float64, watchers []*xdstest.Watcher, caller *callerProcess) {
		t.Helper()
		flush(t, session)
		checkPublished(t, session, watchers)
		awaitSplit(t, name, caller, want, timeout)
		measureSplit(t, name, caller, backends, want)
		if n := nacks.all(); len(n) > 0 {
			t.Fatalf("%s: xDS clients NACKed: %v", name, n)
		}
	}

	setWeights(target{"authz-a", 80}, target{"authz-b", 20})
	step("80/20", 30*time.Second, map[string]float64{"authz-a": 0.8, "authz-b": 0.2}, watchers, caller)
	checkListenerAndCluster(t, session, watchers)

	setWeights(target{"authz-a", 50}, target{"authz-b", 50})
	step("50/50", 30*time.Second, map[string]float64{"authz-a": 0.5, "authz-b": 0.5}, watchers, caller)

	scale("authz-b", false)
	step("b scaled to zero", 30*time.Second, map[string]float64{"authz-a": 1, "authz-b": 0}, watchers, caller)

	scale("authz-b", true)
	session.Upsert(serviceObject("authz-c"))
	scale("authz-c", true)
	setWeights(target{"authz-a", 60}, target{"authz-b", 20}, target{"authz-c", 20})
	want602020 := map[string]float64{"authz-a": 0.6, "authz-b": 0.2, "authz-c": 0.2}
	step("third Service, 60/20/20", 30*time.Second, want602020, watchers, caller)

	// A new xDS client: a new process, a new ADS stream.
	caller.process.Stop(5 * time.Second)
	caller = startCaller(t, srv.xdsAddress, "e2e-caller-2")
	step("caller restarted, 60/20/20", 30*time.Second, want602020, watchers, caller)

	// The server crashes and comes back on the same ports. Its state is
	// gone: the Sync session reconnects and sends its objects again, and
	// every xDS client reconnects. The raw watchers' streams ended with
	// the old server; new ones take their place.
	srv.process.Kill()
	srv = startTributary(t, srv.grpcAddress, srv.xdsAddress)
	watchers = watchBoth(t, srv.xdsAddress)
	step("server restarted, 60/20/20", 60*time.Second, want602020, watchers, caller)
	setWeights(target{"authz-a", 20}, target{"authz-b", 20}, target{"authz-c", 60})
	step("after the restart, 20/20/60", 60*time.Second, map[string]float64{"authz-a": 0.2, "authz-b": 0.2, "authz-c": 0.6}, watchers, caller)
	session.Close() // before the server stops, so the session logs no broken stream
}

// tributaryProcess is a running `tributary serve` with xDS.
type tributaryProcess struct {
	process                 *testproc.Process
	grpcAddress, xdsAddress string
	// metricsAddress is empty unless the process serves metrics.
	metricsAddress string
}

// startTributary runs tributary serve on the given addresses (port 0 picks
// one) and reads back the addresses it listens on.
func startTributary(tb testing.TB, grpcAddress, xdsAddress string) *tributaryProcess {
	tb.Helper()
	p := testproc.Start(tb, program(tb, "tributary"), "serve", "--address", grpcAddress, "--xds-address", xdsAddress, "--shutdown-timeout", "1s")
	return &tributaryProcess{process: p, grpcAddress: p.Address, xdsAddress: p.XDSAddress}
}

// startBackend runs an authzbackend answering as identity.
func startBackend(tb testing.TB, identity string) netip.AddrPort {
	tb.Helper()
	p := testproc.Start(tb, program(tb, "authzbackend"), "--identity", identity)
	line := p.ReadLine(tb, 30*time.Second)
	addr, err := netip.ParseAddrPort(strings.TrimPrefix(line, "listening "))
	if err != nil {
		tb.Fatalf("authzbackend %s: first line %q: %v", identity, line, err)
	}
	return addr
}

// callerProcess is a long-running xdscaller: one gRPC channel, one xDS
// client, counting calls on command.
type callerProcess struct {
	process *testproc.Process
}

// bootstrap is the gRPC xDS bootstrap of a client with node id in node
// group group.
func bootstrap(xdsAddress, nodeID, group string) string {
	b, err := json.Marshal(map[string]any{
		"xds_servers": []any{map[string]any{
			"server_uri":      xdsAddress,
			"channel_creds":   []any{map[string]any{"type": "insecure"}},
			"server_features": []string{"xds_v3"},
		}},
		"node": map[string]any{"id": nodeID, "cluster": group},
	})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// startCaller starts a caller of the split test's ExtensionService, in its
// node group.
func startCaller(tb testing.TB, xdsAddress, nodeID string) *callerProcess {
	tb.Helper()
	return startCallerOf(tb, xdsAddress, nodeID, nodeGroup, clusterName)
}

// startCallerOf starts a caller with node id in node group group, dialing
// xds:///cluster, with xdscaller's extra flags args.
func startCallerOf(tb testing.TB, xdsAddress, nodeID, group, cluster string, args ...string) *callerProcess {
	tb.Helper()
	env := []string{"GRPC_XDS_BOOTSTRAP_CONFIG=" + bootstrap(xdsAddress, nodeID, group), "GRPC_XDS_BOOTSTRAP="}
	args = append([]string{"--target", "xds:///" + cluster}, args...)
	return &callerProcess{process: testproc.StartEnv(tb, program(tb, "xdscaller"), env, args...)}
}

// tally is xdscaller's answer to one command.
type tally struct {
	Calls      int            `json:"calls"`
	Identities map[string]int `json:"identities"`
	Errors     map[string]int `json:"errors"`
}

// call makes n calls and returns who answered them.
func (c *callerProcess) call(tb testing.TB, n int) tally {
	tb.Helper()
	if _, err := fmt.Fprintln(c.process.Stdin, n); err != nil {
		tb.Fatalf("xdscaller: %v", err)
	}
	// Calls take well under a millisecond each on loopback; a call still
	// waiting for its first configuration may take the caller's 5 s.
	line := c.process.ReadLine(tb, 60*time.Second+time.Duration(n)*time.Millisecond)
	var t tally
	if err := json.Unmarshal([]byte(line), &t); err != nil {
		tb.Fatalf("xdscaller printed %q: %v", line, err)
	}
	return t
}

// byService sums a tally's identities ("<service>/<index>") per Service.
func (t tally) byService() map[string]int {
	out := map[string]int{}
	for identity, n := range t.Identities {
		svc, _, _ := strings.Cut(identity, "/")
		out[svc] += n
	}
	return out
}

func (t tally) errorCount() int {
	n := 0
	for _, c := range t.Errors {
		n += c
	}
	return n
}

// splitWithin reports whether t's shares are each within tolerance of want
// (a Service wanted at 0 must get no call at all) and no call failed.
func splitWithin(t tally, want map[string]float64, tolerance float64) bool {
	if t.errorCount() > 0 {
		return false
	}
	got := t.byService()
	for svc := range got {
		if _, ok := want[svc]; !ok {
			return false
		}
	}
	for svc, share := range want {
		observed := float64(got[svc]) / float64(t.Calls)
		if share == 0 && got[svc] > 0 || math.Abs(observed-share) > tolerance {
			return false
		}
	}
	return true
}

// awaitSplit makes small batches of calls until one shows the wanted split,
// so that the calls measured next all see the new configuration.
func awaitSplit(tb testing.TB, step string, c *callerProcess, want map[string]float64, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	failed := 0
	for {
		t := c.call(tb, probeCalls)
		failed += t.errorCount()
		if splitWithin(t, want, probeTolerance) {
			if failed > 0 {
				tb.Logf("%s: %d calls failed before the split converged", step, failed)
			}
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: no batch of %d calls within %v showed the split %v; last: %+v", step, probeCalls, timeout, want, t)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// measureSplit makes measureCalls calls and checks the split: every share
// within measureTolerance of want, no call to a Service wanted at 0, no
// failure, and every backend of a wanted Service reached (its endpoints
// are all in the ClusterLoadAssignment).
func measureSplit(tb testing.TB, step string, c *callerProcess, backends map[string][]netip.AddrPort, want map[string]float64) {
	tb.Helper()
	t := c.call(tb, measureCalls)
	got := t.byService()
	tb.Logf("%s: %v of %d calls (per backend %v), want shares %v", step, got, t.Calls, t.Identities, want)
	if t.Calls != measureCalls || t.errorCount() > 0 {
		tb.Fatalf("%s: %d calls, failures %v", step, t.Calls, t.Errors)
	}
	if !splitWithin(t, want, measureTolerance) {
		tb.Fatalf("%s: split %v of %d calls is not within ±%.0f points of %v", step, got, t.Calls, 100*measureTolerance, want)
	}
	for svc, share := range want {
		if share == 0 {
			continue
		}
		for i := range backends[svc] {
			if t.Identities[fmt.Sprintf("%s/%d", svc, i)] == 0 {
				tb.Fatalf("%s: backend %s/%d got no call: %v", step, svc, i, t.Identities)
			}
		}
	}
}

// watchBoth opens a State-of-the-World and a Delta ADS watcher on the
// split test's node group, subscribed to its ExtensionService's Listener,
// Cluster and ClusterLoadAssignment.
func watchBoth(tb testing.TB, xdsAddress string) []*xdstest.Watcher {
	tb.Helper()
	return watchBothOf(tb, xdsAddress, nodeGroup, clusterName)
}

// watchBothOf is watchBoth for node group group, subscribed to the
// Listener, Cluster and ClusterLoadAssignment named cluster.
func watchBothOf(tb testing.TB, xdsAddress, group, cluster string) []*xdstest.Watcher {
	tb.Helper()
	conn, err := grpc.NewClient(xdsAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	subscriptions := map[string][]string{
		resourcev3.ListenerType: {cluster},
		resourcev3.ClusterType:  {cluster},
		resourcev3.EndpointType: {cluster},
	}
	var out []*xdstest.Watcher
	for _, mode := range []xdstest.Mode{xdstest.SotW, xdstest.Delta} {
		node := &corev3.Node{Id: "e2e-watcher-" + string(mode), Cluster: group}
		out = append(out, xdstest.Watch(tb.Context(), tb, conn, mode, node, subscriptions))
	}
	return out
}

// checkPublished waits until every watcher has accepted exactly the
// ClusterLoadAssignment the session reports.
func checkPublished(tb testing.TB, s *client.SyncSession, watchers []*xdstest.Watcher) {
	tb.Helper()
	want := s.View().ClusterLoadAssignments[clusterName]
	if want == nil {
		tb.Fatalf("the session has no ClusterLoadAssignment %q; statuses %v", clusterName, s.View().Statuses)
	}
	for _, w := range watchers {
		w.WaitFor(tb, "the session's ClusterLoadAssignment", 30*time.Second, func(st xdstest.State) bool {
			return proto.Equal(st.Get(resourcev3.EndpointType, clusterName), want)
		})
	}
}

// checkListenerAndCluster checks the other two resources every watcher
// holds: the Listener for proxyless gRPC, and the session's Cluster with
// its EDS pointed at the server's own ADS stream.
func checkListenerAndCluster(tb testing.TB, s *client.SyncSession, watchers []*xdstest.Watcher) {
	tb.Helper()
	wantCluster := proto.CloneOf(s.View().Clusters[clusterName])
	if wantCluster == nil {
		tb.Fatalf("the session has no Cluster %q", clusterName)
	}
	wantCluster.GetEdsClusterConfig().EdsConfig = &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
	wantListener := xds.BuildListener(clusterName)
	for _, w := range watchers {
		st := w.WaitFor(tb, "the Listener and Cluster", 30*time.Second, func(st xdstest.State) bool {
			return st.Get(resourcev3.ListenerType, clusterName) != nil && st.Get(resourcev3.ClusterType, clusterName) != nil
		})
		if diff := cmp.Diff(wantListener, st.Get(resourcev3.ListenerType, clusterName), protocmp.Transform()); diff != "" {
			tb.Errorf("%s watcher: Listener (-want +got):\n%s", w.Mode(), diff)
		}
		if diff := cmp.Diff(wantCluster, st.Get(resourcev3.ClusterType, clusterName).(*clusterv3.Cluster), protocmp.Transform()); diff != "" {
			tb.Errorf("%s watcher: Cluster (-want +got):\n%s", w.Mode(), diff)
		}
		if got := slices.Sorted(maps.Keys(st.Resources)); len(got) != 3 {
			tb.Errorf("%s watcher: resource types %v, want Listener, Cluster, ClusterLoadAssignment", w.Mode(), got)
		}
	}
}
