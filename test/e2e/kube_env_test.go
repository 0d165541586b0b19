package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tributary-dev/tributary/internal/testproc"
)

// The Kubernetes harness: one envtest control plane (etcd and
// kube-apiserver, from `make tools`) per test binary, with Contour's CRDs
// installed, shared by every test that asks for it (kubeAPI) and stopped by
// TestMain. Each test works in a namespace of its own (newKubeNamespace),
// which is also the node group its host publishes to, so that tests in one
// API server never see each other's objects or resources.
//
// Objects are written through the API as `kubectl apply` would write them
// (create, or update the spec of what is there). Backends listen on
// 127.0.0.1, which EndpointSlice validation refuses: their slices name
// them by documentation addresses (192.0.2.0/24, same port), and callers
// run with xdscaller's --map-documentation-addresses, which dials those on
// loopback and refuses every other address.

// kubeTimeout bounds every wait on the API server or the host: it waits for
// something asynchronous to happen, it does not time it.
const kubeTimeout = 30 * time.Second

// kubeControlPlane is the test binary's API server.
type kubeControlPlane struct {
	env *envtest.Environment
	// config is the admin user's, with envtest's high client rate limits.
	config *rest.Config
	// client reads and writes Kubernetes and Contour objects as admin.
	client ctrlclient.Client
	// kubeconfig is a file naming the admin user, for host processes.
	kubeconfig string
	// dir holds the API server's certificates and the kubeconfig: ours,
	// not envtest's, so that restarting the API server keeps its serving
	// certificate and every client's kubeconfig stays valid.
	dir string
}

var (
	kubeOnce sync.Once
	kube     *kubeControlPlane
	kubeErr  error
)

// kubeScheme holds client-go's types and Contour's, as Contour's own
// scheme does.
var kubeScheme = func() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, contourv1.AddToScheme, contourv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// kubeAPI returns the test binary's control plane, starting it the first
// time (about 5 s). It skips the test with -short, and outside CI when the
// servers are not built (see testproc.Tool).
func kubeAPI(tb testing.TB) *kubeControlPlane {
	tb.Helper()
	if testing.Short() {
		tb.Skip("end-to-end: runs a Kubernetes API server")
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Dir(testproc.Tool(tb, "kubernetes/kube-apiserver"))
	}
	kubeOnce.Do(func() { kube, kubeErr = startKubeAPI(assets) })
	if kubeErr != nil {
		tb.Fatalf("starting the Kubernetes API server: %v", kubeErr)
	}
	return kube
}

func startKubeAPI(assets string) (*kubeControlPlane, error) {
	// envtest logs through controller-runtime's logger, which otherwise
	// complains that it was never set.
	ctrllog.SetLogger(logr.Discard())
	crds, err := contourCRDs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tributary-kube-")
	if err != nil {
		return nil, err
	}
	k := &kubeControlPlane{dir: dir, env: &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDInstallOptions:     envtest.CRDInstallOptions{Paths: []string{crds}},
		ErrorIfCRDPathMissing: true,
		ControlPlane:          envtest.ControlPlane{APIServer: &envtest.APIServer{CertDir: filepath.Join(dir, "apiserver")}},
	}}
	// Told to stop, the API server waits for the watches open on it to
	// end, and watches never end by themselves: every restart of a server
	// the host watches would wait out envtest's StopTimeout (20 s) and
	// fail. With a second's grace it closes them, as a rolling update of
	// a real API server does, and the host's informers see them end.
	k.env.ControlPlane.APIServer.Configure().Set("shutdown-watch-termination-grace-period", "1s")
	if err := os.Mkdir(k.env.ControlPlane.APIServer.CertDir, 0o700); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	if k.config, err = k.env.Start(); err != nil {
		return nil, errors.Join(err, k.env.Stop(), os.RemoveAll(dir))
	}
	k.kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(k.kubeconfig, k.env.KubeConfig, 0o600); err != nil {
		return nil, errors.Join(err, k.stop())
	}
	if k.client, err = ctrlclient.New(k.config, ctrlclient.Options{Scheme: kubeScheme}); err != nil {
		return nil, errors.Join(err, k.stop())
	}
	return k, nil
}

