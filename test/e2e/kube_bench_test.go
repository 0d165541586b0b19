package e2e

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tributary-dev/tributary/internal/xdstest"
)

// The benchmarks of the adapter against a real API server: every write
// goes through kube-apiserver and etcd, the host (contourhost) sees it
// through controller-runtime informers as Contour would, and the clock
// stops when a raw ADS client of `tributary serve` holds the result. They
// run no traffic: no xDS client dials an endpoint, and every endpoint
// address is in 2001:db8::/32 (documentation), each change's address one
// that no earlier write used, so that a ClusterLoadAssignment tells which
// writes it reflects.

// The rollout's size, overridable so that the benchmark can be tried
// small: go test ./test/e2e/ -run '^$' -bench BenchmarkKubeRollout
// -benchtime 1x -kube-rollout-extensions 50 -kube-rollout-duration 5s.
var (
	kubeRolloutExtensions = flag.Int("kube-rollout-extensions", 1000, "BenchmarkKubeRollout: ExtensionServices created, each over two Services with one EndpointSlice each")
	kubeRolloutRate       = flag.Int("kube-rollout-rate", 50, "BenchmarkKubeRollout: EndpointSlice writes a second during the rollout")
	kubeRolloutDuration   = flag.Duration("kube-rollout-duration", 30*time.Second, "BenchmarkKubeRollout: how long the rollout writes EndpointSlices")
	kubeRolloutDebounce   = flag.Duration("kube-rollout-debounce", 0, "BenchmarkKubeRollout: the host's --debounce (0: the adapter's default)")
)

const (
	// kubeBenchQPS is the rate limit of the benchmark's own Kubernetes
	// client, which creates the objects and writes the changes: high
	// enough that the client never paces creation (16 workers, each
	// waiting for its answer, make a few hundred requests a second here),
	// so that the time to the first complete state is the API server's
	// and the host's.
	kubeBenchQPS     = 10000
	kubeBenchWorkers = 16
	// kubeBenchQuiet is the pause before each measured change: longer
	// than the adapter's debounce, so that the change arrives after a
	// quiet period and is flushed at once, and kept at 200 ms (twice the
	// debounce's old default) when that became 10 ms, so that the figures
	// stay comparable: the longer a process has slept, the longer its
	// wake-up takes (see BenchmarkProcessRoundTrip).
	kubeBenchQuiet = 200 * time.Millisecond
	// kubeBenchGuard bounds the waits that depend on the size of the
	// workload (the first complete state, every status written at the
	// host's 5 requests a second); it is not an expectation.
	kubeBenchGuard = 15 * time.Minute
	// kubeBenchHostQPS is the host's client rate in the latency
	// benchmark, whose subject is not status writes: with it the
	// initial statuses land within seconds, and the measurement starts
	// from the steady state they leave.
	kubeBenchHostQPS = "1000"
)

// BenchmarkKubeEndpointSliceLatency measures one lone EndpointSlice change,
// end to end through a real API server: `tributary serve` with xDS,
// contourhost (default debounce, publishing to the namespace's node group),
// and a Delta ADS client subscribed to the ClusterLoadAssignment of one
// ExtensionService. N ExtensionServices, each over two Services with one
// EndpointSlice each, are created through the API before the host starts;
// the measurement starts once the host has written every initial status.
// Each iteration waits kubeBenchQuiet (timer stopped), writes one of that
// ExtensionService's slices with a new address (a plain Update of the
// object last returned, as the EndpointSlice controller writes), and waits
// until the ADS client holds a ClusterLoadAssignment with that address.
//
// It reports the median and 99th percentile of the time until the ADS
// client held the change (just after its ACK) from:
//
//   - write-to-xds: just before the Update request left this process;
//   - watch-to-xds: when an EndpointSlice watch of this process's own
//     delivered the change. The host's informer has a watch of its own on
//     the same API server, so this stands for the moment the host's watch
//     delivered it: the point the Contour figures start from.
//
// Give it iterations explicitly (-benchtime 200x): each takes the quiet
// period besides the change.
func BenchmarkKubeEndpointSliceLatency(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("ExtensionServices=%d", n), func(b *testing.B) { benchKubeEndpointSliceLatency(b, n) })
	}
}

