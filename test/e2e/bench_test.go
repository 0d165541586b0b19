package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/internal/workload"
	"github.com/tributary-dev/tributary/internal/xdstest"
)

// The size of BenchmarkSyncToXDSAck's ExtensionServices: two Services of
// benchEndpoints endpoints each. Fewer endpoints than the in-process Sync
// benchmark's 100 per Service: every xDS client here receives the whole
// set, and at 100 a State-of-the-World client's first response alone would
// be about 100 MB at N=10000.
const (
	benchEndpoints = 10
	benchNodeGroup = "bench"
)

// BenchmarkSyncToXDSAck measures what one pod coming or going costs end to
// end, and how that grows with the ExtensionServices published (N) and the
// xDS clients following them (K). A tributary serve process publishes N
// ExtensionServices of the standard workload to an xDS node group; K ADS
// clients of that group, half State of the World and half Delta, each
// subscribed to all N ClusterLoadAssignments, are connected. Each iteration
// upserts one EndpointSlice with one endpoint changed through the Go Sync
// client and waits until every client has received the new
// ClusterLoadAssignment and sent its ACK.
//
// Besides ns/op it reports, over the iterations: the median and 99th
// percentile of the time from the Upsert to the last client's ACK
// (all-acks), to the last State-of-the-World and the last Delta client's
// ACK, and to the Sync answer; the resources each client received per
// change; the server's CPU time per change (every thread, from /proc: the
// cost that decides how many changes a second the server can carry); and
// its resident memory and Go heap once the clients hold everything.
//
// Each iteration waits for the slowest of K clients, so at N=10000, K=100
// one takes seconds: give it iterations explicitly (-benchtime 20x), or a
// single one makes both percentiles that one sample.
func BenchmarkSyncToXDSAck(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			for _, k := range []int{2, 20, 100} {
				b.Run(fmt.Sprintf("K=%d", k), func(b *testing.B) { benchSyncToXDSAck(b, n, k) })
			}
		})
	}
}