func (k *kubeControlPlane) stop() error {
	return errors.Join(k.env.Stop(), os.RemoveAll(k.dir))
}

// stopKubeAPI stops the control plane if a test started it. TestMain calls
// it after the tests have run.
func stopKubeAPI() error {
	if kube == nil {
		return nil
	}
	err := kube.stop()
	kube = nil
	return err
}

// contourCRDs is the file of Contour's CRDs in the Contour module the main
// module requires.
func contourCRDs() (string, error) {
	// The go command running the test, as testproc finds it.
	goTool := "go"
	if goroot := os.Getenv("GOROOT"); goroot != "" {
		if p := filepath.Join(goroot, "bin", "go"); fileExists(p) {
			goTool = p
		}
	}
	out, err := exec.Command(goTool, "list", "-m", "-f", "{{.Dir}}", "github.com/projectcontour/contour").Output()
	if err != nil {
		return "", fmt.Errorf("finding the Contour module: go list: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "examples", "contour", "01-crds.yaml"), nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// restartAPIServer stops the API server and starts it again on the same
// address with the same certificates; etcd runs on and keeps every object.
// Clients see their connections and watches break, then the same server
// again.
func restartAPIServer(tb testing.TB) {
	tb.Helper()
	k := kubeAPI(tb)
	api := k.env.ControlPlane.APIServer
	if err := api.Stop(); err != nil {
		tb.Fatalf("stopping the API server: %v", err)
	}
	if err := api.Start(); err != nil {
		tb.Fatalf("starting the API server again: %v", err)
	}
}

// kubeNamespace is a test's namespace, and the node group its host
// publishes to.
type kubeNamespace struct {
	k    *kubeControlPlane
	name string
}

// namespaceSeq makes namespace names unique within the test binary: a
// deleted namespace stays Terminating in envtest (it has no namespace
// controller), so -count=N needs a new name each time.
var namespaceSeq atomic.Int64

var notDNSLabel = regexp.MustCompile(`[^a-z0-9]+`)

// newKubeNamespace creates a namespace for the test, named after it. When
// the test ends, its ExtensionServices, Services and EndpointSlices are
// deleted (so the hosts of later tests, which watch every namespace, do
// not translate them) and the namespace with them.
func newKubeNamespace(tb testing.TB) *kubeNamespace {
	tb.Helper()
	k := kubeAPI(tb)
	base := strings.Trim(notDNSLabel.ReplaceAllString(strings.ToLower(tb.Name()), "-"), "-")
	suffix := "-" + strconv.FormatInt(namespaceSeq.Add(1), 10)
	name := base[:min(len(base), 63-len(suffix))] + suffix
	ns := &kubeNamespace{k: k, name: name}
	if err := k.client.Create(tb.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		tb.Fatalf("creating namespace %s: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), kubeTimeout)
		defer cancel()
		for _, obj := range []ctrlclient.Object{&contourv1alpha1.ExtensionService{}, &discoveryv1.EndpointSlice{}} {
			if err := k.client.DeleteAllOf(ctx, obj, ctrlclient.InNamespace(name)); err != nil {
				tb.Errorf("deleting the %T objects of namespace %s: %v", obj, name, err)
			}
		}
		// Services have no DeleteCollection: one at a time.
		var services corev1.ServiceList
		if err := k.client.List(ctx, &services, ctrlclient.InNamespace(name)); err != nil {
			tb.Errorf("listing the Services of namespace %s: %v", name, err)
		}
		for i := range services.Items {
			if err := k.client.Delete(ctx, &services.Items[i]); ctrlclient.IgnoreNotFound(err) != nil {
				tb.Errorf("deleting Service %s/%s: %v", name, services.Items[i].Name, err)
			}
		}
		if err := k.client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			tb.Errorf("deleting namespace %s: %v", name, err)
		}
	})
	return ns
}

// Name is the namespace's name, also its node group.
func (ns *kubeNamespace) Name() string { return ns.name }

// clusterName is the name of the Cluster, ClusterLoadAssignment and
// Listener of the namespace's ExtensionService name.
func (ns *kubeNamespace) clusterName(name string) string {
	return "extension/" + ns.name + "/" + name
}

// kubeServicePort is the port of every target Service: named, with a
// named targetPort, as a Deployment's Service usually is. The slices name
// the same port with each backend's own number.
const (
	kubeServicePort     = 9000
	kubeServicePortName = "grpc"
)

// extensionServiceSpec is the spec of an h2c ExtensionService over targets
// (Service and weight), each on kubeServicePort.
func extensionServiceSpec(targets ...target) contourv1alpha1.ExtensionServiceSpec {
	h2c := "h2c"
	spec := contourv1alpha1.ExtensionServiceSpec{Protocol: &h2c}
	for _, t := range targets {
		spec.Services = append(spec.Services, contourv1alpha1.ExtensionServiceTarget{Name: t.service, Port: kubeServicePort, Weight: t.weight})
	}
	return spec
}

// applyExtensionService creates ExtensionService name with spec, or
// replaces the spec of the one there, and returns its generation.
func (ns *kubeNamespace) applyExtensionService(tb testing.TB, name string, spec contourv1alpha1.ExtensionServiceSpec) int64 {
	tb.Helper()
	obj := &contourv1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Namespace: ns.name, Name: name}, Spec: spec}
	ns.apply(tb, obj, func(have ctrlclient.Object) { have.(*contourv1alpha1.ExtensionService).Spec = spec })
	return obj.Generation
}