func benchKubeEndpointSliceLatency(b *testing.B, n int) {
	kb := newKubeBench(b, n)
	srv := startTributary(b, "127.0.0.1:0", "127.0.0.1:0")
	kb.create(b)
	host := startHost(b, hostConfig{NodeGroup: kb.ns.Name(), Tributary: []string{srv.grpcAddress},
		Args: []string{"--kube-api-qps", kubeBenchHostQPS, "--kube-api-burst", kubeBenchHostQPS}})
	// Every initial status written: each write is an ExtensionService
	// update the adapter hears of and flushes, which would end the quiet
	// period of a measured change.
	awaitValidStatuses(b, host, kb, kubeBenchGuard)

	// The middle ExtensionService: neither the first nor the last of
	// anything the host or the server iterates over.
	es := n / 2
	cluster := kb.ns.clusterName(kubeBenchExtension(es))
	node := &corev3.Node{Id: "kube-bench", Cluster: kb.ns.Name()}
	w := xdstest.Watch(b.Context(), b, dialXDS(b, srv.xdsAddress, nil), xdstest.Delta, node,
		map[string][]string{resourcev3.EndpointType: {cluster}})
	initial := kb.address(2 * es)
	w.WaitFor(b, "the initial ClusterLoadAssignment", kubeTimeout, func(s xdstest.State) bool {
		return holdsAddress(s.Get(resourcev3.EndpointType, cluster), initial.String())
	})
	apiWatch := kb.watchSlices(b)

	var fromWrite, fromWatch []time.Duration
	i := 0
	for b.Loop() {
		b.StopTimer()
		time.Sleep(kubeBenchQuiet)
		b.StartTimer()
		s := 2*es + i%2
		i++
		address := kb.newAddress()
		at, err := kb.write(b.Context(), s, address)
		if err != nil {
			b.Fatal(err)
		}
		held, err := w.Await(kubeTimeout, func(st xdstest.State) bool {
			return holdsAddress(st.Get(resourcev3.EndpointType, cluster), address.String())
		}, false)
		if err != nil {
			b.Fatalf("waiting for %s in %s: %v", address, cluster, err)
		}
		delivered, err := apiWatch.await(address.String(), kubeTimeout)
		if err != nil {
			b.Fatal(err)
		}
		fromWrite = append(fromWrite, held.At.Sub(at))
		fromWatch = append(fromWatch, held.At.Sub(delivered))
	}
	b.StopTimer()
	reportPercentiles(b, "write-to-xds", fromWrite)
	reportPercentiles(b, "watch-to-xds", fromWatch)
}

