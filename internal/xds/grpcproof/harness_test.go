package grpcproof

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/orca"
	"google.golang.org/grpc/status"

	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/workload"
	"github.com/tributary-dev/tributary/internal/xds"
)

// The harness of the load balancing proofs: gRPC backends in this process
// that count the calls they serve, can start failing and report ORCA load
// with every response; an ExtensionService over them, translated and
// served by a Publisher; and a caller, this test binary run again as
// TestLoadCaller, whose gRPC xDS client calls the extension without pause
// until the test ends. The parent measures the split where it is decided:
// at the backends.

// loadCallerTargetEnv names the target TestLoadCaller calls; it does
// nothing without it.
const loadCallerTargetEnv = "GRPCPROOF_LOAD_TARGET"

// loadCallerConcurrency is how many calls the caller keeps in flight: a
// few, so the backends see enough calls per second under -race and
// GOMAXPROCS=1, and few enough that a call picked before a change and
// served after it is a rounding error.
const loadCallerConcurrency = 4

// TestLoadCaller calls the extension loadCallerTargetEnv names from
// loadCallerConcurrency goroutines until its stdin closes. Failed calls
// are expected (a backend may be failing on purpose); the parent judges
// by what the backends served.
func TestLoadCaller(t *testing.T) {
	target := os.Getenv(loadCallerTargetEnv)
	if target == "" {
		t.Skip("run by the load balancing proofs")
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	client := healthpb.NewHealthClient(conn)
	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	for range loadCallerConcurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				callCtx, done := context.WithTimeout(ctx, 5*time.Second)
				if _, err := client.Check(callCtx, &healthpb.HealthCheckRequest{}); err != nil {
					failed.Add(1)
				} else {
					ok.Add(1)
				}
				done()
			}
		})
	}
	wg.Wait()
	t.Logf("calls: %d succeeded, %d failed", ok.Load(), failed.Load())
}

// lbBackend is one endpoint: a gRPC health server that counts the calls it
// serves and, when utilization is set, reports it with every response as
// ORCA per-call load, with a constant rate of queries so that the client's
// weight (queries per second over utilization) follows the utilization
// alone.
type lbBackend struct {
	healthpb.UnimplementedHealthServer
	name        string
	port        int32
	utilization float64
	failing     atomic.Bool
	calls       atomic.Int64
}

// reportedQPS is the query rate every backend reports.
const reportedQPS = 100

func (b *lbBackend) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	b.calls.Add(1)
	if b.utilization > 0 {
		rec := orca.CallMetricsRecorderFromContext(ctx)
		rec.SetQPS(reportedQPS)
		rec.SetCPUUtilization(b.utilization)
	}
	if b.failing.Load() {
		return nil, status.Error(codes.Unavailable, b.name+" is failing on purpose")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// startBackend serves a backend on a loopback port until the test ends.
func startBackend(t *testing.T, name string, utilization float64) *lbBackend {
	t.Helper()
	b := &lbBackend{name: name, utilization: utilization}
	s := grpc.NewServer(orca.CallMetricsServerOption(nil))
	healthpb.RegisterHealthServer(s, b)
	b.port = int32(serve(t, s).(*net.TCPAddr).Port)
	return b
}

// lbTarget is one Service of the ExtensionService: its weight and the
// backends behind it.
type lbTarget struct {
	service  string
	weight   uint32
	backends []*lbBackend
}

// lbServicePort is every Service's port; the backends' own ports reach
// the model through the named targetPort, one EndpointSlice per backend,
// as pods whose containers listen on different ports would.
const lbServicePort = 8000

// lbObjects is h2c ExtensionService ns/authz over targets, with spec
// shaped by the test.
func lbObjects(targets []lbTarget, meta source.Meta, spec source.ExtensionServiceSpec) *source.Objects {
	h2c := "h2c"
	spec.Protocol = &h2c
	meta.Namespace, meta.Name, meta.Generation = "ns", "authz", 1
	objs := &source.Objects{}
	tcp, portName := "TCP", "grpc"
	for _, target := range targets {
		spec.Services = append(spec.Services, source.ExtensionServiceTarget{Name: target.service, Port: lbServicePort, Weight: target.weight})
		objs.Services = append(objs.Services, source.Service{
			Meta: source.Meta{Namespace: "ns", Name: target.service}, Type: "ClusterIP",
			Ports: []source.ServicePort{{Name: portName, Port: lbServicePort, TargetPort: portName, Protocol: tcp}},
		})
		for _, b := range target.backends {
			objs.EndpointSlices = append(objs.EndpointSlices, source.EndpointSlice{
				Meta:        source.Meta{Namespace: "ns", Name: b.name},
				Service:     target.service,
				AddressType: "IPv4",
				Ports:       []source.EndpointPort{{Name: &portName, Port: &b.port, Protocol: &tcp}},
				Endpoints:   source.MakeEndpoints(workload.ReadyEndpoint("127.0.0.1")),
			})
		}
	}
	objs.ExtensionServices = []source.ExtensionService{{Meta: meta, Spec: spec}}
	return objs
}

// startLoad translates objs, which must be valid without warnings, serves
// the result from a Publisher, and starts the caller against it. It
// returns the translation; the caller stops when the test ends, and any
// NACK or refused resource fails the test.
func startLoad(t *testing.T, objs *source.Objects) *translate.Result {
	t.Helper()
	rec := &nackRecorder{}
	p := xds.NewPublisher(xds.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: rec})
	t.Cleanup(p.Shutdown)
	xdsServer := grpc.NewServer()
	p.Register(xdsServer)
	xdsAddr := serve(t, xdsServer)

	res := translate.Translate(objs, source.Settings{})
	if len(res.Clusters) != 1 || len(res.ClusterLoadAssignments) != 1 {
		t.Fatalf("translation yields %d Clusters and %d ClusterLoadAssignments: %+v", len(res.Clusters), len(res.ClusterLoadAssignments), res.Statuses)
	}
	for _, st := range res.Statuses {
		if len(st.Condition.Errors) > 0 || len(st.Condition.Warnings) > 0 {
			t.Fatalf("status of %s: errors %v, warnings %v", st.Name, st.Condition.Errors, st.Condition.Warnings)
		}
	}
	pub, err := p.Open("proxyless", xds.PublicationOptions{Listeners: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	pub.Apply(translate.Changes{Clusters: res.Clusters, ClusterLoadAssignments: res.ClusterLoadAssignments})

	// gRPC reads its bootstrap once per process, so the caller is a
	// process of its own; see TestGRPCClientAcceptsPublishedResources.
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadCaller$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(),
		"GRPC_XDS_BOOTSTRAP=",
		"GRPC_XDS_BOOTSTRAP_CONFIG="+fmt.Sprintf(`{
			"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
			"node": {"id": "load-caller", "cluster": "proxyless"}
		}`, xdsAddr.String()),
		loadCallerTargetEnv+"=xds:///"+res.Clusters[0].Name,
	)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		timer := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() })
		defer timer.Stop()
		if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "--- PASS: TestLoadCaller") {
			t.Errorf("the caller failed (%v):\n%s", err, out.String())
		} else if t.Failed() {
			t.Logf("the caller's output:\n%s", out.String())
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.events) > 0 {
			t.Errorf("xDS events: %v", rec.events)
		}
	})
	return res
}

