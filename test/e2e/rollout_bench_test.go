package e2e

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/cputime"
	"github.com/tributary-dev/tributary/internal/workload"
	"github.com/tributary-dev/tributary/internal/xdstest"
)

// The fan-out workload: few ExtensionServices with large Deployments
// behind them, followed by many clients, as in the deployments the product
// is for.
const (
	rolloutExtensionServices = 10
	rolloutEndpoints         = 100
	// rolloutRate is how many endpoint changes a second the rollout makes.
	rolloutRate = 50
	// rolloutStreamsPerConnection stays below the 100 streams per
	// connection the xDS server is to allow by default, with room to
	// spare: gRPC queues a stream over the limit instead of failing it, so
	// a benchmark at the limit would hang rather than tell.
	rolloutStreamsPerConnection = 50
	// rolloutConvergeGuard bounds the wait for every client to hold the
	// last change; it is not an expectation.
	rolloutConvergeGuard = time.Minute
)

// The fan-out's size, overridable so that the benchmark can be tried
// small: go test ./e2e/ -run '^$' -bench BenchmarkRolloutFanOut
// -rollout-clients 20 -rollout-duration 2s.
var (
	rolloutClients  = flag.Int("rollout-clients", 1000, "BenchmarkRolloutFanOut: the Delta xDS clients subscribed to every ClusterLoadAssignment")
	rolloutDuration = flag.Duration("rollout-duration", 10*time.Second, "BenchmarkRolloutFanOut: how long the rollout changes endpoints")
	rolloutDecode   = flag.Bool("rollout-decode", false, "BenchmarkRolloutFanOut: clients decode and validate what they receive, as an Envoy does (this process then limits the result, not the server)")
)