// BenchmarkKubeRollout measures a rollout through a real API server:
// `tributary serve` with xDS, contourhost (default debounce, or
// -kube-rollout-debounce, and default Kubernetes client rate, 5 requests a
// second with a burst of 10, which paces its status writes) publishing to
// the namespace's node group, and a
// Delta ADS client subscribed to every ClusterLoadAssignment. N
// ExtensionServices (2N Services and EndpointSlices) are created through
// the API by 16 workers (per ExtensionService: its two Services, their
// slices, then the ExtensionService); then slices are written, one after
// another in turn, at -kube-rollout-rate a second for
// -kube-rollout-duration, each with a new address, each write on a
// schedule of its own (a slow write does not delay the next). One
// iteration is one whole run, in a namespace, server and host of its own:
// run it with -benchtime 1x.
//
// It reports:
//
//   - created-ns: from the first create to the last one's answer;
//   - first-complete-ns: from the first create until the ADS client held
//     every ClusterLoadAssignment complete (both slices' addresses);
//   - statuses-at-complete: how many ExtensionServices had their Valid
//     status written by then (the rest were still queued in the host);
//   - last-status-ns: from the first create to the last initial status
//     write the API server accepted, as the host reports it;
//   - write-to-xds-p50/p99-ns and watch-to-xds-p50/p99-ns: during the
//     rollout, from each slice write (just before the request; and from
//     this process's watch delivering it) until the ADS client held it
//     (the change's address, or a later change's to the same
//     ExtensionService);
//   - converge-ns: from the last write until the client held every one;
//   - writes/s: the rate the rollout kept;
//   - host-rss-MiB, host-hwm-MiB, server-rss-MiB, server-hwm-MiB: VmRSS
//     and VmHWM (peak) from /proc after the rollout; the host's include
//     its informer caches;
//   - host-cpu-ns/write, server-cpu-ns/write: each process's CPU time
//     (every thread) from the first write to convergence, per write.
func BenchmarkKubeRollout(b *testing.B) {
	n := *kubeRolloutExtensions
	// Start the API server and build the programs before the clock runs.
	kubeAPI(b)
	program(b, "tributary")
	program(b, "contourhost")
	var all kubeRolloutResult
	runs := 0
	for b.Loop() {
		all.add(runKubeRollout(b, n))
		runs++
	}
	b.StopTimer()
	perRun := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(runs) }
	b.ReportMetric(perRun(all.created), "created-ns")
	b.ReportMetric(perRun(all.firstComplete), "first-complete-ns")
	b.ReportMetric(float64(all.statusesAtComplete)/float64(runs), "statuses-at-complete")
	b.ReportMetric(perRun(all.lastStatus), "last-status-ns")
	b.ReportMetric(perRun(all.converge), "converge-ns")
	b.ReportMetric(float64(len(all.fromWrite))/all.writing.Seconds(), "writes/s")
	b.ReportMetric(float64(all.hostCPU.Nanoseconds())/float64(len(all.fromWrite)), "host-cpu-ns/write")
	b.ReportMetric(float64(all.serverCPU.Nanoseconds())/float64(len(all.fromWrite)), "server-cpu-ns/write")
	mib := func(bytes uint64) float64 { return float64(bytes) / float64(runs) / (1 << 20) }
	b.ReportMetric(mib(all.host.rss), "host-rss-MiB")
	b.ReportMetric(mib(all.host.hwm), "host-hwm-MiB")
	b.ReportMetric(mib(all.server.rss), "server-rss-MiB")
	b.ReportMetric(mib(all.server.hwm), "server-hwm-MiB")
	reportPercentiles(b, "write-to-xds", all.fromWrite)
	reportPercentiles(b, "watch-to-xds", all.fromWatch)
}

// kubeRolloutResult sums what rollouts measured.
type kubeRolloutResult struct {
	created, firstComplete, lastStatus, converge, writing time.Duration
	statusesAtComplete                                    int
	fromWrite, fromWatch                                  []time.Duration
	hostCPU, serverCPU                                    time.Duration
	host, server                                          procMemory
}

func (r *kubeRolloutResult) add(o kubeRolloutResult) {
	r.created += o.created
	r.firstComplete += o.firstComplete
	r.lastStatus += o.lastStatus
	r.converge += o.converge
	r.writing += o.writing
	r.statusesAtComplete += o.statusesAtComplete
	r.fromWrite = append(r.fromWrite, o.fromWrite...)
	r.fromWatch = append(r.fromWatch, o.fromWatch...)
	r.hostCPU += o.hostCPU
	r.serverCPU += o.serverCPU
	r.host.rss += o.host.rss
	r.host.hwm += o.host.hwm
	r.server.rss += o.server.rss
	r.server.hwm += o.server.hwm
}

