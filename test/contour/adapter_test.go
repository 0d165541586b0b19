package contour_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/big"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	contour_v1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/wrapperspb"
	core_v1 "k8s.io/api/core/v1"
	discovery_v1 "k8s.io/api/discovery/v1"
	meta_v1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tributary-dev/tributary/client"
	"github.com/tributary-dev/tributary/client/contour"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/grpctest"
	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/server"
	"github.com/tributary-dev/tributary/internal/testproc"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		testproc.RemoveBuilds()
		os.Exit(code)
	}))
}

// dial serves a real TranslationService over an in-memory listener until
// the test ends.
func dial(t testing.TB) *grpc.ClientConn {
	t.Helper()
	return grpctest.Bufconn(t, server.NewGRPCServer(server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
}

// caches stands in for Contour's cluster cache, EDS cache and status
// writer: it keeps what it was given and logs every call.
type caches struct {
	mu       sync.Mutex
	clusters map[string]*clusterv3.Cluster
	clas     map[string]*endpointv3.ClusterLoadAssignment
	statuses map[string]*tributaryv1.ExtensionServiceStatus
	calls    []string
	called   chan struct{}
}

func newCaches() *caches {
	return &caches{
		clusters: map[string]*clusterv3.Cluster{},
		clas:     map[string]*endpointv3.ClusterLoadAssignment{},
		statuses: map[string]*tributaryv1.ExtensionServiceStatus{},
		called:   make(chan struct{}, 1),
	}
}

func (c *caches) log(format string, args ...any) {
	c.calls = append(c.calls, fmt.Sprintf(format, args...))
	select {
	case c.called <- struct{}{}:
	default:
	}
}

func (c *caches) UpdateClusters(changed []*clusterv3.Cluster, removed []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var names []string
	for _, cl := range changed {
		c.clusters[cl.GetName()] = cl
		names = append(names, cl.GetName())
	}
	for _, name := range removed {
		delete(c.clusters, name)
	}
	c.log("clusters changed=%v removed=%v", names, removed)
}

func (c *caches) UpdateClusterLoadAssignments(changed []*endpointv3.ClusterLoadAssignment, removed []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var names []string
	for _, cla := range changed {
		c.clas[cla.GetClusterName()] = cla
		names = append(names, cla.GetClusterName())
	}
	for _, name := range removed {
		delete(c.clas, name)
	}
	c.log("endpoints changed=%v removed=%v", names, removed)
}

func (c *caches) WriteStatus(namespace, name string, st *tributaryv1.ExtensionServiceStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.statuses[namespace+"/"+name] = st
	c.log("status %s/%s %s", namespace, name, st.GetConditions()[0].GetStatus())
}

func (c *caches) RemoveStatus(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.statuses, namespace+"/"+name)
	c.log("status %s/%s removed", namespace, name)
}

// takeCalls returns the calls since the last take.
func (c *caches) takeCalls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

// awaitCalls waits until n calls have been made since the last take, and
// takes them; for changes no Flush waits for.
func (c *caches) awaitCalls(t *testing.T, n int) []string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		c.mu.Lock()
		if len(c.calls) >= n {
			out := c.calls
			c.calls = nil
			c.mu.Unlock()
			return out
		}
		c.mu.Unlock()
		select {
		case <-c.called:
		case <-timeout:
			t.Fatalf("%d calls within 30s, want %d", len(c.takeCalls()), n)
		}
	}
}

// deletedFinalStateUnknown has the shape of client-go's
// cache.DeletedFinalStateUnknown, the tombstone an informer hands OnDelete
// when it missed the deletion itself.
type deletedFinalStateUnknown struct {
	Key string
	Obj any
}