// BenchmarkRolloutFanOut measures a rollout followed by many clients: a
// tributary serve process publishes 10 ExtensionServices of the standard
// workload (two Services of 100 endpoints each) to an xDS node group, 1000
// Delta ADS clients subscribed to all 10 ClusterLoadAssignments are
// connected (50 streams per connection; they ACK what they receive without
// decoding it, see below), and a rollout replaces one endpoint after
// another through Sync, 50 times a second for 10 s, without waiting for the
// answers (as a controller does: the session batches what comes while a
// batch is in flight). One iteration is one whole rollout.
//
// Every change gives its endpoint an address no earlier change used, so a
// client's ClusterLoadAssignment tells which changes it reflects: a client
// holds a change when its ClusterLoadAssignment for that cluster holds the
// change's address or a later change's to the same cluster (a Sync batch
// is translated after every earlier one, and a client may skip versions).
// It reports:
//
//   - all-clients-p50-ns and -p99-ns: from a change to every client
//     holding it (each client's time is when it had sent its ACK);
//   - converge-ns: from the last change to every client holding the final
//     state;
//   - server-cpu-ns/change: the server's CPU time (every thread) from the
//     first change until convergence, per change;
//   - sent-bytes/s: what the clients received (the messages' sizes) from
//     the first change until convergence, per second;
//   - server-rss-bytes/client and server-heap-bytes/client: the server's
//     growth from connecting the clients, per client;
//   - client-cpu-ns/change: this process's CPU time over the same span,
//     per change, to tell whether the clients rather than the server were
//     the limit;
//   - resources/change/client: ClusterLoadAssignments each client
//     received per change, below 1 when versions were skipped;
//   - sync-answer-p50-ns and -p99-ns, and the rate the rollout kept up
//     (changes/s).
func BenchmarkRolloutFanOut(b *testing.B) {
	clients := *rolloutClients
	srv := startTributaryWithMetrics(b)
	session, nacks := openSync(b, dialSync(b, srv.grpcAddress), publication{nodeGroup: benchNodeGroup})
	loaded := loadWorkload(b, session, rolloutExtensionServices, rolloutEndpoints)
	clusterIndex := make(map[string]int, len(loaded.clusterNames))
	for i, name := range loaded.clusterNames {
		clusterIndex[name] = i
	}
	rssBefore, heapBefore := srv.memory(b)

	// The clients ACK without decoding (xdstest.Undecoded): decoding and
	// validating what 1000 clients receive at 50 changes a second would
	// take this process about ten times the machine's two cores, and the
	// benchmark would measure itself (the first runs did: p50 13 s, with
	// every client starved). -rollout-decode restores it.
	var opts []xdstest.WatchOption
	if !*rolloutDecode {
		opts = append(opts, xdstest.Undecoded())
	}
	received := &receivedBytes{}
	subscription := map[string][]string{resourcev3.EndpointType: loaded.clusterNames}
	watchers := make([]*xdstest.Watcher, clients)
	conns := (clients + rolloutStreamsPerConnection - 1) / rolloutStreamsPerConnection
	for c := range conns {
		conn := dialXDS(b, srv.xdsAddress, received)
		for i := c * rolloutStreamsPerConnection; i < min(clients, (c+1)*rolloutStreamsPerConnection); i++ {
			node := &corev3.Node{Id: fmt.Sprintf("rollout-%d", i), Cluster: benchNodeGroup}
			watchers[i] = xdstest.Watch(b.Context(), b, conn, xdstest.Delta, node, subscription, opts...)
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for _, w := range watchers {
		w.WaitFor(b, "every ClusterLoadAssignment", time.Until(deadline), func(s xdstest.State) bool {
			return len(s.Resources[resourcev3.EndpointType]) == rolloutExtensionServices
		})
	}
	rssAfter, heapAfter := srv.memory(b)

	r := &rollout{
		slices:       loaded.endpointSlices,
		slotNext:     make([]int, len(loaded.endpointSlices)),
		pod:          uint32(2 * rolloutExtensionServices * rolloutEndpoints), // past the workload's pods
		clusterIndex: clusterIndex,
	}
	var all rolloutResult
	rollouts := 0
	for b.Loop() {
		res := r.run(b, session, srv, watchers, received)
		all.add(res)
		rollouts++
	}
	b.StopTimer()

	changes := float64(len(all.latencies))
	reportPercentiles(b, "all-clients", all.latencies)
	reportPercentiles(b, "sync-answer", all.answers)
	b.ReportMetric(float64(all.converge.Nanoseconds())/float64(rollouts), "converge-ns")
	b.ReportMetric(float64(all.serverCPU.Nanoseconds())/changes, "server-cpu-ns/change")
	b.ReportMetric(float64(all.clientCPU.Nanoseconds())/changes, "client-cpu-ns/change")
	b.ReportMetric(float64(all.bytes)/all.span.Seconds(), "sent-bytes/s")
	b.ReportMetric(float64(all.resources)/changes/float64(clients), "resources/change/client")
	b.ReportMetric(changes/all.sending.Seconds(), "changes/s")
	b.ReportMetric((float64(rssAfter)-float64(rssBefore))/float64(clients), "server-rss-bytes/client")
	b.ReportMetric((float64(heapAfter)-float64(heapBefore))/float64(clients), "server-heap-bytes/client")
	if n := nacks.all(); len(n) > 0 {
		b.Fatalf("xDS clients NACKed: %v", n)
	}
}

// rollout is the state of the rollouts of one benchmark: the slices as
// last sent and, per slice, the endpoint its next change replaces, so that
// successive changes (and rollouts) replace pods in turn as a Deployment's
// rollout does.
type rollout struct {
	slices       []*tributaryv1.KubernetesObject
	slotNext     []int
	pod          uint32
	clusterIndex map[string]int
}

// change is one endpoint change of a rollout.
type change struct {
	slice   *tributaryv1.KubernetesObject
	cluster int
	// at is when it was upserted.
	at time.Time
}

// rolloutResult sums what rollouts measured.
type rolloutResult struct {
	// latencies holds, per change, the time until every client held it;
	// answers, the time until its Sync answer.
	latencies, answers []time.Duration
	// converge is from the last change to every client holding it;
	// sending from the first change to the last; span from the first
	// change to convergence.
	converge, sending, span time.Duration
	serverCPU, clientCPU    time.Duration
	bytes                   int64
	resources               int
}

func (r *rolloutResult) add(o rolloutResult) {
	r.latencies = append(r.latencies, o.latencies...)
	r.answers = append(r.answers, o.answers...)
	r.converge += o.converge
	r.sending += o.sending
	r.span += o.span
	r.serverCPU += o.serverCPU
	r.clientCPU += o.clientCPU
	r.bytes += o.bytes
	r.resources += o.resources
}

// run makes one rollout and waits until every client holds its last
// change.
func (r *rollout) run(b *testing.B, session *client.SyncSession, srv *tributaryProcess, watchers []*xdstest.Watcher, received *receivedBytes) rolloutResult {
	b.Helper()
	// Plan every change first: the clients' observers read the addresses
	// while the rollout runs.
	n := max(1, int(rolloutDuration.Seconds()*rolloutRate))
	changes := make([]change, n)
	tags := make(map[string]int, n) // address → the change that introduced it
	for k := range changes {
		s := k % len(r.slices)
		next := proto.CloneOf(r.slices[s]) // the session keeps what it is given
		endpoints := next.GetEndpointSlice().Endpoints
		address := workload.PodAddress(r.pod).String()
		r.pod++
		endpoints[r.slotNext[s]%len(endpoints)].Addresses[0] = address
		r.slotNext[s]++
		r.slices[s] = next
		changes[k] = change{slice: next, cluster: s / 2}
		tags[address] = k
	}
	// final[c] is the last change to cluster c, -1 for none.
	final := slices.Repeat([]int{-1}, len(r.clusterIndex))
	for k, c := range changes {
		final[c.cluster] = k
	}

	observers := make([]*observer, len(watchers))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, w := range watchers {
		o := &observer{watcher: w, tags: tags, clusterIndex: r.clusterIndex, final: final}
		observers[i] = o
		wg.Go(func() { o.run(stop) })
	}
	resourcesBefore := 0
	for _, w := range watchers {
		resourcesBefore += w.Received()
	}

	answers := make([]time.Duration, n)
	var flushes sync.WaitGroup
	var flushErr atomic.Pointer[error]
	serverCPU, clientCPU, bytes := srv.cpuTime(b), cputime.OfProcess(), received.n.Load()
	start := time.Now()
	for k := range changes {
		// A fixed schedule: a change that comes late (this process is
		// busy) does not delay the ones after it.
		time.Sleep(time.Until(start.Add(time.Duration(k) * time.Second / rolloutRate)))
		changes[k].at = time.Now()
		session.Upsert(changes[k].slice)
		flushes.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), rolloutConvergeGuard)
			defer cancel()
			if err := session.Flush(ctx); err != nil {
				flushErr.CompareAndSwap(nil, &err)
			}
			answers[k] = time.Since(changes[k].at)
		})
	}
	last := changes[n-1].at
	timer := time.AfterFunc(rolloutConvergeGuard, func() { close(stop) })
	wg.Wait()
	timer.Stop()
	flushes.Wait()
	if err := flushErr.Load(); err != nil {
		b.Fatalf("Flush: %v", *err)
	}

	res := rolloutResult{answers: answers, sending: last.Sub(start), latencies: make([]time.Duration, n)}
	var convergedAt time.Time
	for _, o := range observers {
		if o.err != nil {
			b.Fatalf("%s", o.err)
		}
		for k, at := range o.heldAt(changes) {
			if at.IsZero() {
				b.Fatalf("a client never held change %d", k)
			}
			res.latencies[k] = max(res.latencies[k], at.Sub(changes[k].at))
			if at.After(convergedAt) {
				convergedAt = at
			}
		}
	}
	// Read after every client converged: the server has sent everything.
	res.serverCPU = srv.cpuTime(b) - serverCPU
	res.clientCPU = cputime.OfProcess() - clientCPU
	res.bytes = received.n.Load() - bytes
	res.converge = convergedAt.Sub(last)
	res.span = convergedAt.Sub(start)
	for _, w := range watchers {
		res.resources += w.Received()
	}
	res.resources -= resourcesBefore
	return res
}

// receivedBytes counts the bytes of the messages received on the
// connections it is the stats handler of: what the server sent them,
// measured where it arrives. The sizes are of the messages themselves
// (proto.Size), without gRPC and HTTP/2 framing.
type receivedBytes struct{ n atomic.Int64 }

func (r *receivedBytes) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (r *receivedBytes) HandleRPC(_ context.Context, s stats.RPCStats) {
	if p, ok := s.(*stats.InPayload); ok {
		r.n.Add(int64(p.Length))
	}
}

func (r *receivedBytes) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (r *receivedBytes) HandleConn(context.Context, stats.ConnStats) {}