func runKubeRollout(b *testing.B, n int) kubeRolloutResult {
	b.Helper()
	kb := newKubeBench(b, n)
	srv := startTributary(b, "127.0.0.1:0", "127.0.0.1:0")
	host := startHost(b, hostConfig{NodeGroup: kb.ns.Name(), Tributary: []string{srv.grpcAddress},
		Args: []string{"--debounce", kubeRolloutDebounce.String()}})
	names := make([]string, n)
	clusterIndex := make(map[string]int, n)
	for i := range names {
		names[i] = kb.ns.clusterName(kubeBenchExtension(i))
		clusterIndex[names[i]] = i
	}
	node := &corev3.Node{Id: "kube-rollout", Cluster: kb.ns.Name()}
	w := xdstest.Watch(b.Context(), b, dialXDS(b, srv.xdsAddress, nil), xdstest.Delta, node,
		map[string][]string{resourcev3.EndpointType: names})
	apiWatch := kb.watchSlices(b)

	var res kubeRolloutResult
	start := time.Now()
	res.created = kb.create(b).Sub(start)
	complete := w.WaitFor(b, "every ClusterLoadAssignment complete", kubeBenchGuard, func(s xdstest.State) bool {
		for i, name := range names {
			cla := s.Get(resourcev3.EndpointType, name)
			if !holdsAddress(cla, kb.address(2*i).String()) || !holdsAddress(cla, kb.address(2*i+1).String()) {
				return false
			}
		}
		return true
	})
	res.firstComplete = complete.At.Sub(start)
	res.statusesAtComplete = countValidStatuses(host.Lines(), kb, complete.At)

	// Plan the rollout: slice k mod 2N gets change k's address. The
	// observer reads the addresses while the rollout runs.
	m := max(1, int(kubeRolloutDuration.Seconds()*float64(*kubeRolloutRate)))
	changes := make([]change, m)
	addresses := make([]netip.Addr, m)
	tags := make(map[string]int, m) // address → the change that wrote it
	final := slices.Repeat([]int{-1}, n)
	for k := range changes {
		addresses[k] = kb.newAddress()
		changes[k].cluster = (k % (2 * n)) / 2
		tags[addresses[k].String()] = k
		final[changes[k].cluster] = k
	}
	o := &observer{watcher: w, tags: tags, clusterIndex: clusterIndex, final: final}
	stop := make(chan struct{})
	observed := make(chan struct{})
	go func() { defer close(observed); o.run(stop) }()

	// cpuTime reads /proc for the process's pid, whichever program it
	// runs.
	hostProc := &tributaryProcess{process: host.process}
	hostCPU, serverCPU := hostProc.cpuTime(b), srv.cpuTime(b)
	var writes sync.WaitGroup
	var writeErr atomic.Pointer[error]
	rolloutStart := time.Now()
	for k := range changes {
		time.Sleep(time.Until(rolloutStart.Add(time.Duration(k) * time.Second / time.Duration(*kubeRolloutRate))))
		writes.Go(func() {
			at, err := kb.write(context.Background(), k%(2*n), addresses[k])
			changes[k].at = at
			if err != nil {
				writeErr.CompareAndSwap(nil, &err)
			}
		})
	}
	writes.Wait()
	if err := writeErr.Load(); err != nil {
		b.Fatal(*err)
	}
	last := changes[m-1].at
	timer := time.AfterFunc(rolloutConvergeGuard, func() { close(stop) })
	<-observed
	timer.Stop()
	if o.err != nil {
		b.Fatal(o.err)
	}
	res.hostCPU = hostProc.cpuTime(b) - hostCPU
	res.serverCPU = srv.cpuTime(b) - serverCPU
	res.host = procMemoryOf(b, host.process.Cmd.Process.Pid)
	res.server = procMemoryOf(b, srv.process.Cmd.Process.Pid)

	var convergedAt time.Time
	for k, at := range o.heldAt(changes) {
		if at.IsZero() {
			b.Fatalf("the ADS client never held change %d", k)
		}
		delivered, err := apiWatch.await(addresses[k].String(), kubeTimeout)
		if err != nil {
			b.Fatal(err)
		}
		res.fromWrite = append(res.fromWrite, at.Sub(changes[k].at))
		res.fromWatch = append(res.fromWatch, at.Sub(delivered))
		if at.After(convergedAt) {
			convergedAt = at
		}
	}
	res.converge = convergedAt.Sub(last)
	res.writing = last.Sub(changes[0].at)

	lines := awaitValidStatuses(b, host, kb, kubeBenchGuard)
	for _, l := range lines {
		if l.Status != nil && l.Status.Namespace == kb.ns.Name() {
			res.lastStatus = max(res.lastStatus, l.At.Sub(start))
		}
	}
	return res
}