// newCA returns a self-signed CA certificate in PEM.
func newCA(t *testing.T, name string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// The objects of the scenario, as the informers would hand them over.

func objectMeta(name string, generation int64, labels map[string]string) meta_v1.ObjectMeta {
	return meta_v1.ObjectMeta{Namespace: "auth", Name: name, Generation: generation, Labels: labels, ResourceVersion: "1"}
}

func extAuthz(generation int64, stableWeight, canaryWeight uint32) *contour_v1alpha1.ExtensionService {
	return &contour_v1alpha1.ExtensionService{
		ObjectMeta: objectMeta("ext-authz", generation, nil),
		Spec: contour_v1alpha1.ExtensionServiceSpec{
			Services: []contour_v1alpha1.ExtensionServiceTarget{
				{Name: "authz-stable", Port: 9001, Weight: stableWeight},
				{Name: "authz-canary", Port: 9001, Weight: canaryWeight},
			},
			UpstreamValidation: &contour_v1.UpstreamValidation{CACertificate: "authz-ca", SubjectName: "authz.auth.svc.cluster.local"},
			TimeoutPolicy:      &contour_v1.TimeoutPolicy{Response: "500ms"},
		},
	}
}

func authzService(name string) *core_v1.Service {
	return &core_v1.Service{
		ObjectMeta: objectMeta(name, 0, map[string]string{"app.kubernetes.io/name": "authz"}),
		Spec: core_v1.ServiceSpec{
			Type:  core_v1.ServiceTypeClusterIP,
			Ports: []core_v1.ServicePort{{Name: "grpc", Port: 9001, TargetPort: intstr.FromInt32(9000), Protocol: core_v1.ProtocolTCP}},
		},
	}
}

// pod is one endpoint: its address and whether it is ready; terminating
// pods are not ready but still serving, as Kubernetes reports them.
type pod struct {
	ip          string
	ready       bool
	terminating bool
}

func endpointSlice(name, svc string, pods ...pod) *discovery_v1.EndpointSlice {
	s := &discovery_v1.EndpointSlice{
		ObjectMeta: objectMeta(name, 0, map[string]string{
			discovery_v1.LabelServiceName: svc,
			discovery_v1.LabelManagedBy:   "endpointslice-controller.k8s.io",
		}),
		AddressType: discovery_v1.AddressTypeIPv4,
		Ports:       []discovery_v1.EndpointPort{{Name: new("grpc"), Port: new(int32(9000)), Protocol: new(core_v1.ProtocolTCP)}},
	}
	for _, p := range pods {
		s.Endpoints = append(s.Endpoints, discovery_v1.Endpoint{
			Addresses:  []string{p.ip},
			Conditions: discovery_v1.EndpointConditions{Ready: new(p.ready), Serving: new(p.ready || p.terminating), Terminating: new(p.terminating)},
			NodeName:   new("worker-1"),
		})
	}
	return s
}

func caSecret(bundle []byte) *core_v1.Secret {
	return &core_v1.Secret{
		ObjectMeta: objectMeta("authz-ca", 0, nil),
		Type:       core_v1.SecretTypeOpaque,
		Data:       map[string][]byte{"ca.crt": bundle},
	}
}

// Expected outputs.

const clusterName = "extension/auth/ext-authz"

// wantCluster is the Cluster of ext-authz trusting caBundle, written out in
// full from the contract.
func wantCluster(t *testing.T, caBundle []byte) *clusterv3.Cluster {
	t.Helper()
	xds := `{"resourceApiVersion": "V3", "apiConfigSource": {"apiType": "GRPC", "transportApiVersion": "V3",
		"grpcServices": [{"envoyGrpc": {"clusterName": "contour", "authority": "contour"}}]}}`
	js := `{
	  "name": "extension/auth/ext-authz",
	  "altStatName": "extension_auth_ext-authz",
	  "type": "EDS",
	  "edsClusterConfig": {"serviceName": "extension/auth/ext-authz", "edsConfig": ` + xds + `},
	  "connectTimeout": "2s",
	  "commonLbConfig": {"healthyPanicThreshold": {}, "localityWeightedLbConfig": {}},
	  "transportSocket": {
	    "name": "envoy.transport_sockets.tls",
	    "typedConfig": {
	      "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
	      "sni": "authz.auth.svc.cluster.local",
	      "commonTlsContext": {
	        "alpnProtocols": ["h2"],
	        "validationContext": {
	          "trustedCa": {"inlineBytes": "` + base64.StdEncoding.EncodeToString(caBundle) + `"},
	          "matchTypedSubjectAltNames": [{"sanType": "DNS", "matcher": {"exact": "authz.auth.svc.cluster.local"}}]
	        }
	      }
	    }
	  },
	  "typedExtensionProtocolOptions": {
	    "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
	      "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
	      "explicitHttpConfig": {"http2ProtocolOptions": {}}
	    }
	  }
	}`
	c := &clusterv3.Cluster{}
	if err := protojson.Unmarshal([]byte(js), c); err != nil {
		t.Fatalf("expected Cluster: %v", err)
	}
	return c
}

// locality is one target's share of the ClusterLoadAssignment.
type locality struct {
	service string
	weight  uint32
	ips     []string
}

func wantCLA(localities ...locality) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: clusterName}
	for _, l := range localities {
		lle := &endpointv3.LocalityLbEndpoints{Locality: &corev3.Locality{SubZone: "auth/" + l.service + "/9001"}}
		if l.weight > 0 {
			lle.LoadBalancingWeight = wrapUint32(l.weight)
		}
		for _, ip := range l.ips {
			lle.LbEndpoints = append(lle.LbEndpoints, &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 9000},
				}}},
			}}})
		}
		cla.Endpoints = append(cla.Endpoints, lle)
	}
	return cla
}