// createService creates Service name: ClusterIP, port kubeServicePort
// named kubeServicePortName, targetPort by that name.
func (ns *kubeNamespace) createService(tb testing.TB, name string) {
	tb.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.name, Name: name},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{
				Name:       kubeServicePortName,
				Port:       kubeServicePort,
				TargetPort: intstr.FromString(kubeServicePortName),
				Protocol:   corev1.ProtocolTCP,
			}},
		},
	}
	if err := ns.k.client.Create(tb.Context(), svc); err != nil {
		tb.Fatalf("creating Service %s/%s: %v", ns.name, name, err)
	}
}

// applyEndpointSlice writes EndpointSlice "<service>-<index>" of service
// with one ready endpoint for the backend listening on loopback (by its
// documentationAddress), or none when loopback is not valid: a slice
// scaled to zero. One slice per backend, since a slice's ports apply to
// all its endpoints and every backend listens on its own port.
func (ns *kubeNamespace) applyEndpointSlice(tb testing.TB, service string, index int, loopback netip.AddrPort) {
	tb.Helper()
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns.name,
			Name:      service + "-" + strconv.Itoa(index),
			Labels:    map[string]string{discoveryv1.LabelServiceName: service},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	if loopback.IsValid() {
		addr := documentationAddress(loopback)
		name, port, tcp, ready := kubeServicePortName, int32(addr.Port()), corev1.ProtocolTCP, true
		slice.Ports = []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &tcp}}
		slice.Endpoints = []discoveryv1.Endpoint{{
			Addresses:  []string{addr.Addr().String()},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		}}
	}
	// apply reads what is there into slice: keep what is wanted apart.
	want := slice.DeepCopy()
	ns.apply(tb, slice, func(have ctrlclient.Object) {
		h := have.(*discoveryv1.EndpointSlice)
		h.Labels, h.AddressType, h.Ports, h.Endpoints = want.Labels, want.AddressType, want.Ports, want.Endpoints
	})
}

// documentationAddress is the address an EndpointSlice names the backend
// listening on loopback by: 192.0.2.N with the same port, which xdscaller
// --map-documentation-addresses dials back on 127.0.0.1. N varies with the
// port only to make slices easier to tell apart; the port alone keeps
// addresses unique.
func documentationAddress(loopback netip.AddrPort) netip.AddrPort {
	if !loopback.Addr().IsLoopback() || !loopback.Addr().Is4() {
		panic(fmt.Sprintf("documentationAddress(%v): the backends listen on IPv4 loopback", loopback))
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(1 + loopback.Port()%254)}), loopback.Port())
}

// apply creates obj, or when it exists reads it into obj and changes it
// with set (a fresh read each time the update conflicts), as `kubectl
// apply` would. obj ends up as the server holds it; set must not read it.
func (ns *kubeNamespace) apply(tb testing.TB, obj ctrlclient.Object, set func(have ctrlclient.Object)) {
	tb.Helper()
	ctx := tb.Context()
	err := ns.k.client.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := ns.k.client.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), obj); err != nil {
				return err
			}
			set(obj)
			return ns.k.client.Update(ctx, obj)
		})
	}
	if err != nil {
		tb.Fatalf("applying %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
	}
}

