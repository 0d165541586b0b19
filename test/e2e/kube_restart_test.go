package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/internal/xds"
	"github.com/tributary-dev/tributary/internal/xdstest"
)

// The restart and replica scenarios against a real API server: the API
// server, `tributary serve` and the host each go away and come back (or,
// with two Tributary replicas, one goes for good), and at no point may
// anything wrong be served.
//
// "Nothing wrong" is checked continuously, not only before and after:
//
//   - a servedRecorder holds its own ADS streams (one State of the World,
//     one Delta) to a server, reconnecting whenever one ends, and checks
//     EVERY response naming the ExtensionService's resources against the
//     states the test allows at that moment: the Listener for proxyless
//     gRPC, the one Cluster, and the ClusterLoadAssignments of the current
//     state (and, while a change is being made, of the next). A resource
//     withdrawn (left out of a State-of-the-World Listener or Cluster
//     response, or named in a Delta removal) is wrong unless the test
//     allows withdrawal. The allowed states narrow only once the recorder
//     itself holds the new one, so an old state served again is caught.
//   - a callProber makes batches of calls through the caller's xDS client
//     for the whole of each disruption, and every batch must succeed and
//     show the split (see probeBatchCalls).
//   - statuses: a disruption must not rewrite a status the API server
//     already holds (see checkStatusUntouched), and the Valid condition
//     stays what it was.

// Bounds of the probing during a disruption. Each call is a weighted random
// pick, so over probeBatchCalls = 100 calls a share has a standard
// deviation of at most 5 points; probeBatchTolerance is 5 of them, a false
// failure about once in 1.7 million batches (a run makes well under a
// hundred). A Service wanted at 20% gets no call in a batch with
// probability 0.8^100 = 2e-10, so the check that every wanted Service
// answered tells a state missing a Service from the right one for sure,
// which the share bound alone (80/20 against 100/0) would not.
const (
	probeBatchCalls     = 100
	probeBatchTolerance = 0.25
	// probePause paces the batches, so that the caller does not take a
	// core of a two-core machine while the API server restarts.
	probePause = 50 * time.Millisecond
)

// restartGrace is the --xds-withdraw-grace of the restarted Tributary
// server, which the host then leaves for good: short, so the test waits
// little for the withdrawal, but long enough for its other use, the hold
// of a server that has just started, to outlast the host's reconnection
// (its session and connection back off up to 1 s) by several times on a
// slow machine: a restore after the hold would be the server's correct
// answer, and this test's failure. Until then the servers run with the
// default (30 s), far longer than a host restart takes, so that a slow
// machine never sees a withdrawal that the docs allow.
const restartGrace = 5 * time.Second

// startTributaryArgs is startTributary with further flags.
func startTributaryArgs(tb testing.TB, grpcAddress, xdsAddress string, args ...string) *tributaryProcess {
	tb.Helper()
	args = append([]string{"serve", "--address", grpcAddress, "--xds-address", xdsAddress, "--shutdown-timeout", "1s", "--log-format", "json"}, args...)
	p := testproc.Start(tb, program(tb, "tributary"), args...)
	return &tributaryProcess{process: p, grpcAddress: p.Address, xdsAddress: p.XDSAddress, metricsAddress: p.MetricsAddress}
}

// servedAllowance is what a servedRecorder accepts.
type servedAllowance struct {
	listener proto.Message
	cluster  *clusterv3.Cluster
	clas     []*endpointv3.ClusterLoadAssignment
	// withdrawal allows resources to be withdrawn.
	withdrawal bool
}

// servedEvent is one resource a recorder received, its withdrawal
// (resource nil), or the end of a stream (ended set).
type servedEvent struct {
	at       time.Time
	mode     xdstest.Mode
	typeURL  string
	resource proto.Message
	ended    error
}

// servedRecorder checks every response a server sends about one
// ExtensionService's resources; see the top of this file.
type servedRecorder struct {
	label   string
	cluster string
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu      sync.Mutex
	allowed servedAllowance
	// latest holds, per stream mode, what the current stream holds by
	// type URL; a new stream starts empty.
	latest     map[xdstest.Mode]map[string]proto.Message
	events     []servedEvent
	violations []string
	changed    chan struct{}
}

var recordedTypes = []string{resourcev3.ListenerType, resourcev3.ClusterType, resourcev3.EndpointType}