func validStatus(generation int64) *tributaryv1.ExtensionServiceStatus {
	return &tributaryv1.ExtensionServiceStatus{
		Namespace: "auth", Name: "ext-authz",
		Conditions: []*tributaryv1.DetailedCondition{{
			Type: "Valid", Status: "True", ObservedGeneration: generation, Reason: "Valid", Message: "Valid ExtensionService",
		}},
		ClusterName:     clusterName,
		ResponseTimeout: "500ms",
	}
}

// state is what the caches hold after a step.
type state struct {
	clusters map[string]*clusterv3.Cluster
	clas     map[string]*endpointv3.ClusterLoadAssignment
	statuses map[string]*tributaryv1.ExtensionServiceStatus
}

func (c *caches) state() state {
	c.mu.Lock()
	defer c.mu.Unlock()
	return state{clusters: clone(c.clusters), clas: clone(c.clas), statuses: clone(c.statuses)}
}

func clone[M ~map[string]V, V any](m M) M {
	out := make(M, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestAdapterInformerScenario feeds the adapter the events Contour's
// informers deliver while an ext_authz extension is rolled out, broken,
// repaired, reweighted, re-keyed and deleted, through a real server. After
// every step the caches hold exactly the expected Cluster,
// ClusterLoadAssignment and status, and the step delivered only what it
// changed.
func TestAdapterInformerScenario(t *testing.T) {
	conn := dial(t)
	ca1, ca2 := newCA(t, "authz CA 1"), newCA(t, "authz CA 2")
	sink := newCaches()
	var flushErrs []error
	a := contour.NewAdapter(t.Context(), client.New(conn), nil,
		contour.WithClusterSink(sink), contour.WithEndpointSink(sink), contour.WithStatusWriter(sink),
		contour.WithDebounce(-1), // every step ends with an explicit Flush
		contour.WithFlushErrorHandler(func(err error) { flushErrs = append(flushErrs, err) }),
		contour.WithSyncOptions(client.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))),
	)
	defer a.Close()

	// inputs mirrors the informers' caches, to ask Translate for the same
	// answer at every step.
	inputs := map[string]any{}
	add := func(obj any, initial bool) {
		inputs[key(obj)] = obj
		a.OnAdd(obj, initial)
	}
	update := func(old, obj any) {
		inputs[key(obj)] = obj
		a.OnUpdate(old, obj)
	}
	remove := func(obj any) {
		if ts, ok := obj.(deletedFinalStateUnknown); ok {
			delete(inputs, key(ts.Obj))
		} else {
			delete(inputs, key(obj))
		}
		a.OnDelete(obj)
	}
	step := func(name string, wantCalls []string, want state) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if err := a.Flush(ctx); err != nil {
			t.Fatalf("%s: Flush: %v", name, err)
		}
		if d := cmp.Diff(wantCalls, sink.takeCalls(), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: calls (-want +got):\n%s", name, d)
		}
		got := sink.state()
		if d := cmp.Diff(want, got, cmp.AllowUnexported(state{}), protocmp.Transform(), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: caches (-want +got):\n%s", name, d)
		}
		// The incremental session agrees with a one-shot translation of
		// the same objects, and every resource is valid.
		tr := translateAll(t, conn, inputs)
		if d := cmp.Diff(tr, got, cmp.AllowUnexported(state{}), protocmp.Transform(), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("%s: caches vs Translate (-translate +caches):\n%s", name, d)
		}
		for _, c := range got.clusters {
			if err := c.ValidateAll(); err != nil {
				t.Errorf("%s: Cluster: %v", name, err)
			}
		}
		for _, c := range got.clas {
			if err := c.ValidateAll(); err != nil {
				t.Errorf("%s: ClusterLoadAssignment: %v", name, err)
			}
		}
	}
	one := func(c *clusterv3.Cluster, cla *endpointv3.ClusterLoadAssignment, st *tributaryv1.ExtensionServiceStatus) state {
		s := state{statuses: map[string]*tributaryv1.ExtensionServiceStatus{"auth/ext-authz": st}}
		if c != nil {
			s.clusters = map[string]*clusterv3.Cluster{clusterName: c}
		}
		if cla != nil {
			s.clas = map[string]*endpointv3.ClusterLoadAssignment{clusterName: cla}
		}
		return s
	}
	stableV1 := endpointSlice("authz-stable-7x2kq", "authz-stable",
		pod{ip: "10.244.1.17", ready: true}, pod{ip: "10.244.2.9", ready: true}, pod{ip: "10.244.3.22"})
	canary := endpointSlice("authz-canary-p4n8d", "authz-canary", pod{ip: "10.244.2.30", ready: true})

	// The initial list, in the order informers start; nothing is sent
	// before the first Flush, so no status is written from a partial view.
	add(authzService("authz-canary"), true)
	add(&core_v1.ConfigMap{ObjectMeta: objectMeta("unrelated", 0, nil)}, true)
	add(extAuthz(1, 80, 20), true)
	add(canary, true)
	add(&core_v1.Secret{ObjectMeta: objectMeta("serving-cert", 0, nil), Type: core_v1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("cert"), "tls.key": []byte("key")}}, true)
	add(caSecret(ca1), true)
	add(stableV1, true)
	add(authzService("authz-stable"), true)
	if calls := sink.takeCalls(); len(calls) != 0 {
		t.Fatalf("calls before the first Flush: %v", calls)
	}
	step("initial list", []string{
		"clusters changed=[extension/auth/ext-authz] removed=[]",
		"endpoints changed=[extension/auth/ext-authz] removed=[]",
		"status auth/ext-authz True",
	}, one(wantCluster(t, ca1),
		wantCLA(locality{"authz-stable", 80, []string{"10.244.1.17", "10.244.2.9"}}, locality{"authz-canary", 20, []string{"10.244.2.30"}}),
		validStatus(1)))

	// The canary scales up: the new pod is listed before it is ready,
	// which changes no output, so nothing is delivered...
	canaryStarting := endpointSlice("authz-canary-p4n8d", "authz-canary", pod{ip: "10.244.2.30", ready: true}, pod{ip: "10.244.1.31"})
	update(canary, canaryStarting)
	step("canary pod starting", nil, one(wantCluster(t, ca1),
		wantCLA(locality{"authz-stable", 80, []string{"10.244.1.17", "10.244.2.9"}}, locality{"authz-canary", 20, []string{"10.244.2.30"}}),
		validStatus(1)))
	// ...until it is ready. A resync that changes nothing sends nothing.
	canaryReady := endpointSlice("authz-canary-p4n8d", "authz-canary", pod{ip: "10.244.2.30", ready: true}, pod{ip: "10.244.1.31", ready: true})
	update(canaryStarting, canaryReady)
	update(canaryReady, canaryReady)
	step("canary pod ready", []string{"endpoints changed=[extension/auth/ext-authz] removed=[]"}, one(wantCluster(t, ca1),
		wantCLA(locality{"authz-stable", 80, []string{"10.244.1.17", "10.244.2.9"}}, locality{"authz-canary", 20, []string{"10.244.1.31", "10.244.2.30"}}),
		validStatus(1)))

	// The stable Deployment rolls: new pods in a new slice, old ones
	// terminating, then the old slice goes (its deletion seen only as a
	// tombstone, after a watch gap).
	stableV2 := endpointSlice("authz-stable-9kd2m", "authz-stable", pod{ip: "10.244.1.40", ready: true}, pod{ip: "10.244.3.41", ready: true})
	add(stableV2, false)
	stableV1Terminating := endpointSlice("authz-stable-7x2kq", "authz-stable",
		pod{ip: "10.244.1.17", terminating: true}, pod{ip: "10.244.2.9", ready: true}, pod{ip: "10.244.3.22"})
	update(stableV1, stableV1Terminating)
	step("stable rollout", []string{"endpoints changed=[extension/auth/ext-authz] removed=[]"}, one(wantCluster(t, ca1),
		wantCLA(locality{"authz-stable", 80, []string{"10.244.1.40", "10.244.2.9", "10.244.3.41"}}, locality{"authz-canary", 20, []string{"10.244.1.31", "10.244.2.30"}}),
		validStatus(1)))
	remove(deletedFinalStateUnknown{Key: "auth/authz-stable-7x2kq", Obj: stableV1Terminating})
	step("old slice deleted", []string{"endpoints changed=[extension/auth/ext-authz] removed=[]"}, one(wantCluster(t, ca1),
		wantCLA(locality{"authz-stable", 80, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 20, []string{"10.244.1.31", "10.244.2.30"}}),
		validStatus(1)))

	// The canary Service is deleted: the extension is invalid, so its
	// Cluster and ClusterLoadAssignment go, and its status says why.
	remove(authzService("authz-canary"))
	unresolved := &tributaryv1.ExtensionServiceStatus{
		Namespace: "auth", Name: "ext-authz",
		Conditions: []*tributaryv1.DetailedCondition{{
			Type: "Valid", Status: "False", ObservedGeneration: 1, Reason: "ErrorPresent",
			Message: "At least one error present, see Errors for details",
			Errors: []*tributaryv1.SubCondition{{
				Type: "ServiceError", Status: "True", Reason: "ServiceUnresolvedReference",
				Message: `unresolved service "auth/authz-canary": service "auth/authz-canary" not found`,
			}},
		}},
		ResponseTimeout: "500ms",
	}
	step("canary Service deleted", []string{
		"clusters changed=[] removed=[extension/auth/ext-authz]",
		"endpoints changed=[] removed=[extension/auth/ext-authz]",
		"status auth/ext-authz False",
	}, one(nil, nil, unresolved))

	add(authzService("authz-canary"), false)
	step("canary Service recreated", []string{
		"clusters changed=[extension/auth/ext-authz] removed=[]",
		"endpoints changed=[extension/auth/ext-authz] removed=[]",
		"status auth/ext-authz True",
	}, one(wantCluster(t, ca1),
		wantCLA(locality{"authz-stable", 80, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 20, []string{"10.244.1.31", "10.244.2.30"}}),
		validStatus(1)))

	// Reweighting changes the ClusterLoadAssignment and the observed
	// generation, not the Cluster.
	update(extAuthz(1, 80, 20), extAuthz(2, 50, 50))
	step("weights 50/50", []string{
		"endpoints changed=[extension/auth/ext-authz] removed=[]",
		"status auth/ext-authz True",
	}, one(wantCluster(t, ca1),
		wantCLA(locality{"authz-stable", 50, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 50, []string{"10.244.1.31", "10.244.2.30"}}),
		validStatus(2)))

	// CA rotation: first both CAs are trusted, then only the new one. Only
	// the Cluster changes.
	bundle := append(slices.Clone(ca1), ca2...)
	update(caSecret(ca1), caSecret(bundle))
	step("CA bundle", []string{"clusters changed=[extension/auth/ext-authz] removed=[]"}, one(wantCluster(t, bundle),
		wantCLA(locality{"authz-stable", 50, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 50, []string{"10.244.1.31", "10.244.2.30"}}),
		validStatus(2)))
	update(caSecret(bundle), caSecret(ca2))
	step("CA rotated", []string{"clusters changed=[extension/auth/ext-authz] removed=[]"}, one(wantCluster(t, ca2),
		wantCLA(locality{"authz-stable", 50, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 50, []string{"10.244.1.31", "10.244.2.30"}}),
		validStatus(2)))

	// The ExtensionService is deleted; everything it produced goes.
	remove(deletedFinalStateUnknown{Key: "auth/ext-authz", Obj: extAuthz(2, 50, 50)})
	step("ExtensionService deleted", []string{
		"clusters changed=[] removed=[extension/auth/ext-authz]",
		"endpoints changed=[] removed=[extension/auth/ext-authz]",
		"status auth/ext-authz removed",
	}, state{})

	if len(flushErrs) != 0 {
		t.Errorf("automatic flushes ran with Debounce < 0 and failed: %v", flushErrs)
	}
}

