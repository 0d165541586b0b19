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
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/internal/workload"
	"github.com/tributary-dev/tributary/internal/xdstest"
)

// The benchmark's size: benchExtensionServices ExtensionServices of the
// standard workload, each with two Services of benchEndpoints endpoints
// (200,000 endpoints in all). Fewer endpoints than the in-process Sync
// benchmark's 100 per Service: every xDS client here receives the whole
// set, and at 100 a State-of-the-World client's first response alone would
// be about 100 MB.
const (
	benchExtensionServices = 10000
	benchEndpoints         = 10
	benchNodeGroup         = "bench"
)

// BenchmarkSyncToXDSAck measures what one pod coming or going costs end to
// end: a tributary serve process publishes the standard workload of 10,000
// ExtensionServices to an xDS node group, and two ADS clients of that group
// (State of the World and Delta, each subscribed to all 10,000
// ClusterLoadAssignments) are connected. Each iteration upserts one
// EndpointSlice with one endpoint changed through the Go Sync client and
// waits until both xDS clients have received the new ClusterLoadAssignment
// and sent their ACK. Besides ns/op (the slower of the two, plus the Sync
// answer) it reports, per client, the median and 99th percentile of the
// time from the Upsert to the ACK and the resources it received per
// change, the same percentiles for the Sync answer itself, and the server's
// resident memory and Go heap once loaded (from /proc and its own metrics).
func BenchmarkSyncToXDSAck(b *testing.B) {
	srv := startTributaryWithMetrics(b)
	objs := workload.Standard(benchExtensionServices, benchEndpoints)
	extensionServices, services, endpointSlices := workload.APIObjects(objs)
	clusterNames := make([]string, len(objs.ExtensionServices))
	for i, es := range objs.ExtensionServices {
		clusterNames[i] = "extension/" + es.Namespace + "/" + es.Name
	}

	conn := dialSync(b, srv.grpcAddress)
	session, nacks := openSync(b, conn, publication{nodeGroup: benchNodeGroup})
	// Load in batches of whole ExtensionServices (ExtensionService i owns
	// Services and EndpointSlices 2i and 2i+1), each well under the
	// message size limit.
	const perBatch = 500
	for lo := 0; lo < len(extensionServices); lo += perBatch {
		hi := min(lo+perBatch, len(extensionServices))
		session.Upsert(extensionServices[lo:hi]...)
		session.Upsert(services[2*lo : 2*hi]...)
		session.Upsert(endpointSlices[2*lo : 2*hi]...)
		flush(b, session)
	}
	if got := len(session.View().ClusterLoadAssignments); got != benchExtensionServices {
		b.Fatalf("the session holds %d ClusterLoadAssignments, want %d", got, benchExtensionServices)
	}

	xdsConn, err := grpc.NewClient(srv.xdsAddress, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { xdsConn.Close() })
	modes := []xdstest.Mode{xdstest.SotW, xdstest.Delta}
	watchers := make([]*xdstest.Watcher, len(modes))
	for i, mode := range modes {
		node := &corev3.Node{Id: "bench-" + string(mode), Cluster: benchNodeGroup}
		watchers[i] = xdstest.Watch(b.Context(), b, xdsConn, mode, node, map[string][]string{resourcev3.EndpointType: clusterNames})
	}
	for _, w := range watchers {
		w.WaitFor(b, "every ClusterLoadAssignment", 5*time.Minute, func(s xdstest.State) bool {
			return len(s.Resources[resourcev3.EndpointType]) == benchExtensionServices
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
	for i := 0; i < len(endpointSlices); i += 10 {
		churn = append(churn, churned{endpointSlices[i], clusterNames[i/2]})
	}
	extensionServices, services, endpointSlices, objs = nil, nil, nil, nil
	runtime.GC()

	receivedBefore := make([]int, len(watchers))
	for j, w := range watchers {
		receivedBefore[j] = w.Received()
	}
	ackTimes := make([][]time.Duration, len(watchers))
	var answerTimes []time.Duration
	pod := uint32(2 * benchExtensionServices * benchEndpoints) // past the workload's pods
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
		for j, w := range watchers {
			s, err := w.Await(30*time.Second, func(s xdstest.State) bool {
				return holdsAddress(s.Get(resourcev3.EndpointType, c.cluster), address)
			}, false)
			if err != nil {
				b.Fatalf("%s client, waiting for %s in %s: %v", w.Mode(), address, c.cluster, err)
			}
			ackTimes[j] = append(ackTimes[j], s.At.Sub(start))
		}
		if err := <-flushed; err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(rss)/(1<<20), "server-rss-MiB")
	b.ReportMetric(float64(heap)/(1<<20), "server-heap-MiB")
	slices.Sort(answerTimes)
	b.ReportMetric(percentile(answerTimes, 0.50), "sync-answer-p50-ns")
	b.ReportMetric(percentile(answerTimes, 0.99), "sync-answer-p99-ns")
	for j, w := range watchers {
		slices.Sort(ackTimes[j])
		b.ReportMetric(percentile(ackTimes[j], 0.50), string(w.Mode())+"-ack-p50-ns")
		b.ReportMetric(percentile(ackTimes[j], 0.99), string(w.Mode())+"-ack-p99-ns")
		b.ReportMetric(float64(w.Received()-receivedBefore[j])/float64(len(ackTimes[j])), string(w.Mode())+"-resources/op")
	}
	if n := nacks.all(); len(n) > 0 {
		b.Fatalf("xDS clients NACKed: %v", n)
	}
}

func percentile(sorted []time.Duration, p float64) float64 {
	return float64(sorted[int(p*float64(len(sorted)-1))].Nanoseconds())
}

// holdsAddress reports whether m is a ClusterLoadAssignment with an
// endpoint at address.
func holdsAddress(m proto.Message, address string) bool {
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
// loopback ports.
func startTributaryWithMetrics(tb testing.TB) *tributaryProcess {
	tb.Helper()
	p := testproc.Start(tb, program(tb, "tributary"), "serve", "--address", "127.0.0.1:0", "--xds-address", "127.0.0.1:0",
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