// kubeBench is a benchmark's workload in the API server: N
// ExtensionServices in a namespace of its own, ExtensionService i over
// headless Services kubeBenchService(i, 0) and (i, 1), 50/50, each with
// one EndpointSlice of one ready endpoint.
type kubeBench struct {
	ns *kubeNamespace
	n  int
	// client writes and watches at kubeBenchQPS.
	client ctrlclient.WithWatch

	mu sync.Mutex
	// slices[2i+j] is the slice of kubeBenchService(i, j) as the API
	// server last returned it.
	slices []*discoveryv1.EndpointSlice
	// next is the index of the next unused address.
	next uint64
}

func newKubeBench(tb testing.TB, n int) *kubeBench {
	tb.Helper()
	ns := newKubeNamespace(tb)
	cfg := rest.CopyConfig(ns.k.config)
	cfg.QPS, cfg.Burst = kubeBenchQPS, kubeBenchQPS
	c, err := ctrlclient.NewWithWatch(cfg, ctrlclient.Options{Scheme: kubeScheme})
	if err != nil {
		tb.Fatal(err)
	}
	// Slices 0 … 2N-1 are created with addresses 0 … 2N-1.
	return &kubeBench{ns: ns, n: n, client: c, slices: make([]*discoveryv1.EndpointSlice, 2*n), next: uint64(2 * n)}
}

func kubeBenchExtension(i int) string { return fmt.Sprintf("es-%04d", i) }

func kubeBenchService(i, j int) string { return fmt.Sprintf("es-%04d-%d", i, j) }

// address is the endpoint address number k: 2001:db8::k+1, a
// documentation address, in the canonical form the API server and the
// translator keep.
func (kb *kubeBench) address(k int) netip.Addr {
	a := [16]byte{0x20, 0x01, 0x0d, 0xb8}
	v := uint64(k) + 1
	for i := 15; i >= 8; i-- {
		a[i] = byte(v)
		v >>= 8
	}
	return netip.AddrFrom16(a)
}

// newAddress returns an address no write has used yet.
func (kb *kubeBench) newAddress() netip.Addr {
	kb.mu.Lock()
	defer kb.mu.Unlock()
	k := kb.next
	kb.next++
	return kb.address(int(k))
}

// endpointSlice is slice j of ExtensionService i with one ready endpoint
// at address, on the Services' named port.
func (kb *kubeBench) endpointSlice(i, j int, address netip.Addr) *discoveryv1.EndpointSlice {
	name, port, tcp, ready := kubeServicePortName, int32(kubeServicePort), corev1.ProtocolTCP, true
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: kb.ns.Name(),
			Name:      kubeBenchService(i, j),
			Labels:    map[string]string{discoveryv1.LabelServiceName: kubeBenchService(i, j)},
		},
		AddressType: discoveryv1.AddressTypeIPv6,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &tcp}},
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{address.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		}},
	}
}

