package e2e

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	gocmp "github.com/google/go-cmp/cmp"
	contourv1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/wrapperspb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tributary-dev/tributary/internal/xds"
	"github.com/tributary-dev/tributary/internal/xdstest"
)

// The end-to-end tests against a real API server: everything real but
// Envoy (kube-apiserver and etcd with Contour's CRDs, `tributary serve`
// with xDS, contourhost embedding the adapter as Contour would, ext_authz
// backends, and a caller using gRPC-Go's own xDS client), driven through
// the Kubernetes API only. At every step the test checks what each party
// holds exactly: the ExtensionService's status in the API server, the
// Cluster the host's cluster sink received, the Listener, Cluster and
// ClusterLoadAssignment two raw ADS watchers (State of the World and
// Delta) accepted, and the share of calls each Service answers.

// kubeExtension is the ExtensionService every scenario dials.
const kubeExtension = "authz"

// kubeSplit is one scenario's processes, all on loopback.
type kubeSplit struct {
	ns       *kubeNamespace
	srv      *tributaryProcess
	host     *hostProcess
	backends map[string][]netip.AddrPort
	// cluster names the Cluster, ClusterLoadAssignment and Listener of
	// kubeExtension.
	cluster  string
	watchers []*xdstest.Watcher
	caller   *callerProcess
}

// startKubeSplit starts, in a namespace of the test's own, a Tributary
// server, backendsPerService backends for each of services (the Services
// and their slices are the test's to create), the host publishing to the
// namespace's node group, the raw watchers and a caller of kubeExtension.
func startKubeSplit(t *testing.T, services ...string) *kubeSplit {
	t.Helper()
	ns := newKubeNamespace(t)
	s := &kubeSplit{ns: ns, srv: startTributary(t, "127.0.0.1:0", "127.0.0.1:0"), backends: map[string][]netip.AddrPort{}, cluster: ns.clusterName(kubeExtension)}
	for _, svc := range services {
		for i := range backendsPerService {
			s.backends[svc] = append(s.backends[svc], startBackend(t, fmt.Sprintf("%s/%d", svc, i)))
		}
	}
	s.host = startHost(t, hostConfig{NodeGroup: ns.Name(), Tributary: []string{s.srv.grpcAddress}, WatchNamespaces: []string{ns.Name()}})
	s.watchers = watchBothOf(t, s.srv.xdsAddress, ns.Name(), s.cluster)
	s.caller = startCallerOf(t, s.srv.xdsAddress, "kube-caller", ns.Name(), s.cluster, "--map-documentation-addresses")
	return s
}

// createService creates Service svc and one slice per backend of it.
func (s *kubeSplit) createService(t *testing.T, svc string) {
	t.Helper()
	s.ns.createService(t, svc)
	s.scale(t, svc, true)
}

// scale fills svc's slices with its backends, or empties them.
func (s *kubeSplit) scale(t *testing.T, svc string, up bool) {
	t.Helper()
	for i, addr := range s.backends[svc] {
		if !up {
			addr = netip.AddrPort{}
		}
		s.ns.applyEndpointSlice(t, svc, i, addr)
	}
}

// wantAssignment is the ClusterLoadAssignment of kubeExtension over
// targets, where ready lists the Services whose slices hold their
// backends: one locality per target in spec order (a target without
// endpoints has none), its endpoints ordered by address, then port.
func (s *kubeSplit) wantAssignment(ready []string, targets ...target) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: s.cluster}
	for _, t := range targets {
		if !slices.Contains(ready, t.service) {
			continue
		}
		var addrs []netip.AddrPort
		for _, b := range s.backends[t.service] {
			addrs = append(addrs, documentationAddress(b))
		}
		slices.SortFunc(addrs, func(a, b netip.AddrPort) int {
			return cmp.Or(a.Addr().Compare(b.Addr()), cmp.Compare(a.Port(), b.Port()))
		})
		lle := &endpointv3.LocalityLbEndpoints{
			Locality:            &corev3.Locality{SubZone: fmt.Sprintf("%s/%s/%d", s.ns.Name(), t.service, kubeServicePort)},
			LoadBalancingWeight: wrapperspb.UInt32(t.weight),
		}
		for _, a := range addrs {
			lle.LbEndpoints = append(lle.LbEndpoints, &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address:       a.Addr().String(),
					PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(a.Port())},
				}}},
			}}})
		}
		cla.Endpoints = append(cla.Endpoints, lle)
	}
	return cla
}