// delete deletes obj (its namespace and name suffice).
func (ns *kubeNamespace) delete(tb testing.TB, obj ctrlclient.Object) {
	tb.Helper()
	obj.SetNamespace(ns.name)
	if err := ns.k.client.Delete(tb.Context(), obj); err != nil {
		tb.Fatalf("deleting %T %s/%s: %v", obj, ns.name, obj.GetName(), err)
	}
}

// validCondition returns the Valid condition of ExtensionService name, or
// nil (and whether the object exists).
func (ns *kubeNamespace) validCondition(tb testing.TB, name string) (*contourv1.DetailedCondition, bool) {
	tb.Helper()
	var es contourv1alpha1.ExtensionService
	err := ns.k.client.Get(tb.Context(), ctrlclient.ObjectKey{Namespace: ns.name, Name: name}, &es)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		tb.Fatalf("reading ExtensionService %s/%s: %v", ns.name, name, err)
	}
	for i, c := range es.Status.Conditions {
		if c.Type == contourv1.ValidConditionType {
			return &es.Status.Conditions[i], true
		}
	}
	return nil, true
}

// ignoreTransitionTime leaves out of a condition comparison the one field a
// test cannot know.
var ignoreTransitionTime = cmpopts.IgnoreFields(contourv1.DetailedCondition{}, "LastTransitionTime")

// awaitCondition polls ExtensionService name until its Valid condition is
// want, all but lastTransitionTime, which must be set.
func (ns *kubeNamespace) awaitCondition(tb testing.TB, step, name string, want contourv1.DetailedCondition) {
	tb.Helper()
	var got *contourv1.DetailedCondition
	deadline := time.Now().Add(kubeTimeout)
	for {
		got, _ = ns.validCondition(tb, name)
		if got != nil && gocmp.Equal(want, *got, ignoreTransitionTime) {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s: ExtensionService %s/%s has not had the wanted Valid condition within %v (-want +got):\n%s", step, ns.name, name, kubeTimeout, gocmp.Diff(&want, got, ignoreTransitionTime))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got.LastTransitionTime.IsZero() {
		tb.Fatalf("%s: ExtensionService %s/%s: Valid condition without lastTransitionTime: %+v", step, ns.name, name, got)
	}
}

// hostConfig is how startHost runs contourhost.
type hostConfig struct {
	// NodeGroup is the node group the host publishes xDS resources to; a
	// test passes its namespace's name.
	NodeGroup string
	// Tributary lists the gRPC addresses of the Tributary servers: one
	// runs the host with --tributary, several with --tributary-replicas.
	Tributary []string
	// WatchNamespaces limits the host's informers to these namespaces
	// (--watch-namespaces); none watches every namespace, as Contour does
	// by default.
	WatchNamespaces []string
	// Args are further flags (--debounce, say).
	Args []string
}

// hostProcess is a running contourhost. Every line it prints is kept, in
// order, with the time it was read.
type hostProcess struct {
	process *testproc.Process

	mu    sync.Mutex
	lines []hostLine
	// changed is closed and replaced whenever a line arrives or the host's
	// output ends.
	changed chan struct{}
	// ended is set when the host's output ended; malformed holds a line
	// that is not the protocol's.
	ended     bool
	malformed string
}

// hostLine is one line of contourhost's output protocol.
type hostLine struct {
	// At is when the test read the line.
	At       time.Time
	Synced   bool          `json:"synced"`
	Clusters *hostClusters `json:"clusters"`
	Status   *hostStatus   `json:"status"`
}

// hostClusters is one call of the host's ClusterSink.
type hostClusters struct {
	// Changed maps a Cluster's name to the Cluster, as protojson.
	Changed map[string]json.RawMessage `json:"changed"`
	Removed []string                   `json:"removed"`
}

// hostStatus is a status write that reached the API server.
type hostStatus struct {
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Generation int64  `json:"generation"`
	Reason     string `json:"reason"`
}

// startHost runs contourhost against the test binary's API server with
// cfg, and waits until it has synced its informers and flushed once.
func startHost(tb testing.TB, cfg hostConfig) *hostProcess {
	tb.Helper()
	k := kubeAPI(tb)
	args := []string{"--kubeconfig", k.kubeconfig, "--node-group", cfg.NodeGroup, "--log-format", "json"}
	switch len(cfg.Tributary) {
	case 0:
		tb.Fatal("startHost: no Tributary server")
	case 1:
		args = append(args, "--tributary", cfg.Tributary[0])
	default:
		args = append(args, "--tributary-replicas", strings.Join(cfg.Tributary, ","))
	}
	if len(cfg.WatchNamespaces) > 0 {
		args = append(args, "--watch-namespaces", strings.Join(cfg.WatchNamespaces, ","))
	}
	args = append(args, cfg.Args...)
	h := &hostProcess{process: testproc.Start(tb, program(tb, "contourhost"), args...), changed: make(chan struct{})}
	go h.read(tb)
	h.await(tb, `{"synced":true}`, func(lines []hostLine) bool {
		for _, l := range lines {
			if l.Synced {
				return true
			}
		}
		return false
	})
	return h
}

// endOfOutput is the testing.TB the host's reader hands to ReadLine, which
// fails its test when the program has ended: for the reader that is only
// the end of the output, so it ends the reader's goroutine instead.
type endOfOutput struct{ testing.TB }

func (endOfOutput) Helper()               { /* not a test helper */ }
func (endOfOutput) Fatalf(string, ...any) { runtime.Goexit() }

// read keeps the host's output, line by line, until it ends. It reads
// without pause, so the host never blocks writing to its stdout.
func (h *hostProcess) read(tb testing.TB) {
	defer func() {
		h.mu.Lock()
		h.ended = true
		close(h.changed)
		h.mu.Unlock()
	}()
	for {
		// Lines may be far apart: the wait is not a bound, the end of
		// the output is.
		text := h.process.ReadLine(endOfOutput{tb}, 24*time.Hour)
		var l hostLine
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		err := dec.Decode(&l)
		l.At = time.Now()
		h.mu.Lock()
		if err != nil && h.malformed == "" {
			h.malformed = fmt.Sprintf("%q: %v", text, err)
		}
		h.lines = append(h.lines, l)
		close(h.changed)
		h.changed = make(chan struct{})
		h.mu.Unlock()
	}
}

// Lines returns a copy of the lines read so far.
func (h *hostProcess) Lines() []hostLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hostLine(nil), h.lines...)
}