// recordServed starts a recorder of what the server at xdsAddress serves
// node group group about cluster, allowing cluster and any of the
// ClusterLoadAssignments given.
func recordServed(t *testing.T, label, xdsAddress, group string, cluster *clusterv3.Cluster, clas ...*endpointv3.ClusterLoadAssignment) *servedRecorder {
	t.Helper()
	// The server may be away for a while (a restart): reconnect quickly
	// once it is back, rather than after gRPC's default backoff (up to
	// two minutes).
	conn, err := grpc.NewClient(xdsAddress,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 500 * time.Millisecond}, MinConnectTimeout: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &servedRecorder{
		label:   label,
		cluster: cluster.GetName(),
		cancel:  cancel,
		allowed: servedAllowance{listener: xds.BuildListener(cluster.GetName()), cluster: cluster, clas: clas},
		latest:  map[xdstest.Mode]map[string]proto.Message{},
		changed: make(chan struct{}),
	}
	ads := discoveryv3.NewAggregatedDiscoveryServiceClient(conn)
	for _, mode := range []xdstest.Mode{xdstest.SotW, xdstest.Delta} {
		node := &corev3.Node{Id: "e2e-recorder-" + string(mode), Cluster: group}
		r.wg.Go(func() {
			for ctx.Err() == nil {
				var err error
				if mode == xdstest.SotW {
					err = r.runSotW(ctx, ads, node)
				} else {
					err = r.runDelta(ctx, ads, node)
				}
				if ctx.Err() != nil {
					return
				}
				r.mu.Lock()
				r.events = append(r.events, servedEvent{at: time.Now(), mode: mode, ended: err})
				r.mu.Unlock()
				// The next stream waits for the connection to be ready
				// again; this only keeps a server that refuses streams
				// from being asked in a busy loop.
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
	t.Cleanup(func() {
		r.stop()
		_ = conn.Close()
		if !t.Failed() {
			r.checkClean(t, "at the end of the test")
		}
	})
	return r
}

// stop ends the recorder's streams; what it recorded stays.
func (r *servedRecorder) stop() {
	r.cancel()
	r.wg.Wait()
}

// newStream starts mode's record of a new stream, which holds nothing.
func (r *servedRecorder) newStream(mode xdstest.Mode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.latest[mode] = map[string]proto.Message{}
}

func (r *servedRecorder) runSotW(ctx context.Context, ads discoveryv3.AggregatedDiscoveryServiceClient, node *corev3.Node) error {
	st, err := ads.StreamAggregatedResources(ctx, grpc.WaitForReady(true))
	if err != nil {
		return err
	}
	r.newStream(xdstest.SotW)
	for i, typeURL := range recordedTypes {
		req := &discoveryv3.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: []string{r.cluster}}
		if i == 0 {
			req.Node = node
		}
		if err := st.Send(req); err != nil {
			return err
		}
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			return err
		}
		typeURL := resp.GetTypeUrl()
		var ours proto.Message
		for _, a := range resp.GetResources() {
			m, err := a.UnmarshalNew()
			if err != nil {
				return fmt.Errorf("decoding a %s: %w", typeURL, err)
			}
			if cachev3.GetResourceName(m) == r.cluster {
				ours = m
			}
		}
		// State of the World sends Listeners and Clusters whole: one left
		// out is withdrawn. ClusterLoadAssignments come only when they
		// change, and cannot be withdrawn.
		if ours != nil || typeURL != resourcev3.EndpointType {
			r.observe(xdstest.SotW, typeURL, ours)
		}
		if err := st.Send(&discoveryv3.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: []string{r.cluster}, ResponseNonce: resp.GetNonce(), VersionInfo: resp.GetVersionInfo()}); err != nil {
			return err
		}
	}
}

func (r *servedRecorder) runDelta(ctx context.Context, ads discoveryv3.AggregatedDiscoveryServiceClient, node *corev3.Node) error {
	st, err := ads.DeltaAggregatedResources(ctx, grpc.WaitForReady(true))
	if err != nil {
		return err
	}
	r.newStream(xdstest.Delta)
	for i, typeURL := range recordedTypes {
		req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: typeURL, ResourceNamesSubscribe: []string{r.cluster}}
		if i == 0 {
			req.Node = node
		}
		if err := st.Send(req); err != nil {
			return err
		}
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			return err
		}
		typeURL := resp.GetTypeUrl()
		for _, res := range resp.GetResources() {
			m, err := res.GetResource().UnmarshalNew()
			if err != nil {
				return fmt.Errorf("decoding a %s: %w", typeURL, err)
			}
			if cachev3.GetResourceName(m) == r.cluster {
				r.observe(xdstest.Delta, typeURL, m)
			}
		}
		if slices.Contains(resp.GetRemovedResources(), r.cluster) {
			r.observe(xdstest.Delta, typeURL, nil)
		}
		if err := st.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: typeURL, ResponseNonce: resp.GetNonce()}); err != nil {
			return err
		}
	}
}