// measure counts the calls each backend serves from now until together
// they have served n, and returns the counts by backend name. It fails the
// test if that takes longer than within.
func measure(t *testing.T, backends []*lbBackend, n int64, within time.Duration) map[string]int64 {
	t.Helper()
	for _, b := range backends {
		b.calls.Store(0)
	}
	deadline := time.Now().Add(within)
	for {
		var total int64
		for _, b := range backends {
			total += b.calls.Load()
		}
		if total >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the backends served %d calls in %s, want %d", total, within, n)
		}
		time.Sleep(5 * time.Millisecond) // polling the counters, not waiting for a state
	}
	counts := map[string]int64{}
	for _, b := range backends {
		counts[b.name] = b.calls.Load()
	}
	return counts
}

// waitFor measures windows of probe calls until ok holds for one, and
// fails the test with the last window if none does within the deadline.
func waitFor(t *testing.T, what string, backends []*lbBackend, probe int64, within time.Duration, ok func(map[string]int64) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		counts := measure(t, backends, probe, within)
		if ok(counts) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last window: %s", what, within, formatCounts(counts))
		}
	}
}

// share is the fraction of the calls counted in of that names served.
func share(counts map[string]int64, of []string, names ...string) float64 {
	var part, total int64
	for _, name := range of {
		total += counts[name]
	}
	for _, name := range names {
		part += counts[name]
	}
	if total == 0 {
		return 0
	}
	return float64(part) / float64(total)
}

// formatCounts writes counts in name order, for failure messages and logs.
func formatCounts(counts map[string]int64) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&b, "%s=%s ", name, strconv.FormatInt(counts[name], 10))
	}
	return strings.TrimSpace(b.String())
}

// backendsOf lists the backends of targets, in order.
func backendsOf(targets []lbTarget) []*lbBackend {
	var all []*lbBackend
	for _, target := range targets {
		all = append(all, target.backends...)
	}
	return all
}

// namesOf lists the names of backends.
func namesOf(backends []*lbBackend) []string {
	names := make([]string, len(backends))
	for i, b := range backends {
		names[i] = b.name
	}
	return names
}

// checkShare fails the test unless the share of want's backends among of
// is want.share within tolerance.
func checkShare(t *testing.T, counts map[string]int64, of []string, names []string, want, tolerance float64) {
	t.Helper()
	if got := share(counts, of, names...); got < want-tolerance || got > want+tolerance {
		t.Errorf("share of %v among %v = %.3f, want %.2f ± %.2f (%s)", names, of, got, want, tolerance, formatCounts(counts))
	}
}