// key names an informer object by type, namespace and name.
func key(obj any) string {
	m := obj.(meta_v1.Object)
	return fmt.Sprintf("%T/%s/%s", obj, m.GetNamespace(), m.GetName())
}

// translateAll is what a one-shot Translate gives for the informers'
// objects, in the caches' shape.
func translateAll(t *testing.T, conn *grpc.ClientConn, inputs map[string]any) state {
	t.Helper()
	req := &tributaryv1.TranslateRequest{}
	for _, k := range slices.Sorted(maps.Keys(inputs)) {
		if o, ok := contour.Object(inputs[k].(runtime.Object)); ok {
			req.Objects = append(req.Objects, o)
		}
	}
	tr, err := client.New(conn).Translate(t.Context(), req)
	if err != nil {
		t.Fatalf("Translate: %v", err)
	}
	s := state{
		clusters: map[string]*clusterv3.Cluster{},
		clas:     map[string]*endpointv3.ClusterLoadAssignment{},
		statuses: map[string]*tributaryv1.ExtensionServiceStatus{},
	}
	for _, c := range tr.Clusters {
		s.clusters[c.GetName()] = c
	}
	for _, c := range tr.ClusterLoadAssignments {
		s.clas[c.GetClusterName()] = c
	}
	for _, st := range tr.Statuses {
		s.statuses[st.GetNamespace()+"/"+st.GetName()] = st
	}
	return s
}