// observe records one resource received (nil: withdrawn) and checks it.
func (r *servedRecorder) observe(mode xdstest.Mode, typeURL string, m proto.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, servedEvent{at: time.Now(), mode: mode, typeURL: typeURL, resource: m})
	if m == nil {
		delete(r.latest[mode], typeURL)
	} else {
		r.latest[mode][typeURL] = m
	}
	if !r.allowedLocked(typeURL, m) && len(r.violations) < 10 {
		what := "withdrawn"
		if m != nil {
			b, _ := protojson.Marshal(m)
			what = string(b)
		}
		r.violations = append(r.violations, fmt.Sprintf("%s %s %s: %s", r.label, mode, typeURL, what))
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *servedRecorder) allowedLocked(typeURL string, m proto.Message) bool {
	a := r.allowed
	if m == nil {
		return a.withdrawal
	}
	switch typeURL {
	case resourcev3.ListenerType:
		return proto.Equal(m, a.listener)
	case resourcev3.ClusterType:
		return proto.Equal(m, a.cluster)
	case resourcev3.EndpointType:
		return slices.ContainsFunc(a.clas, func(want *endpointv3.ClusterLoadAssignment) bool { return proto.Equal(m, want) })
	}
	return false
}

// allow replaces the ClusterLoadAssignments the recorder accepts.
func (r *servedRecorder) allow(clas ...*endpointv3.ClusterLoadAssignment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.allowed.clas = clas
}

// allowWithdrawal accepts withdrawals from now on.
func (r *servedRecorder) allowWithdrawal() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.allowed.withdrawal = true
}

// await waits until ready holds for the latest state of both streams.
func (r *servedRecorder) await(t *testing.T, what string, ready func(mode xdstest.Mode, held map[string]proto.Message) bool) {
	t.Helper()
	timer := time.NewTimer(kubeTimeout)
	defer timer.Stop()
	for {
		r.mu.Lock()
		ok := ready(xdstest.SotW, r.latest[xdstest.SotW]) && ready(xdstest.Delta, r.latest[xdstest.Delta])
		changed := r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("%s: the %s recorder did not see %s within %v; events:\n%s", what, r.label, what, kubeTimeout, r.describe())
		}
	}
}

// awaitHolding waits until both streams hold the Listener, the Cluster
// and cla.
func (r *servedRecorder) awaitHolding(t *testing.T, step string, cla *endpointv3.ClusterLoadAssignment) {
	t.Helper()
	r.await(t, step+": the recorder holding the state", func(_ xdstest.Mode, held map[string]proto.Message) bool {
		return proto.Equal(held[resourcev3.ListenerType], r.allowed.listener) &&
			proto.Equal(held[resourcev3.ClusterType], r.allowed.cluster) &&
			proto.Equal(held[resourcev3.EndpointType], cla)
	})
}

// narrow waits until the recorder holds cla, then allows only it: from
// then on an older state served again is wrong.
func (r *servedRecorder) narrow(t *testing.T, step string, cla *endpointv3.ClusterLoadAssignment) {
	t.Helper()
	r.awaitHolding(t, step, cla)
	r.allow(cla)
}

// checkClean fails the test if the recorder received anything it did not
// allow.
func (r *servedRecorder) checkClean(t *testing.T, step string) {
	t.Helper()
	r.mu.Lock()
	violations := slices.Clone(r.violations)
	r.mu.Unlock()
	if len(violations) > 0 {
		t.Fatalf("%s: wrong output served:\n%s\nevents:\n%s", step, joinLines(violations), r.describe())
	}
}

// withdrawalsSince returns the withdrawals the recorder received since t0.
func (r *servedRecorder) withdrawalsSince(t0 time.Time) []servedEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []servedEvent
	for _, e := range r.events {
		if e.resource == nil && e.ended == nil && !e.at.Before(t0) {
			out = append(out, e)
		}
	}
	return out
}

// describe lists what the recorder received, for a failure message.
func (r *servedRecorder) describe() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	start := max(0, len(r.events)-40)
	for _, e := range r.events[start:] {
		what := "withdrawn"
		switch {
		case e.ended != nil:
			what = "stream ended: " + e.ended.Error()
		case e.resource != nil:
			b, _ := protojson.Marshal(e.resource)
			what = string(b)
			if len(what) > 300 {
				what = what[:300] + "…"
			}
		}
		out = append(out, fmt.Sprintf("%s %s %s %s", e.at.Format("15:04:05.000"), e.mode, e.typeURL, what))
	}
	return joinLines(out)
}

func joinLines(lines []string) string {
	out := ""
	for _, l := range lines {
		out += "  " + l + "\n"
	}
	return out
}

// callProber makes batches of calls through a caller until finished, and
// checks each: see probeBatchCalls.
type callProber struct {
	caller *callerProcess
	want   map[string]float64
	stop   chan struct{}
	done   chan struct{}

	mu      sync.Mutex
	batches []tally
	err     string
}

// probeTB is the testing.TB the prober's goroutine hands to ReadLine:
// a failure there ends the goroutine, and finish reports it.
type probeTB struct {
	testing.TB
	p *callProber
}