// hostCluster is the Cluster the host's cluster sink last received under
// the name cluster, or nil when the last call removed it (or none named
// it).
func hostCluster(t *testing.T, lines []hostLine, cluster string) *clusterv3.Cluster {
	t.Helper()
	var last *clusterv3.Cluster
	for _, l := range lines {
		if l.Clusters == nil {
			continue
		}
		if raw, ok := l.Clusters.Changed[cluster]; ok {
			last = &clusterv3.Cluster{}
			if err := protojson.Unmarshal(raw, last); err != nil {
				t.Fatalf("the host's Cluster %s: %v", cluster, err)
			}
		}
		if slices.Contains(l.Clusters.Removed, cluster) {
			last = nil
		}
	}
	return last
}

// awaitServed waits until the host's cluster sink holds kubeExtension's
// Cluster and both watchers hold exactly: the Listener for proxyless gRPC,
// that Cluster with its EDS over ADS, and wantCLA.
func (s *kubeSplit) awaitServed(t *testing.T, step string, wantCLA *endpointv3.ClusterLoadAssignment) {
	t.Helper()
	lines := s.host.await(t, step+": the Cluster in the host's sink", func(lines []hostLine) bool {
		// Cheap enough: a scenario's host prints a few dozen lines.
		return hostClusterQuiet(lines, s.cluster)
	})
	wantCluster := hostCluster(t, lines, s.cluster)
	if wantCluster.GetName() != s.cluster || wantCluster.GetEdsClusterConfig().GetServiceName() != s.cluster {
		t.Fatalf("%s: the host's Cluster is not an EDS Cluster of %s: %v", step, s.cluster, wantCluster)
	}
	wantCluster.GetEdsClusterConfig().EdsConfig = &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
	want := map[string]proto.Message{
		resourcev3.ListenerType: xds.BuildListener(s.cluster),
		resourcev3.ClusterType:  wantCluster,
		resourcev3.EndpointType: wantCLA,
	}
	for _, w := range s.watchers {
		_, err := w.Await(kubeTimeout, func(st xdstest.State) bool {
			for typeURL, m := range want {
				if !proto.Equal(st.Get(typeURL, s.cluster), m) {
					return false
				}
			}
			return true
		}, false)
		if err != nil {
			st, _ := w.State()
			for typeURL, m := range want {
				if diff := gocmp.Diff(m, st.Get(typeURL, s.cluster), protocmp.Transform()); diff != "" {
					t.Errorf("%s: %s watcher, %s (-want +got):\n%s", step, w.Mode(), typeURL, diff)
				}
			}
			t.Fatalf("%s: %s watcher: %v", step, w.Mode(), err)
		}
	}
}

// hostClusterQuiet reports whether the host's sink holds cluster.
func hostClusterQuiet(lines []hostLine, cluster string) bool {
	held := false
	for _, l := range lines {
		if l.Clusters == nil {
			continue
		}
		if _, ok := l.Clusters.Changed[cluster]; ok {
			held = true
		}
		if slices.Contains(l.Clusters.Removed, cluster) {
			held = false
		}
	}
	return held
}

// awaitWithdrawn waits until the host's sink has removed kubeExtension's
// Cluster and neither watcher holds its resources. State of the World
// withdraws a Listener or Cluster by leaving it out of the next response;
// it has no way to withdraw a ClusterLoadAssignment (EDS responses carry
// only what changed), which a client forgets with its Cluster. Delta
// withdraws all three by name.
func (s *kubeSplit) awaitWithdrawn(t *testing.T, step string) {
	t.Helper()
	s.host.await(t, step+": the Cluster removed from the host's sink", func(lines []hostLine) bool {
		return !hostClusterQuiet(lines, s.cluster)
	})
	s.awaitWatchersWithdrawn(t, step)
}

// awaitWatchersWithdrawn waits until the raw xDS watchers hold none of the
// split's resources (see awaitWithdrawn).
func (s *kubeSplit) awaitWatchersWithdrawn(t *testing.T, step string) {
	t.Helper()
	for _, w := range s.watchers {
		types := []string{resourcev3.ListenerType, resourcev3.ClusterType, resourcev3.EndpointType}
		if w.Mode() == xdstest.SotW {
			types = types[:2]
		}
		w.WaitFor(t, step+": resources withdrawn", kubeTimeout, func(st xdstest.State) bool {
			for _, typeURL := range types {
				if st.Get(typeURL, s.cluster) != nil {
					return false
				}
			}
			return true
		})
	}
}