func benchSyncToXDSAck(b *testing.B, n, k int) {
	srv := startTributaryWithMetrics(b)
	session, nacks := openSync(b, dialSync(b, srv.grpcAddress), publication{nodeGroup: benchNodeGroup})
	loaded := loadWorkload(b, session, n, benchEndpoints)

	// One connection per client, as every Envoy or gRPC client has its
	// own. Clients sharing a connection would share its flow-control
	// window and its reading goroutine, so one slow decoder would delay
	// the others' ACKs and the measure would be of the connection rather
	// than of the server; and the server is to limit streams per
	// connection (100 by default), which K must not run into.
	subscription := map[string][]string{resourcev3.EndpointType: loaded.clusterNames}
	watchers := make([]*xdstest.Watcher, k)
	for i := range watchers {
		mode := xdstest.SotW
		if i%2 == 1 {
			mode = xdstest.Delta
		}
		node := &corev3.Node{Id: fmt.Sprintf("bench-%s-%d", mode, i), Cluster: benchNodeGroup}
		// KeepEncoded: 100 clients holding 10,000 decoded
		// ClusterLoadAssignments each would take about 8 GiB here.
		watchers[i] = xdstest.Watch(b.Context(), b, dialXDS(b, srv.xdsAddress, nil), mode, node, subscription, xdstest.KeepEncoded())
	}
	// Every client's first response holds all N resources, and the old
	// cache builds each one on its own: at N=10000, K=100 that takes
	// minutes on two cores.
	deadline := time.Now().Add(5*time.Minute + time.Duration(k)*10*time.Second)
	for _, w := range watchers {
		w.WaitFor(b, "every ClusterLoadAssignment", time.Until(deadline), func(s xdstest.State) bool {
			return len(s.Resources[resourcev3.EndpointType]) == n
		})
	}
	// Read now, reported after the loop (b.Loop drops earlier metrics).
	rss, heap := srv.memory(b)

	// Change every tenth slice in turn, so that no one object stays hot.
	type churned struct {
		slice   *tributaryv1.KubernetesObject
		cluster string
	}
	var churn []churned
	for i := 0; i < len(loaded.endpointSlices); i += 10 {
		churn = append(churn, churned{loaded.endpointSlices[i], loaded.clusterNames[i/2]})
	}
	loaded = workloadObjects{}
	runtime.GC()

	receivedBefore := make([]int, len(watchers))
	for j, w := range watchers {
		receivedBefore[j] = w.Received()
	}
	var allAcks, sotwAcks, deltaAcks, answerTimes []time.Duration
	pod := uint32(2 * n * benchEndpoints) // past the workload's pods
	cpuBefore := srv.cpuTime(b)
	i := 0
	for b.Loop() {
		c := &churn[i%len(churn)]
		i++
		next := proto.CloneOf(c.slice) // the session keeps what it is given
		address := workload.PodAddress(pod).String()
		pod++
		next.GetEndpointSlice().Endpoints[0].Addresses[0] = address
		c.slice = next

		start := time.Now()
		session.Upsert(next)
		flushed := make(chan error, 1)
		go func() {
			err := session.Flush(context.Background())
			answerTimes = append(answerTimes, time.Since(start))
			flushed <- err
		}()
		// Each client's state records when it was reached (just after its
		// ACK was sent), so waiting for them one after the other measures
		// each one's own time.
		var slowest, slowestSotW, slowestDelta time.Duration
		for _, w := range watchers {
			s, err := w.Await(5*time.Minute, func(s xdstest.State) bool {
				return holdsAddress(s.Get(resourcev3.EndpointType, c.cluster), address)
			}, false)
			if err != nil {
				b.Fatalf("%s client, waiting for %s in %s: %v", w.Mode(), address, c.cluster, err)
			}
			took := s.At.Sub(start)
			slowest = max(slowest, took)
			if w.Mode() == xdstest.SotW {
				slowestSotW = max(slowestSotW, took)
			} else {
				slowestDelta = max(slowestDelta, took)
			}
		}
		allAcks = append(allAcks, slowest)
		sotwAcks = append(sotwAcks, slowestSotW)
		deltaAcks = append(deltaAcks, slowestDelta)
		if err := <-flushed; err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(srv.cpuTime(b)-cpuBefore)/float64(i), "server-cpu-ns/op")
	b.ReportMetric(float64(rss)/(1<<20), "server-rss-MiB")
	b.ReportMetric(float64(heap)/(1<<20), "server-heap-MiB")
	reportPercentiles(b, "all-acks", allAcks)
	reportPercentiles(b, "sotw-ack", sotwAcks)
	reportPercentiles(b, "delta-ack", deltaAcks)
	reportPercentiles(b, "sync-answer", answerTimes)
	for _, mode := range []xdstest.Mode{xdstest.SotW, xdstest.Delta} {
		received, clients := 0, 0
		for j, w := range watchers {
			if w.Mode() == mode {
				received += w.Received() - receivedBefore[j]
				clients++
			}
		}
		b.ReportMetric(float64(received)/float64(clients*i), string(mode)+"-resources/op")
	}
	if n := nacks.all(); len(n) > 0 {
		b.Fatalf("xDS clients NACKed: %v", n)
	}
}

// workloadObjects is what a benchmark keeps of a workload loaded into a
// Sync session, as sent: ExtensionService i's ClusterLoadAssignment is
// clusterNames[i], and its two EndpointSlices are endpointSlices[2i] and
// [2i+1].
type workloadObjects struct {
	clusterNames   []string
	endpointSlices []*tributaryv1.KubernetesObject
}

// loadWorkload upserts the standard workload of n ExtensionServices with m
// endpoints per Service into session, and checks that the session holds
// all n ClusterLoadAssignments.
func loadWorkload(tb testing.TB, session *client.SyncSession, n, m int) workloadObjects {
	tb.Helper()
	objs := workload.Standard(n, m)
	extensionServices, services, endpointSlices := workload.APIObjects(objs)
	out := workloadObjects{clusterNames: make([]string, n), endpointSlices: endpointSlices}
	for i, es := range objs.ExtensionServices {
		out.clusterNames[i] = "extension/" + es.Namespace + "/" + es.Name
	}
	// Load in batches of whole ExtensionServices (ExtensionService i owns
	// Services and EndpointSlices 2i and 2i+1), each well under the
	// message size limit: 100,000 endpoints at m=100.
	perBatch := max(1, 50000/m)
	for lo := 0; lo < n; lo += perBatch {
		hi := min(lo+perBatch, n)
		session.Upsert(extensionServices[lo:hi]...)
		session.Upsert(services[2*lo : 2*hi]...)
		session.Upsert(endpointSlices[2*lo : 2*hi]...)
		flush(tb, session)
	}
	if got := len(session.View().ClusterLoadAssignments); got != n {
		tb.Fatalf("the session holds %d ClusterLoadAssignments, want %d", got, n)
	}
	return out
}