func (probeTB) Helper() { /* not a test helper */ }
func (tb probeTB) Fatalf(format string, args ...any) {
	tb.p.mu.Lock()
	tb.p.err = fmt.Sprintf(format, args...)
	tb.p.mu.Unlock()
	runtime.Goexit()
}

// startProbing starts making batches of calls; the split must be want
// throughout.
func startProbing(t *testing.T, c *callerProcess, want map[string]float64) *callProber {
	p := &callProber{caller: c, want: want, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tb := probeTB{TB: t, p: p}
		for {
			if _, err := fmt.Fprintln(c.process.Stdin, probeBatchCalls); err != nil {
				tb.Fatalf("xdscaller: %v", err)
			}
			line := c.process.ReadLine(tb, time.Minute)
			var got tally
			if err := json.Unmarshal([]byte(line), &got); err != nil {
				tb.Fatalf("xdscaller printed %q: %v", line, err)
			}
			p.mu.Lock()
			p.batches = append(p.batches, got)
			p.mu.Unlock()
			select {
			case <-p.stop:
				return
			case <-time.After(probePause):
			}
		}
	}()
	return p
}

// finish stops the probing and checks every batch: all calls answered,
// by the wanted Services only, each of those at least once, and each
// share within probeBatchTolerance.
func (p *callProber) finish(t *testing.T, step string) {
	t.Helper()
	close(p.stop)
	<-p.done
	if p.err != "" {
		t.Fatalf("%s: probing the caller: %s", step, p.err)
	}
	for i, b := range p.batches {
		got := b.byService()
		ok := b.Calls == probeBatchCalls && splitWithin(b, p.want, probeBatchTolerance)
		for svc, share := range p.want {
			if share > 0 && got[svc] == 0 {
				ok = false
			}
		}
		if !ok {
			t.Fatalf("%s: batch %d of %d calls made during the disruption: %v, failures %v; want shares %v (±%.0f points)", step, i+1, len(p.batches), got, b.Errors, p.want, 100*probeBatchTolerance)
		}
	}
	t.Logf("%s: %d batches of %d calls during the disruption, all with the split %v", step, len(p.batches), probeBatchCalls, p.want)
}

// withoutBackend is cla without the endpoint of backend.
func withoutBackend(cla *endpointv3.ClusterLoadAssignment, backend netip.AddrPort) *endpointv3.ClusterLoadAssignment {
	out := proto.CloneOf(cla)
	addr := documentationAddress(backend)
	for _, l := range out.GetEndpoints() {
		l.LbEndpoints = slices.DeleteFunc(l.LbEndpoints, func(e *endpointv3.LbEndpoint) bool {
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			return sa.GetAddress() == addr.Addr().String() && sa.GetPortValue() == uint32(addr.Port())
		})
	}
	return out
}

// servedCluster is the Cluster the host's sink holds, as xDS serves it:
// with its EDS over the ADS stream.
func (s *kubeSplit) servedCluster(t *testing.T) *clusterv3.Cluster {
	t.Helper()
	c := hostCluster(t, s.host.Lines(), s.cluster)
	if c == nil {
		t.Fatalf("the host's sink holds no Cluster %s", s.cluster)
	}
	c.GetEdsClusterConfig().EdsConfig = &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
	return c
}

// resourceVersion is the resourceVersion of ExtensionService name: it
// changes with every write, of the spec or of the status.
func (ns *kubeNamespace) resourceVersion(t *testing.T, name string) string {
	t.Helper()
	var es contourv1alpha1.ExtensionService
	if err := ns.k.client.Get(t.Context(), ctrlclient.ObjectKey{Namespace: ns.name, Name: name}, &es); err != nil {
		t.Fatalf("reading ExtensionService %s/%s: %v", ns.name, name, err)
	}
	return es.ResourceVersion
}

// markers counts the marker ExtensionServices of checkStatusUntouched.
var markers sync.Map

// checkStatusUntouched checks that the host wrote no status of
// kubeExtension since its output line from, and that nobody wrote the
// object at all since it had resourceVersion rv, while its Valid condition
// is still valid(generation).
//
// That nothing was written can only be known once the host's status
// writer has handled every status the disruption made the adapter report.
// The writer takes statuses in order, a new ExtensionService's at the
// back: so the test creates one (a marker, invalid, for a Service that
// does not exist, so that nothing is published for it) and waits for its
// status to be written. Every status reported before the marker's has
// then been written or skipped.
func (s *kubeSplit) checkStatusUntouched(t *testing.T, step, rv string, from int, generation int64) {
	t.Helper()
	n, _ := markers.LoadOrStore(t.Name(), new(int))
	*n.(*int)++
	marker := "marker-" + strconv.Itoa(*n.(*int))
	gen := s.ns.applyExtensionService(t, marker, extensionServiceSpec(target{"authz-missing", 1}))
	at := s.host.awaitStatusWrite(t, s.ns.Name(), marker, "ErrorPresent", gen)
	for _, l := range s.host.Lines()[from:at] {
		if l.Status != nil && l.Status.Namespace == s.ns.Name() && l.Status.Name == kubeExtension {
			t.Fatalf("%s: the host rewrote the status of %s: %+v", step, kubeExtension, *l.Status)
		}
	}
	if got := s.ns.resourceVersion(t, kubeExtension); got != rv {
		t.Fatalf("%s: ExtensionService %s was written (resourceVersion %s, was %s)", step, kubeExtension, got, rv)
	}
	s.ns.awaitCondition(t, step, kubeExtension, validCondition(generation))
}