// create creates every object through the API, kubeBenchWorkers at a
// time, and returns when the last create was answered.
func (kb *kubeBench) create(tb testing.TB) time.Time {
	tb.Helper()
	ctx := tb.Context()
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var workers sync.WaitGroup
	for range kubeBenchWorkers {
		workers.Go(func() {
			for i := int(next.Add(1) - 1); i < kb.n && failed.Load() == nil; i = int(next.Add(1) - 1) {
				if err := kb.createExtension(ctx, i); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	workers.Wait()
	if err := failed.Load(); err != nil {
		tb.Fatal(*err)
	}
	return time.Now()
}

// createExtension creates ExtensionService i's Services, their slices,
// then the ExtensionService.
func (kb *kubeBench) createExtension(ctx context.Context, i int) error {
	var targets []target
	for j := range 2 {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: kb.ns.Name(), Name: kubeBenchService(i, j)},
			// Headless: the API server's Service range
			// (envtest's 10.0.0.0/24) holds 256 addresses, not 2N,
			// and translation reads only the ports and the slices.
			Spec: corev1.ServiceSpec{
				Type:      corev1.ServiceTypeClusterIP,
				ClusterIP: corev1.ClusterIPNone,
				Ports: []corev1.ServicePort{{
					Name:       kubeServicePortName,
					Port:       kubeServicePort,
					TargetPort: intstr.FromString(kubeServicePortName),
					Protocol:   corev1.ProtocolTCP,
				}},
			},
		}
		if err := kb.client.Create(ctx, svc); err != nil {
			return fmt.Errorf("creating Service %s: %w", svc.Name, err)
		}
		slice := kb.endpointSlice(i, j, kb.address(2*i+j))
		if err := kb.client.Create(ctx, slice); err != nil {
			return fmt.Errorf("creating EndpointSlice %s: %w", slice.Name, err)
		}
		kb.mu.Lock()
		kb.slices[2*i+j] = slice
		kb.mu.Unlock()
		targets = append(targets, target{service: svc.Name, weight: 50})
	}
	es := &contourv1alpha1.ExtensionService{
		ObjectMeta: metav1.ObjectMeta{Namespace: kb.ns.Name(), Name: kubeBenchExtension(i)},
		Spec:       extensionServiceSpec(targets...),
	}
	if err := kb.client.Create(ctx, es); err != nil {
		return fmt.Errorf("creating ExtensionService %s: %w", es.Name, err)
	}
	return nil
}

// write replaces the endpoint address of slice s (2i+j) with address,
// updating the object the API server last returned, and returns when the
// request left: just before it. Writes of one slice must not overlap.
func (kb *kubeBench) write(ctx context.Context, s int, address netip.Addr) (time.Time, error) {
	kb.mu.Lock()
	slice := kb.slices[s].DeepCopy()
	kb.mu.Unlock()
	slice.Endpoints[0].Addresses = []string{address.String()}
	at := time.Now()
	if err := kb.client.Update(ctx, slice); err != nil {
		return at, fmt.Errorf("writing EndpointSlice %s: %w", slice.Name, err)
	}
	kb.mu.Lock()
	kb.slices[s] = slice
	kb.mu.Unlock()
	return at, nil
}

// sliceWatch is an EndpointSlice watch of the benchmark's own, on the
// namespace: it notes when each endpoint address first arrived.
type sliceWatch struct {
	mu      sync.Mutex
	arrived map[string]time.Time
	changed chan struct{}
	err     error
}

// watchSlices starts watching the namespace's EndpointSlices from now on.
func (kb *kubeBench) watchSlices(tb testing.TB) *sliceWatch {
	tb.Helper()
	var list discoveryv1.EndpointSliceList
	if err := kb.client.List(tb.Context(), &list, ctrlclient.InNamespace(kb.ns.Name()), ctrlclient.Limit(1)); err != nil {
		tb.Fatal(err)
	}
	sw := &sliceWatch{arrived: map[string]time.Time{}, changed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sw.fail(sw.run(ctx, kb.client, kb.ns.Name(), list.ResourceVersion))
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
	})
	return sw
}

// run follows the watch from resourceVersion on, starting it again when
// the API server ends it, until ctx ends or the watch fails.
func (sw *sliceWatch) run(ctx context.Context, c ctrlclient.WithWatch, namespace, resourceVersion string) error {
	for {
		w, err := c.Watch(ctx, &discoveryv1.EndpointSliceList{}, ctrlclient.InNamespace(namespace),
			&ctrlclient.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: resourceVersion, AllowWatchBookmarks: true}})
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			now := time.Now()
			if ev.Type == watch.Error {
				w.Stop()
				return apierrors.FromObject(ev.Object)
			}
			slice, ok := ev.Object.(*discoveryv1.EndpointSlice)
			if !ok {
				continue
			}
			resourceVersion = slice.ResourceVersion
			if ev.Type == watch.Bookmark {
				continue
			}
			sw.mu.Lock()
			for _, e := range slice.Endpoints {
				for _, a := range e.Addresses {
					if _, seen := sw.arrived[a]; !seen {
						sw.arrived[a] = now
					}
				}
			}
			close(sw.changed)
			sw.changed = make(chan struct{})
			sw.mu.Unlock()
		}
		w.Stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