// await waits until ready holds for the lines read so far, and returns
// them. It fails the test when the host printed a line that is not the
// protocol's, when its output ends first, or after kubeTimeout.
func (h *hostProcess) await(tb testing.TB, what string, ready func([]hostLine) bool) []hostLine {
	tb.Helper()
	timer := time.NewTimer(kubeTimeout)
	defer timer.Stop()
	for {
		h.mu.Lock()
		lines, malformed, ended, changed := h.lines, h.malformed, h.ended, h.changed
		h.mu.Unlock()
		if malformed != "" {
			tb.Fatalf("contourhost printed a line outside its protocol: %s", malformed)
		}
		if ready(lines) {
			return append([]hostLine(nil), lines...)
		}
		if ended {
			tb.Fatalf("contourhost's output ended before %s; log:\n%s", what, h.process.Log())
		}
		select {
		case <-changed:
		case <-timer.C:
			tb.Fatalf("contourhost printed no %s within %v; log:\n%s", what, kubeTimeout, h.process.Log())
		}
	}
}

// awaitStatusWrite waits until the host reports a status write for
// ExtensionService name of ns with reason at generation, and returns the
// index of that line.
func (h *hostProcess) awaitStatusWrite(tb testing.TB, ns, name, reason string, generation int64) int {
	tb.Helper()
	want := hostStatus{Namespace: ns, Name: name, Generation: generation, Reason: reason}
	at := -1
	h.await(tb, fmt.Sprintf("status write %+v", want), func(lines []hostLine) bool {
		for i, l := range lines {
			if l.Status != nil && *l.Status == want {
				at = i
				return true
			}
		}
		return false
	})
	return at
}