// checkNoClusterChange fails if the host's sink was called since line from
// with anything but the Cluster it held.
func (s *kubeSplit) checkNoClusterChange(t *testing.T, step string, from int) {
	t.Helper()
	lines := s.host.Lines()
	for _, l := range lines[from:] {
		if l.Clusters != nil && (len(l.Clusters.Removed) > 0 || len(l.Clusters.Changed) > 0) {
			t.Fatalf("%s: the host's cluster sink was called: %+v", step, l.Clusters)
		}
	}
}

// awaitServedBy waits until watchers hold the Listener, the Cluster and
// cla (awaitServed, with other watchers).
func (s *kubeSplit) awaitServedBy(t *testing.T, step string, watchers []*xdstest.Watcher, cla *endpointv3.ClusterLoadAssignment) {
	t.Helper()
	saved := s.watchers
	s.watchers = watchers
	defer func() { s.watchers = saved }()
	s.awaitServed(t, step, cla)
}

// xdsGroup reads what the server's /debug/xds says of node group name,
// and whether it lists it.
func xdsGroup(t *testing.T, srv *tributaryProcess, name string) (xds.GroupStatus, bool) {
	t.Helper()
	code, body := testproc.Get(t, "http://"+srv.metricsAddress+"/debug/xds?versions=1")
	if code != 200 {
		t.Fatalf("/debug/xds: %d %s", code, body)
	}
	var status struct {
		Groups []xds.GroupStatus `json:"groups"`
	}
	if err := json.Unmarshal([]byte(body), &status); err != nil {
		t.Fatalf("/debug/xds: %v: %s", err, body)
	}
	for _, g := range status.Groups {
		if g.Name == name {
			return g, true
		}
	}
	return xds.GroupStatus{}, false
}

// The caller's split after each change is checked with awaitSplit's
// batches (200 calls, ±10 points), not measured over 2000 calls: the
// weights' accuracy is TestKubeWeightedSplit's to measure, and every
// change here moves a share by 30 points, which a batch tells apart. What
// is served is checked exactly, by the watchers and the recorder.