func (sw *sliceWatch) fail(err error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.err = err
	close(sw.changed)
	sw.changed = make(chan struct{})
}

// await returns when the watch delivered a slice holding address.
func (sw *sliceWatch) await(address string, timeout time.Duration) (time.Time, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		sw.mu.Lock()
		at, ok := sw.arrived[address]
		changed, err := sw.changed, sw.err
		sw.mu.Unlock()
		if ok {
			return at, nil
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("EndpointSlice watch: %w", err)
		}
		select {
		case <-changed:
		case <-timer.C:
			return time.Time{}, fmt.Errorf("the EndpointSlice watch delivered no slice holding %s within %v", address, timeout)
		}
	}
}

// countValidStatuses counts the ExtensionServices of the workload whose
// Valid status (generation 1) the host reported written by time before.
func countValidStatuses(lines []hostLine, kb *kubeBench, before time.Time) int {
	valid := map[string]bool{}
	for _, l := range lines {
		if s := l.Status; s != nil && s.Namespace == kb.ns.Name() && !l.At.After(before) {
			valid[s.Name] = s.Reason == "Valid" && s.Generation == 1
		}
	}
	n := 0
	for _, v := range valid {
		if v {
			n++
		}
	}
	return n
}

// awaitValidStatuses waits until the host has written the Valid status of
// every ExtensionService of the workload, and returns its lines. The wait
// is long: the host's default client writes 5 statuses a second.
func awaitValidStatuses(tb testing.TB, host *hostProcess, kb *kubeBench, timeout time.Duration) []hostLine {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		lines := host.Lines()
		got := countValidStatuses(lines, kb, time.Now())
		if got == kb.n {
			return lines
		}
		if time.Now().After(deadline) {
			tb.Fatalf("the host wrote %d of %d Valid statuses within %v; log:\n%s", got, kb.n, timeout, host.process.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// procMemory is a process's resident set now and at its peak, in bytes.
type procMemory struct{ rss, hwm uint64 }

// procMemoryOf reads VmRSS and VmHWM from /proc/<pid>/status.
func procMemoryOf(tb testing.TB, pid int) procMemory {
	tb.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	var m procMemory
	for line := range strings.SplitSeq(string(status), "\n") {
		for prefix, into := range map[string]*uint64{"VmRSS:": &m.rss, "VmHWM:": &m.hwm} {
			if v, ok := strings.CutPrefix(line, prefix); ok {
				kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				if err != nil {
					tb.Fatalf("%s %q: %v", prefix, v, err)
				}
				*into = kb << 10
			}
		}
	}
	if m.rss == 0 || m.hwm == 0 {
		tb.Fatalf("/proc/%d/status: no VmRSS or VmHWM", pid)
	}
	return m
}