// checkSplit waits for the caller to show the split want, then measures it
// (see awaitSplit and measureSplit).
func (s *kubeSplit) checkSplit(t *testing.T, step string, want map[string]float64) {
	t.Helper()
	awaitSplit(t, step, s.caller, want, kubeTimeout)
	measureSplit(t, step, s.caller, s.backends, want)
}

// validCondition is the Valid condition of a valid ExtensionService at
// generation, as Contour writes it.
func validCondition(generation int64) contourv1.DetailedCondition {
	return contourv1.DetailedCondition{Condition: metav1.Condition{
		Type:               contourv1.ValidConditionType,
		Status:             metav1.ConditionTrue,
		ObservedGeneration: generation,
		Reason:             "Valid",
		Message:            "Valid ExtensionService",
	}}
}

// errorCondition is the Valid condition of an ExtensionService at
// generation with errors, as Contour writes it.
func errorCondition(generation int64, errs ...contourv1.SubCondition) contourv1.DetailedCondition {
	return contourv1.DetailedCondition{
		Condition: metav1.Condition{
			Type:               contourv1.ValidConditionType,
			Status:             metav1.ConditionFalse,
			ObservedGeneration: generation,
			Reason:             "ErrorPresent",
			Message:            "At least one error present, see Errors for details",
		},
		Errors: errs,
	}
}

// unresolvedService is the error of a target naming a Service that does not
// exist.
func unresolvedService(namespace, service string) contourv1.SubCondition {
	ref := namespace + "/" + service
	return contourv1.SubCondition{
		Type:    "ServiceError",
		Status:  metav1.ConditionTrue,
		Reason:  "ServiceUnresolvedReference",
		Message: fmt.Sprintf("unresolved service %q: service %q not found", ref, ref),
	}
}