// TestKubeRestart takes one ExtensionService, served to a caller through
// the whole chain, through a restart of each of its parts, checking
// continuously that nothing wrong is served (see the top of the file):
//
//  1. the API server restarts (the host's informers reconnect and relist):
//     statuses are not rewritten; then an EndpointSlice emptied and filled
//     again and the weights changed are each served;
//  2. the host is killed and a new one started (a new Sync session taking
//     over the node group within the withdraw grace): what is served does
//     not change, statuses are not rewritten, and a change after is
//     served;
//  3. `tributary serve` is killed and started on the same ports (the
//     session reconnects and restores its objects): the same output comes
//     back, statuses are not rewritten, and a change after is served;
//  4. the host stops for good: after the server's withdraw grace, and not
//     before, every resource of the node group is withdrawn and the server
//     holds nothing for it (docs/xds.md, "Sessions ending and
//     reconnecting").
func TestKubeRestart(t *testing.T) {
	ns := newKubeNamespace(t)
	srv := startTributaryArgs(t, "127.0.0.1:0", "127.0.0.1:0")
	s := &kubeSplit{ns: ns, srv: srv, backends: map[string][]netip.AddrPort{}, cluster: ns.clusterName(kubeExtension)}
	services := []string{"authz-a", "authz-b"}
	for _, svc := range services {
		for i := range backendsPerService {
			s.backends[svc] = append(s.backends[svc], startBackend(t, fmt.Sprintf("%s/%d", svc, i)))
		}
	}
	// A session that lost its server retries within a second.
	hostCfg := hostConfig{NodeGroup: ns.Name(), Tributary: []string{srv.grpcAddress}, Args: []string{"--backoff-max", "1s"}}
	s.host = startHost(t, hostCfg)
	s.watchers = watchBothOf(t, srv.xdsAddress, ns.Name(), s.cluster)
	s.caller = startCallerOf(t, srv.xdsAddress, "kube-caller", ns.Name(), s.cluster, "--map-documentation-addresses")
	for _, svc := range services {
		s.createService(t, svc)
	}

	step := "80/20"
	t8020 := []target{{"authz-a", 80}, {"authz-b", 20}}
	want8020 := map[string]float64{"authz-a": 0.8, "authz-b": 0.2}
	cla8020 := s.wantAssignment(services, t8020...)
	gen := ns.applyExtensionService(t, kubeExtension, extensionServiceSpec(t8020...))
	ns.awaitCondition(t, step, kubeExtension, validCondition(gen))
	s.awaitServed(t, step, cla8020)
	awaitSplit(t, step, s.caller, want8020, kubeTimeout)
	cluster := s.servedCluster(t)
	rec := recordServed(t, "server", srv.xdsAddress, ns.Name(), cluster, cla8020)
	rec.awaitHolding(t, step, cla8020)

	// 1. The API server goes away and comes back.
	step = "API server restarted"
	rv := ns.resourceVersion(t, kubeExtension)
	from := len(s.host.Lines())
	probe := startProbing(t, s.caller, want8020)
	restartAPIServer(t)
	s.checkStatusUntouched(t, step, rv, from, gen)
	probe.finish(t, step)
	rec.checkClean(t, step)
	s.checkNoClusterChange(t, step, from)

	// Each informer still follows: a slice emptied, then filled again.
	step = "after the API server's restart, a slice emptied"
	claB1Gone := withoutBackend(cla8020, s.backends["authz-b"][1])
	rec.allow(cla8020, claB1Gone)
	ns.applyEndpointSlice(t, "authz-b", 1, netip.AddrPort{})
	s.awaitServed(t, step, claB1Gone)
	rec.narrow(t, step, claB1Gone)

	step = "after the API server's restart, the slice filled again"
	rec.allow(claB1Gone, cla8020)
	ns.applyEndpointSlice(t, "authz-b", 1, s.backends["authz-b"][1])
	s.awaitServed(t, step, cla8020)
	rec.narrow(t, step, cla8020)

	step = "after the API server's restart, 50/50"
	t5050 := []target{{"authz-a", 50}, {"authz-b", 50}}
	want5050 := map[string]float64{"authz-a": 0.5, "authz-b": 0.5}
	cla5050 := s.wantAssignment(services, t5050...)
	rec.allow(cla8020, cla5050)
	gen = ns.applyExtensionService(t, kubeExtension, extensionServiceSpec(t5050...))
	s.host.awaitStatusWrite(t, ns.Name(), kubeExtension, "Valid", gen)
	ns.awaitCondition(t, step, kubeExtension, validCondition(gen))
	s.awaitServed(t, step, cla5050)
	rec.narrow(t, step, cla5050)
	awaitSplit(t, step, s.caller, want5050, kubeTimeout)
	rec.checkClean(t, step)

	// 2. The host crashes and a new one takes over, within the grace.
	step = "host restarted"
	rv = ns.resourceVersion(t, kubeExtension)
	probe = startProbing(t, s.caller, want5050)
	s.host.process.Kill()
	s.host = startHost(t, hostCfg)
	s.awaitServed(t, step, cla5050)
	s.checkStatusUntouched(t, step, rv, 0, gen)
	probe.finish(t, step)
	rec.checkClean(t, step)
	if got := s.servedCluster(t); !proto.Equal(got, cluster) {
		t.Fatalf("%s: the new host's sink holds another Cluster: %v", step, got)
	}

	step = "after the host's restart, 80/20"
	rec.allow(cla5050, cla8020)
	gen = ns.applyExtensionService(t, kubeExtension, extensionServiceSpec(t8020...))
	s.host.awaitStatusWrite(t, ns.Name(), kubeExtension, "Valid", gen)
	ns.awaitCondition(t, step, kubeExtension, validCondition(gen))
	s.awaitServed(t, step, cla8020)
	rec.narrow(t, step, cla8020)
	awaitSplit(t, step, s.caller, want8020, kubeTimeout)
	rec.checkClean(t, step)

	// 3. The server crashes and comes back on the same ports, empty: the
	// session reconnects and sends its objects again. This time it runs
	// with a short withdraw grace and its metrics listener, for step 4.
	step = "server restarted"
	rv = ns.resourceVersion(t, kubeExtension)
	from = len(s.host.Lines())
	probe = startProbing(t, s.caller, want8020)
	srv.process.Kill()
	srv = startTributaryArgs(t, srv.grpcAddress, srv.xdsAddress, "--xds-withdraw-grace", restartGrace.String(), "--metrics-address", "127.0.0.1:0")
	s.srv = srv
	// The raw watchers' streams ended with the old server.
	s.watchers = watchBothOf(t, srv.xdsAddress, ns.Name(), s.cluster)
	s.awaitServed(t, step, cla8020)
	rec.awaitHolding(t, step, cla8020)
	s.checkStatusUntouched(t, step, rv, from, gen)
	probe.finish(t, step)
	rec.checkClean(t, step)
	s.checkNoClusterChange(t, step, from)

	step = "after the server's restart, 50/50"
	rec.allow(cla8020, cla5050)
	gen = ns.applyExtensionService(t, kubeExtension, extensionServiceSpec(t5050...))
	s.host.awaitStatusWrite(t, ns.Name(), kubeExtension, "Valid", gen)
	ns.awaitCondition(t, step, kubeExtension, validCondition(gen))
	s.awaitServed(t, step, cla5050)
	rec.narrow(t, step, cla5050)
	awaitSplit(t, step, s.caller, want5050, kubeTimeout)
	rec.checkClean(t, step)

	// 4. The host stops for good.
	step = "host stopped"
	// Before: the session owns the group, which holds exactly the
	// ExtensionService's three resources (the markers are invalid and
	// publish nothing).
	group, listed := xdsGroup(t, srv, ns.Name())
	var held []string
	for _, ts := range group.Types {
		for name := range ts.Versions {
			held = append(held, ts.TypeURL+" "+name)
		}
	}
	slices.Sort(held)
	wantHeld := []string{resourcev3.ClusterType + " " + s.cluster, resourcev3.EndpointType + " " + s.cluster, resourcev3.ListenerType + " " + s.cluster}
	if !listed || !group.Published || !slices.Equal(held, wantHeld) {
		t.Fatalf("%s: before the host stops, /debug/xds says of group %s (listed %v): published %v, resources %v; want published, %v", step, ns.Name(), listed, group.Published, held, wantHeld)
	}
	rec.allowWithdrawal()
	stopping := time.Now()
	s.host.process.Stop(5 * time.Second)
	rec.await(t, step+": withdrawal", func(mode xdstest.Mode, held map[string]proto.Message) bool {
		n := len(held)
		if mode == xdstest.SotW && held[resourcev3.EndpointType] != nil {
			n-- // State of the World cannot withdraw a ClusterLoadAssignment
		}
		return n == 0
	})
	s.awaitWatchersWithdrawn(t, step)
	// The server withdraws when the grace it starts on noticing the
	// session's end runs out: never earlier than restartGrace after
	// the host was told to stop (a slow machine only makes it later).
	withdrawals := rec.withdrawalsSince(stopping)
	if len(withdrawals) != 5 {
		t.Fatalf("%s: the recorder saw %d withdrawals, want 5 (Delta: Listener, Cluster, ClusterLoadAssignment; State of the World: Listener, Cluster):\n%s", step, len(withdrawals), rec.describe())
	}
	for _, e := range withdrawals {
		if e.at.Before(stopping.Add(restartGrace)) {
			t.Fatalf("%s: %s withdrawn by %s %v after the host was told to stop, before the grace (%v) ended", step, e.typeURL, e.mode, e.at.Sub(stopping), restartGrace)
		}
	}
	srv.process.WaitLog(t, regexp.MustCompile(`"msg":"withdrew xDS resources","group":"`+regexp.QuoteMeta(ns.Name())+`","resources":3\b`), kubeTimeout)
	// After: the group is listed only for the xDS streams still open in
	// it, unpublished and without a resource.
	group, listed = xdsGroup(t, srv, ns.Name())
	if listed && (group.Published || len(group.Types) > 0) {
		t.Fatalf("%s: after the grace, /debug/xds says of group %s: %+v; want it unpublished and empty", step, ns.Name(), group)
	}
	rec.checkClean(t, step)
}

