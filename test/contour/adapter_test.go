package contour_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/testing/protocmp"
	core_v1 "k8s.io/api/core/v1"
	meta_v1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tributary-dev/tributary/client"
	"github.com/tributary-dev/tributary/client/contour"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

const clusterName = "extension/auth/ext-authz"

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
		validStatus(1, locality{"authz-stable", 80, []string{"10.244.1.17", "10.244.2.9"}}, locality{"authz-canary", 20, []string{"10.244.2.30"}})))

	// The canary scales up: the new pod is listed before it is ready,
	// which changes no output, so nothing is delivered...
	canaryStarting := endpointSlice("authz-canary-p4n8d", "authz-canary", pod{ip: "10.244.2.30", ready: true}, pod{ip: "10.244.1.31"})
	update(canary, canaryStarting)
	step("canary pod starting", nil, one(wantCluster(t, ca1),
		wantCLA(locality{"authz-stable", 80, []string{"10.244.1.17", "10.244.2.9"}}, locality{"authz-canary", 20, []string{"10.244.2.30"}}),
		validStatus(1, locality{"authz-stable", 80, []string{"10.244.1.17", "10.244.2.9"}}, locality{"authz-canary", 20, []string{"10.244.2.30"}})))
	// ...until it is ready, which changes the status's availability too. A
	// resync that changes nothing sends nothing.
	canaryReady := endpointSlice("authz-canary-p4n8d", "authz-canary", pod{ip: "10.244.2.30", ready: true}, pod{ip: "10.244.1.31", ready: true})
	update(canaryStarting, canaryReady)
	update(canaryReady, canaryReady)
	step("canary pod ready", []string{"endpoints changed=[extension/auth/ext-authz] removed=[]", "status auth/ext-authz True"}, one(wantCluster(t, ca1),
		wantCLA(locality{"authz-stable", 80, []string{"10.244.1.17", "10.244.2.9"}}, locality{"authz-canary", 20, []string{"10.244.1.31", "10.244.2.30"}}),
		validStatus(1, locality{"authz-stable", 80, []string{"10.244.1.17", "10.244.2.9"}}, locality{"authz-canary", 20, []string{"10.244.1.31", "10.244.2.30"}})))

	// The stable Deployment rolls: new pods in a new slice, old ones
	// terminating, then the old slice goes (its deletion seen only as a
	// tombstone, after a watch gap).
	stableV2 := endpointSlice("authz-stable-9kd2m", "authz-stable", pod{ip: "10.244.1.40", ready: true}, pod{ip: "10.244.3.41", ready: true})
	add(stableV2, false)
	stableV1Terminating := endpointSlice("authz-stable-7x2kq", "authz-stable",
		pod{ip: "10.244.1.17", terminating: true}, pod{ip: "10.244.2.9", ready: true}, pod{ip: "10.244.3.22"})
	update(stableV1, stableV1Terminating)
	step("stable rollout", []string{"endpoints changed=[extension/auth/ext-authz] removed=[]", "status auth/ext-authz True"}, one(wantCluster(t, ca1),
		wantCLA(locality{"authz-stable", 80, []string{"10.244.1.40", "10.244.2.9", "10.244.3.41"}}, locality{"authz-canary", 20, []string{"10.244.1.31", "10.244.2.30"}}),
		validStatus(1, locality{"authz-stable", 80, []string{"10.244.1.40", "10.244.2.9", "10.244.3.41"}}, locality{"authz-canary", 20, []string{"10.244.1.31", "10.244.2.30"}})))
	remove(deletedFinalStateUnknown{Key: "auth/authz-stable-7x2kq", Obj: stableV1Terminating})
	step("old slice deleted", []string{"endpoints changed=[extension/auth/ext-authz] removed=[]", "status auth/ext-authz True"}, one(wantCluster(t, ca1),
		wantCLA(locality{"authz-stable", 80, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 20, []string{"10.244.1.31", "10.244.2.30"}}),
		validStatus(1, locality{"authz-stable", 80, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 20, []string{"10.244.1.31", "10.244.2.30"}})))

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
		validStatus(1, locality{"authz-stable", 80, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 20, []string{"10.244.1.31", "10.244.2.30"}})))

	// Reweighting changes the ClusterLoadAssignment and the observed
	// generation, not the Cluster.
	update(extAuthz(1, 80, 20), extAuthz(2, 50, 50))
	step("weights 50/50", []string{
		"endpoints changed=[extension/auth/ext-authz] removed=[]",
		"status auth/ext-authz True",
	}, one(wantCluster(t, ca1),
		wantCLA(locality{"authz-stable", 50, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 50, []string{"10.244.1.31", "10.244.2.30"}}),
		validStatus(2, locality{"authz-stable", 50, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 50, []string{"10.244.1.31", "10.244.2.30"}})))

	// CA rotation: first both CAs are trusted, then only the new one. Only
	// the Cluster changes.
	bundle := append(slices.Clone(ca1), ca2...)
	update(caSecret(ca1), caSecret(bundle))
	step("CA bundle", []string{"clusters changed=[extension/auth/ext-authz] removed=[]"}, one(wantCluster(t, bundle),
		wantCLA(locality{"authz-stable", 50, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 50, []string{"10.244.1.31", "10.244.2.30"}}),
		validStatus(2, locality{"authz-stable", 50, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 50, []string{"10.244.1.31", "10.244.2.30"}})))
	update(caSecret(bundle), caSecret(ca2))
	step("CA rotated", []string{"clusters changed=[extension/auth/ext-authz] removed=[]"}, one(wantCluster(t, ca2),
		wantCLA(locality{"authz-stable", 50, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 50, []string{"10.244.1.31", "10.244.2.30"}}),
		validStatus(2, locality{"authz-stable", 50, []string{"10.244.1.40", "10.244.3.41"}}, locality{"authz-canary", 50, []string{"10.244.1.31", "10.244.2.30"}})))

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