// TestKubeWeightedSplit follows one ExtensionService, written through the
// Kubernetes API only, from creation to deletion:
//
//  1. 80/20 over Services a and b, with their EndpointSlices;
//  2. 50/50;
//  3. b's slices scaled to zero: all to a; then back;
//  4. a third Service c, 60/20/20;
//  5. broken by a target naming a Service that does not exist, then fixed;
//  6. broken by a response timeout that does not parse, then fixed;
//  7. deleted.
//
// At every step the status in the API server says what Contour's would
// (observedGeneration included), the host's cluster sink and both raw
// watchers hold exactly the resources of the ExtensionService (none while
// it is invalid, for the contract is all or nothing), and the caller's
// split follows.
func TestKubeWeightedSplit(t *testing.T) {
	s := startKubeSplit(t, "authz-a", "authz-b", "authz-c")
	ns := s.ns
	for _, svc := range []string{"authz-a", "authz-b"} {
		s.createService(t, svc)
	}

	step := "80/20"
	targets := []target{{"authz-a", 80}, {"authz-b", 20}}
	gen := ns.applyExtensionService(t, kubeExtension, extensionServiceSpec(targets...))
	ns.awaitCondition(t, step, kubeExtension, validCondition(gen))
	s.awaitServed(t, step, s.wantAssignment([]string{"authz-a", "authz-b"}, targets...))
	s.checkSplit(t, step, map[string]float64{"authz-a": 0.8, "authz-b": 0.2})

	step = "50/50"
	targets = []target{{"authz-a", 50}, {"authz-b", 50}}
	gen = ns.applyExtensionService(t, kubeExtension, extensionServiceSpec(targets...))
	ns.awaitCondition(t, step, kubeExtension, validCondition(gen))
	s.awaitServed(t, step, s.wantAssignment([]string{"authz-a", "authz-b"}, targets...))
	s.checkSplit(t, step, map[string]float64{"authz-a": 0.5, "authz-b": 0.5})

	step = "b scaled to zero"
	s.scale(t, "authz-b", false)
	s.awaitServed(t, step, s.wantAssignment([]string{"authz-a"}, targets...))
	s.checkSplit(t, step, map[string]float64{"authz-a": 1, "authz-b": 0})

	step = "b scaled back"
	s.scale(t, "authz-b", true)
	s.awaitServed(t, step, s.wantAssignment([]string{"authz-a", "authz-b"}, targets...))
	s.checkSplit(t, step, map[string]float64{"authz-a": 0.5, "authz-b": 0.5})

	step = "third Service, 60/20/20"
	s.createService(t, "authz-c")
	targets = []target{{"authz-a", 60}, {"authz-b", 20}, {"authz-c", 20}}
	all := []string{"authz-a", "authz-b", "authz-c"}
	want602020 := map[string]float64{"authz-a": 0.6, "authz-b": 0.2, "authz-c": 0.2}
	gen = ns.applyExtensionService(t, kubeExtension, extensionServiceSpec(targets...))
	ns.awaitCondition(t, step, kubeExtension, validCondition(gen))
	s.awaitServed(t, step, s.wantAssignment(all, targets...))
	s.checkSplit(t, step, want602020)

	step = "a missing Service"
	gen = ns.applyExtensionService(t, kubeExtension, extensionServiceSpec(append(slices.Clone(targets), target{"authz-missing", 20})...))
	ns.awaitCondition(t, step, kubeExtension, errorCondition(gen, unresolvedService(ns.Name(), "authz-missing")))
	s.awaitWithdrawn(t, step)

	step = "missing Service fixed"
	gen = ns.applyExtensionService(t, kubeExtension, extensionServiceSpec(targets...))
	ns.awaitCondition(t, step, kubeExtension, validCondition(gen))
	s.awaitServed(t, step, s.wantAssignment(all, targets...))
	s.checkSplit(t, step, want602020)

	step = "a response timeout that does not parse"
	// The CRD's pattern admits a unit without a number; Go's duration
	// parser does not.
	spec := extensionServiceSpec(targets...)
	spec.TimeoutPolicy = &contourv1.TimeoutPolicy{Response: "s"}
	gen = ns.applyExtensionService(t, kubeExtension, spec)
	ns.awaitCondition(t, step, kubeExtension, errorCondition(gen, contourv1.SubCondition{
		Type:    "SpecError",
		Status:  metav1.ConditionTrue,
		Reason:  "TimeoutPolicyNotValid",
		Message: `spec.timeoutPolicy failed to parse: error parsing response timeout: unable to parse timeout string "s": time: invalid duration "s"`,
	}))
	s.awaitWithdrawn(t, step)

	step = "timeout fixed"
	spec.TimeoutPolicy.Response = "1s"
	gen = ns.applyExtensionService(t, kubeExtension, spec)
	ns.awaitCondition(t, step, kubeExtension, validCondition(gen))
	s.awaitServed(t, step, s.wantAssignment(all, targets...))
	s.checkSplit(t, step, want602020)

	step = "deleted"
	ns.delete(t, &contourv1alpha1.ExtensionService{ObjectMeta: metav1.ObjectMeta{Name: kubeExtension}})
	s.awaitWithdrawn(t, step)
	if _, exists := ns.validCondition(t, kubeExtension); exists {
		t.Fatalf("%s: the ExtensionService is still there", step)
	}
}

// TestKubeExtensionServiceBeforeItsServices creates an ExtensionService
// whose Services do not exist yet: it is invalid and nothing is served
// until they do, and then it is valid (at the same generation: its spec
// never changed) and served at once. Contour leaves it invalid until some
// unrelated rebuild, since a new Service never triggers a rebuild on an
// ExtensionService's behalf.
func TestKubeExtensionServiceBeforeItsServices(t *testing.T) {
	s := startKubeSplit(t, "authz-a", "authz-b")
	ns := s.ns
	targets := []target{{"authz-a", 80}, {"authz-b", 20}}

	step := "no Services"
	gen := ns.applyExtensionService(t, kubeExtension, extensionServiceSpec(targets...))
	ns.awaitCondition(t, step, kubeExtension, errorCondition(gen, unresolvedService(ns.Name(), "authz-a"), unresolvedService(ns.Name(), "authz-b")))
	if hostClusterQuiet(s.host.Lines(), s.cluster) {
		t.Fatalf("%s: the host's sink holds the Cluster of an invalid ExtensionService", step)
	}

	step = "Service a"
	s.createService(t, "authz-a")
	ns.awaitCondition(t, step, kubeExtension, errorCondition(gen, unresolvedService(ns.Name(), "authz-b")))

	step = "Service b"
	s.createService(t, "authz-b")
	ns.awaitCondition(t, step, kubeExtension, validCondition(gen))
	s.awaitServed(t, step, s.wantAssignment([]string{"authz-a", "authz-b"}, targets...))
	s.checkSplit(t, step, map[string]float64{"authz-a": 0.8, "authz-b": 0.2})
}