// dialXDS connects to a Tributary xDS address. A first response may hold
// every resource of a large group; stats, when not nil, sees every message.
func dialXDS(tb testing.TB, address string, stats stats.Handler) *grpc.ClientConn {
	tb.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1 << 30))}
	if stats != nil {
		opts = append(opts, grpc.WithStatsHandler(stats))
	}
	conn, err := grpc.NewClient(address, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return conn
}

// reportPercentiles reports the median and 99th percentile of durations as
// <name>-p50-ns and <name>-p99-ns.
func reportPercentiles(b *testing.B, name string, durations []time.Duration) {
	if len(durations) == 0 {
		return
	}
	slices.Sort(durations)
	b.ReportMetric(percentile(durations, 0.50), name+"-p50-ns")
	b.ReportMetric(percentile(durations, 0.99), name+"-p99-ns")
}

func percentile(sorted []time.Duration, p float64) float64 {
	return float64(sorted[int(p*float64(len(sorted)-1))].Nanoseconds())
}

// holdsAddress reports whether m is a ClusterLoadAssignment, decoded or
// as the Any a KeepEncoded watcher holds, with an endpoint at address.
func holdsAddress(m proto.Message, address string) bool {
	if a, ok := m.(*anypb.Any); ok {
		var err error
		if m, err = a.UnmarshalNew(); err != nil {
			return false
		}
	}
	cla, _ := m.(*endpointv3.ClusterLoadAssignment)
	for _, l := range cla.GetEndpoints() {
		for _, e := range l.GetLbEndpoints() {
			if e.GetEndpoint().GetAddress().GetSocketAddress().GetAddress() == address {
				return true
			}
		}
	}
	return false
}

// startTributaryWithMetrics runs tributary serve with xDS and metrics on
// loopback ports, with the extra environment variables env ("NAME=value").
func startTributaryWithMetrics(tb testing.TB, env ...string) *tributaryProcess {
	tb.Helper()
	p := testproc.StartEnv(tb, program(tb, "tributary"), env, "serve", "--address", "127.0.0.1:0", "--xds-address", "127.0.0.1:0",
		"--metrics-address", "127.0.0.1:0", "--shutdown-timeout", "1s")
	return &tributaryProcess{process: p, grpcAddress: p.Address, xdsAddress: p.XDSAddress, metricsAddress: p.MetricsAddress}
}

// memory returns the server's resident set (VmRSS) and Go heap in use
// (go_memstats_heap_inuse_bytes from its metrics), in bytes.
func (p *tributaryProcess) memory(tb testing.TB) (rss, heap uint64) {
	tb.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.process.Cmd.Process.Pid))
	if err != nil {
		tb.Fatal(err)
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				tb.Fatalf("VmRSS %q: %v", v, err)
			}
			rss = kb << 10
		}
	}
	resp, err := http.Get("http://" + p.metricsAddress + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("go_memstats_heap_inuse_bytes %q: %v", v, err)
			}
			heap = uint64(f)
		}
	}
	if rss == 0 || heap == 0 {
		tb.Fatalf("server memory not found: rss %d, heap %d", rss, heap)
	}
	return rss, heap
}

// clockTick is the unit of the CPU times in /proc/<pid>/stat: USER_HZ,
// which Linux fixes at 100 a second on every architecture Go supports
// (reading sysconf(_SC_CLK_TCK) would need cgo).
const clockTick = 10 * time.Millisecond

// cpuTime returns the CPU time the server has used so far, user and
// system, every thread included. The ticks make it coarse: divide a long
// loop's difference by its iterations.
func (p *tributaryProcess) cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.process.Cmd.Process.Pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: count the
	// fields after it. utime and stime are fields 14 and 15 of the line,
	// 12 and 13 after the name.
	i := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(fields) < 13 {
		tb.Fatalf("/proc/%d/stat: %q", p.process.Cmd.Process.Pid, stat)
	}
	var ticks uint64
	for _, f := range fields[11:13] {
		t, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			tb.Fatalf("/proc/%d/stat: %q: %v", p.process.Cmd.Process.Pid, stat, err)
		}
		ticks += t
	}
	return time.Duration(ticks) * clockTick
}