// followLine matches the host's log line saying its sinks now follow a
// replica (the replicated adapter's election), with the replica's address
// and the one it followed before ("" for none).
var followLine = regexp.MustCompile(`"msg":"tributary: caches now follow replica","address":"([^"]+)","previous":"([^"]*)"`)

// TestKubeReplicaKilled runs two Tributary replicas behind the replicated
// adapter and kills the one the host follows (its primary) mid-run:
//
//   - before: both replicas serve the same Listener, Cluster and
//     ClusterLoadAssignment, the caller (connected to the other replica)
//     shows the split;
//   - the primary is killed: the other replica serves on, unchanged
//     (checked continuously, and by the caller's calls throughout), the
//     host fails over to it, its sinks get nothing (the replicas agree)
//     and no status is rewritten;
//   - a change after the kill is served by the survivor, its status
//     written, and the caller follows;
//   - the killed replica comes back on the same ports: the adapter's
//     session gives it every object at once, so it serves what the
//     survivor serves, and the host stays with the survivor.
func TestKubeReplicaKilled(t *testing.T) {
	ns := newKubeNamespace(t)
	replicas := []*tributaryProcess{startTributaryArgs(t, "127.0.0.1:0", "127.0.0.1:0"), startTributaryArgs(t, "127.0.0.1:0", "127.0.0.1:0")}
	s := &kubeSplit{ns: ns, backends: map[string][]netip.AddrPort{}, cluster: ns.clusterName(kubeExtension)}
	services := []string{"authz-a", "authz-b"}
	for _, svc := range services {
		for i := range backendsPerService {
			s.backends[svc] = append(s.backends[svc], startBackend(t, fmt.Sprintf("%s/%d", svc, i)))
		}
	}
	s.host = startHost(t, hostConfig{NodeGroup: ns.Name(), Tributary: []string{replicas[0].grpcAddress, replicas[1].grpcAddress}, Args: []string{"--backoff-max", "1s"}})
	// The first replica to answer the first flush is the primary.
	first := s.host.process.WaitLog(t, followLine, kubeTimeout)
	primary, survivor := replicas[0], replicas[1]
	if first[1] == survivor.grpcAddress {
		primary, survivor = survivor, primary
	}
	if first[1] != primary.grpcAddress || first[2] != "" {
		t.Fatalf("the host follows %q (previously %q), not one of the replicas %s and %s", first[1], first[2], primary.grpcAddress, survivor.grpcAddress)
	}
	s.srv = survivor
	primaryWatchers := watchBothOf(t, primary.xdsAddress, ns.Name(), s.cluster)
	survivorWatchers := watchBothOf(t, survivor.xdsAddress, ns.Name(), s.cluster)
	s.watchers = append(slices.Clone(primaryWatchers), survivorWatchers...)
	s.caller = startCallerOf(t, survivor.xdsAddress, "kube-caller", ns.Name(), s.cluster, "--map-documentation-addresses")
	for _, svc := range services {
		s.createService(t, svc)
	}

	step := "80/20 on both replicas"
	t8020 := []target{{"authz-a", 80}, {"authz-b", 20}}
	want8020 := map[string]float64{"authz-a": 0.8, "authz-b": 0.2}
	cla8020 := s.wantAssignment(services, t8020...)
	gen := ns.applyExtensionService(t, kubeExtension, extensionServiceSpec(t8020...))
	ns.awaitCondition(t, step, kubeExtension, validCondition(gen))
	s.awaitServed(t, step, cla8020)
	awaitSplit(t, step, s.caller, want8020, kubeTimeout)
	cluster := s.servedCluster(t)
	recPrimary := recordServed(t, "primary", primary.xdsAddress, ns.Name(), cluster, cla8020)
	recSurvivor := recordServed(t, "survivor", survivor.xdsAddress, ns.Name(), cluster, cla8020)
	recPrimary.awaitHolding(t, step, cla8020)
	recSurvivor.awaitHolding(t, step, cla8020)

	step = "primary killed"
	recPrimary.checkClean(t, step)
	recPrimary.stop()
	rv := ns.resourceVersion(t, kubeExtension)
	from := len(s.host.Lines())
	probe := startProbing(t, s.caller, want8020)
	primary.process.Kill()
	failover := regexp.MustCompile(`"msg":"tributary: caches now follow replica","address":"` + regexp.QuoteMeta(survivor.grpcAddress) + `","previous":"` + regexp.QuoteMeta(primary.grpcAddress) + `"`)
	s.host.process.WaitLog(t, failover, kubeTimeout)
	s.checkStatusUntouched(t, step, rv, from, gen)
	probe.finish(t, step)
	recSurvivor.checkClean(t, step)
	s.checkNoClusterChange(t, step, from)

	step = "after the kill, 50/50"
	s.watchers = survivorWatchers
	t5050 := []target{{"authz-a", 50}, {"authz-b", 50}}
	cla5050 := s.wantAssignment(services, t5050...)
	recSurvivor.allow(cla8020, cla5050)
	gen = ns.applyExtensionService(t, kubeExtension, extensionServiceSpec(t5050...))
	s.host.awaitStatusWrite(t, ns.Name(), kubeExtension, "Valid", gen)
	ns.awaitCondition(t, step, kubeExtension, validCondition(gen))
	s.awaitServed(t, step, cla5050)
	recSurvivor.narrow(t, step, cla5050)
	awaitSplit(t, step, s.caller, map[string]float64{"authz-a": 0.5, "authz-b": 0.5}, kubeTimeout)

	step = "killed replica back"
	rv = ns.resourceVersion(t, kubeExtension)
	from = len(s.host.Lines())
	primary = startTributaryArgs(t, primary.grpcAddress, primary.xdsAddress)
	s.awaitServedBy(t, step, watchBothOf(t, primary.xdsAddress, ns.Name(), s.cluster), cla5050)
	s.checkStatusUntouched(t, step, rv, from, gen)
	s.checkNoClusterChange(t, step, from)
	if n := len(followLine.FindAllString(s.host.process.Log(), -1)); n != 2 {
		t.Fatalf("%s: the host changed replicas %d times, want 2 (the first election and the failover):\n%s", step, n, s.host.process.Log())
	}
	recSurvivor.checkClean(t, step)
}