func wrapUint32(v uint32) *wrapperspb.UInt32Value { return wrapperspb.UInt32(v) }

// tombstone is a tombstone of a kind the adapter cannot guess, for
// contour.WithTombstoneUnwrapper.
type tombstone struct{ last runtime.Object }

// TestAdapterFlushesByItself: once the first Flush is done, changes reach
// the caches with no Flush, a refused change is reported to the flush error handler,
// and a tombstone hook is used for deletions.
func TestAdapterFlushesByItself(t *testing.T) {
	conn := dial(t)
	sink := newCaches()
	flushErrs := make(chan error, 10)
	a := contour.NewAdapter(t.Context(), client.New(conn), &contour.Config{ConnectTimeout: "1s"},
		contour.WithClusterSink(sink), contour.WithEndpointSink(sink), contour.WithStatusWriter(sink),
		contour.WithDebounce(time.Millisecond),
		contour.WithFlushErrorHandler(func(err error) { flushErrs <- err }),
		contour.WithTombstoneUnwrapper(func(obj any) (any, bool) {
			ts, ok := obj.(*tombstone)
			if !ok {
				return nil, false
			}
			return ts.last, true
		}),
		contour.WithSyncOptions(client.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))),
	)
	defer a.Close()

	es := extAuthz(1, 1, 0)
	es.Spec.Services = es.Spec.Services[:1]
	es.Spec.UpstreamValidation = nil
	es.Spec.Protocol = new("h2c")
	slice := endpointSlice("authz-stable-7x2kq", "authz-stable", pod{ip: "10.244.1.17", ready: true})
	a.OnAdd(es, true)
	a.OnAdd(authzService("authz-stable"), true)
	a.OnAdd(slice, true)
	if err := a.Flush(t.Context()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if calls := sink.takeCalls(); len(calls) != 3 {
		t.Fatalf("first Flush made calls %q, want a Cluster, a ClusterLoadAssignment and a status", calls)
	}
	if got := sink.state().clusters[clusterName].GetConnectTimeout().AsDuration(); got != time.Second {
		t.Errorf("connect timeout %v, want the configured 1s", got)
	}

	a.OnUpdate(slice, endpointSlice("authz-stable-7x2kq", "authz-stable", pod{ip: "10.244.1.17", ready: true}, pod{ip: "10.244.1.18", ready: true}))
	if d := cmp.Diff([]string{"endpoints changed=[extension/auth/ext-authz] removed=[]"}, sink.awaitCalls(t, 1)); d != "" {
		t.Errorf("after an EndpointSlice update (-want +got):\n%s", d)
	}
	if got := len(sink.state().clas[clusterName].GetEndpoints()[0].GetLbEndpoints()); got != 2 {
		t.Errorf("%d endpoints, want 2", got)
	}

	a.OnAdd(&contour_v1alpha1.ExtensionService{ObjectMeta: meta_v1.ObjectMeta{Namespace: "auth"}}, false)
	select {
	case err := <-flushErrs:
		var rejected *client.BatchRejectedError
		if !errors.As(err, &rejected) || !strings.Contains(rejected.Message, "metadata.name is required") {
			t.Errorf("the flush error handler got %v, want a rejected batch naming metadata.name", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no flush error within 30s")
	}

	a.OnDelete(&tombstone{last: es})
	if d := cmp.Diff([]string{
		"clusters changed=[] removed=[extension/auth/ext-authz]",
		"endpoints changed=[] removed=[extension/auth/ext-authz]",
		"status auth/ext-authz removed",
	}, sink.awaitCalls(t, 3)); d != "" {
		t.Errorf("after the ExtensionService's tombstone (-want +got):\n%s", d)
	}
}

// TestAdapterSendsOnlyNamedObjects: of the cluster's Services,
// EndpointSlices and Secrets, the server's session holds only those an
// ExtensionService names or has named, until they are deleted. An
// EndpointSlice without a service-name label, which the server would
// refuse, never reaches it.
func TestAdapterSendsOnlyNamedObjects(t *testing.T) {
	m := metrics.New()
	conn := grpctest.Bufconn(t, server.NewGRPCServer(server.Options{Logger: slog.New(slog.DiscardHandler), Metrics: m}))
	sink := newCaches()
	a := flushedByHand(t, conn, sink)
	step := func(when string, want map[string]float64) {
		t.Helper()
		if err := a.Flush(t.Context()); err != nil {
			t.Fatalf("%s: Flush: %v", when, err)
		}
		if d := cmp.Diff(want, sessionObjects(t, m)); d != "" {
			t.Errorf("%s: objects the server holds (-want +got):\n%s", when, d)
		}
	}
	held := func(es, services, slices, secrets float64) map[string]float64 {
		return map[string]float64{"ExtensionService": es, "Service": services, "EndpointSlice": slices, "Secret": secrets, "TLSCertificateDelegation": 0}
	}

	es := extAuthz(1, 1, 0)
	es.Spec.Services = es.Spec.Services[:1] // authz-stable
	unlabelled := endpointSlice("manual", "")
	delete(unlabelled.Labels, discovery_v1.LabelServiceName)
	webTLS := caSecret(newCA(t, "web"))
	webTLS.Name = "web-tls"
	for _, obj := range []runtime.Object{
		es,
		authzService("authz-stable"), authzService("web"),
		endpointSlice("authz-stable-1", "authz-stable", pod{ip: "10.244.1.17", ready: true}),
		endpointSlice("web-1", "web", pod{ip: "10.244.2.9", ready: true}),
		unlabelled,
		caSecret(newCA(t, "authz")), webTLS,
	} {
		a.OnAdd(obj, true)
	}
	step("initial list", held(1, 1, 1, 1))

	both := extAuthz(2, 1, 0)
	both.Spec.Services = []contour_v1alpha1.ExtensionServiceTarget{{Name: "authz-stable", Port: 9001, Weight: 3}, {Name: "web", Port: 9001, Weight: 1}}
	a.OnUpdate(es, both)
	step("web named too", held(1, 2, 2, 1))
	want := wantCLA(locality{"authz-stable", 3, []string{"10.244.1.17"}}, locality{"web", 1, []string{"10.244.2.9"}})
	if d := cmp.Diff(want, sink.state().clas[clusterName], protocmp.Transform()); d != "" {
		t.Errorf("ClusterLoadAssignment with web named (-want +got):\n%s", d)
	}

	webOnly := extAuthz(3, 1, 0)
	webOnly.Spec.Services = []contour_v1alpha1.ExtensionServiceTarget{{Name: "web", Port: 9001}}
	webOnly.Spec.UpstreamValidation = nil
	webOnly.Spec.Protocol = new("h2c")
	a.OnUpdate(both, webOnly)
	step("only web named, and no CA", held(1, 2, 2, 1))

	a.OnDelete(webOnly)
	step("ExtensionService deleted", held(0, 2, 2, 1))

	a.OnDelete(authzService("authz-stable"))
	a.OnDelete(endpointSlice("authz-stable-1", "authz-stable"))
	a.OnDelete(webTLS)
	step("a Service once named, its slice, and a Secret never named deleted", held(0, 1, 1, 1))
}

// sessionObjects reads tributary_sync_session_objects by kind.
func sessionObjects(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "tributary_sync_session_objects" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "kind" {
					out[l.GetValue()] = s.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

// TestAdapterAfterRejectedBatch: when the batch that retargets an
// ExtensionService is refused (here for a Service the server finds
// malformed), the session keeps the ExtensionService as it was, and the
// Services it still targets go on getting their endpoint changes; once the
// Service is repaired and the ExtensionService changes again, the objects
// the refused batch carried are sent again.
func TestAdapterAfterRejectedBatch(t *testing.T) {
	conn := dial(t)
	sink := newCaches()
	a := flushedByHand(t, conn, sink)
	h2c := func(generation int64, target string) *contour_v1alpha1.ExtensionService {
		es := extAuthz(generation, 1, 0)
		es.Spec.Services = []contour_v1alpha1.ExtensionServiceTarget{{Name: target, Port: 9001}}
		es.Spec.UpstreamValidation = nil
		es.Spec.Protocol = new("h2c")
		return es
	}
	endpoints := func(when, service string, ips ...string) {
		t.Helper()
		if d := cmp.Diff(wantCLA(locality{service, 1, ips}), sink.state().clas[clusterName], protocmp.Transform()); d != "" {
			t.Errorf("%s: ClusterLoadAssignment (-want +got):\n%s", when, d)
		}
	}

	stable := endpointSlice("authz-stable-1", "authz-stable", pod{ip: "10.244.1.17", ready: true})
	broken := authzService("web")
	broken.Spec.Ports[0].Port = 0
	for _, obj := range []runtime.Object{
		h2c(1, "authz-stable"), authzService("authz-stable"), stable,
		broken, endpointSlice("web-1", "web", pod{ip: "10.244.2.9", ready: true}),
	} {
		a.OnAdd(obj, true)
	}
	if err := a.Flush(t.Context()); err != nil {
		t.Fatalf("initial list: %v", err)
	}
	endpoints("initial list", "authz-stable", "10.244.1.17")

	a.OnUpdate(h2c(1, "authz-stable"), h2c(2, "web"))
	var rejected *client.BatchRejectedError
	if err := a.Flush(t.Context()); !errors.As(err, &rejected) || !strings.Contains(rejected.Message, "spec.ports[0].port") {
		t.Fatalf("retarget to the malformed Service: %v, want a rejected batch naming spec.ports[0].port", err)
	}

	moved := endpointSlice("authz-stable-1", "authz-stable", pod{ip: "10.244.1.18", ready: true})
	a.OnUpdate(stable, moved)
	if err := a.Flush(t.Context()); err != nil {
		t.Fatalf("endpoint change after the rejection: %v", err)
	}
	endpoints("endpoint change after the rejection", "authz-stable", "10.244.1.18")

	a.OnUpdate(broken, authzService("web"))
	a.OnUpdate(h2c(2, "web"), h2c(3, "web"))
	if err := a.Flush(t.Context()); err != nil {
		t.Fatalf("retarget again after the repair: %v", err)
	}
	endpoints("retarget again after the repair", "web", "10.244.2.9")
}

// flushedByHand returns an Adapter with default settings over conn that
// sends only on Flush, delivering to sink (when not nil), and closed when
// the test ends.
func flushedByHand(tb testing.TB, conn *grpc.ClientConn, sink *caches) *contour.Adapter {
	opts := []contour.AdapterOption{
		contour.WithDebounce(-1),
		contour.WithSyncOptions(client.WithLogger(slog.New(slog.DiscardHandler))),
	}
	if sink != nil {
		opts = append(opts, contour.WithClusterSink(sink), contour.WithEndpointSink(sink), contour.WithStatusWriter(sink))
	}
	a := contour.NewAdapter(tb.Context(), client.New(conn), nil, opts...)
	tb.Cleanup(a.Close)
	return a
}
