package session_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
)

func nn(namespace, name string) source.NamespacedName {
	return source.NamespacedName{Namespace: namespace, Name: name}
}

// extensionService targets services (port 9000, no weights) over h2c.
func extensionService(namespace, name string, services ...string) source.ExtensionService {
	es := source.ExtensionService{
		Meta: source.Meta{Namespace: namespace, Name: name, Generation: 1},
		Spec: source.ExtensionServiceSpec{Protocol: strp("h2c")},
	}
	for _, s := range services {
		es.Spec.Services = append(es.Spec.Services, source.ExtensionServiceTarget{Name: s, Port: 9000})
	}
	return es
}

// validatedExtensionService speaks h2 to service, verifying it with caSecret.
func validatedExtensionService(namespace, name, service, caSecret string) source.ExtensionService {
	es := extensionService(namespace, name, service)
	es.Spec.Protocol = nil
	es.Spec.Validation = &source.UpstreamValidation{CASecret: caSecret, SubjectName: "ext.example.com"}
	return es
}

func service(namespace, name string) source.Service {
	return source.Service{
		Meta:  source.Meta{Namespace: namespace, Name: name},
		Type:  "ClusterIP",
		Ports: []source.ServicePort{{Name: "grpc", Port: 9000, Protocol: "TCP"}},
	}
}

// endpointSlice is labelled for service ("" for no label) and holds ready
// IPv4 endpoints on port 9000.
func endpointSlice(namespace, name, service string, addresses ...string) source.EndpointSlice {
	slice := source.EndpointSlice{
		Meta:        source.Meta{Namespace: namespace, Name: name},
		AddressType: "IPv4",
		Ports:       []source.EndpointPort{{Name: strp("grpc"), Port: i32p(9000), Protocol: strp("TCP")}},
	}
	if service != "" {
		slice.Labels = map[string]string{source.ServiceNameLabel: service}
	}
	for _, a := range addresses {
		slice.Endpoints = append(slice.Endpoints, source.Endpoint{Addresses: []string{a}, Ready: boolp(true)})
	}
	return slice
}

func caSecret(namespace, name string, ca []byte) source.Secret {
	return source.Secret{Meta: source.Meta{Namespace: namespace, Name: name}, Type: "Opaque", CACrt: ca}
}

// baseObjects is the world most tests start from, every ExtensionService
// valid: in namespace auth, a and c target s1, b targets s2; c verifies
// with the CA Secret auth/ca, d with other/ca, which other/delegate
// delegates to auth.
func baseObjects() source.Objects {
	return source.Objects{
		ExtensionServices: []source.ExtensionService{
			extensionService("auth", "a", "s1"),
			extensionService("auth", "b", "s2"),
			validatedExtensionService("auth", "c", "s1", "ca"),
			validatedExtensionService("auth", "d", "s2", "other/ca"),
		},
		Services:       []source.Service{service("auth", "s1"), service("auth", "s2")},
		EndpointSlices: []source.EndpointSlice{endpointSlice("auth", "s1-a", "s1", "10.0.0.1"), endpointSlice("auth", "s2-a", "s2", "10.0.0.2")},
		Secrets:        []source.Secret{caSecret("auth", "ca", genCA), caSecret("other", "ca", genCA)},
		TLSCertificateDelegations: []source.TLSCertificateDelegation{{
			Meta:        source.Meta{Namespace: "other", Name: "delegate"},
			Delegations: []source.CertificateDelegation{{SecretName: "ca", TargetNamespaces: []string{"auth"}}},
		}},
	}
}

// harness applies batches to a session and to a store alike, and checks
// Deltas against a fresh Translate of the store.
type harness struct {
	t        *testing.T
	settings source.Settings
	session  *session.Session
	objects  *store
	rebuilt  []source.NamespacedName
}

func newHarness(t *testing.T, settings source.Settings) *harness {
	h := &harness{t: t, settings: settings, session: session.New(settings), objects: newStore()}
	session.ObserveRebuilds(h.session, func(names []source.NamespacedName) { h.rebuilt = names })
	return h
}

// apply applies b and returns the Delta, the ExtensionServices rebuilt
// (nil for none) and a Translate of the objects after b.
func (h *harness) apply(b session.Batch) (session.Delta, []source.NamespacedName, *translate.Result) {
	h.t.Helper()
	h.rebuilt = nil
	h.objects.apply(&b)
	d := h.session.Apply(&b)
	return d, h.rebuilt, translate.Translate(h.objects.objects(), h.settings)
}

// expected names the entries a Delta should hold; their contents come from
// a Translate.
type expected struct {
	clusters, clas, statuses                      []string // "namespace/name" of ExtensionServices
	removedClusters, removedCLAs, removedStatuses []string
}

func (e expected) delta(t *testing.T, r *translate.Result) session.Delta {
	t.Helper()
	find := func(list []translate.Resource, es string) translate.Resource {
		for _, res := range list {
			if res.Name == "extension/"+es {
				return res
			}
		}
		t.Fatalf("Translate has no resource for %s", es)
		return translate.Resource{}
	}
	var d session.Delta
	for _, es := range e.clusters {
		d.Clusters = append(d.Clusters, find(r.Clusters, es))
	}
	for _, es := range e.clas {
		d.ClusterLoadAssignments = append(d.ClusterLoadAssignments, find(r.ClusterLoadAssignments, es))
	}
	for _, es := range e.statuses {
		found := false
		for _, st := range r.Statuses {
			if st.Namespace+"/"+st.Name == es {
				d.Statuses = append(d.Statuses, st)
				found = true
			}
		}
		if !found {
			t.Fatalf("Translate has no status for %s", es)
		}
	}
	for _, es := range e.removedClusters {
		d.RemovedClusters = append(d.RemovedClusters, "extension/"+es)
	}
	for _, es := range e.removedCLAs {
		d.RemovedClusterLoadAssignments = append(d.RemovedClusterLoadAssignments, "extension/"+es)
	}
	for _, es := range e.removedStatuses {
		ns, name, _ := cutSlash(es)
		d.RemovedStatuses = append(d.RemovedStatuses, nn(ns, name))
	}
	return d
}

func cutSlash(s string) (before, after string, found bool) {
	for i := range len(s) {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

var deltaOptions = cmp.Options{cmpopts.EquateEmpty()}

// check asserts that b gives exactly the expected Delta and rebuilds
// exactly the expected ExtensionServices.
func (h *harness) check(b session.Batch, want expected, wantRebuilt ...source.NamespacedName) {
	h.t.Helper()
	d, rebuilt, result := h.apply(b)
	if diff := cmp.Diff(want.delta(h.t, result), d, deltaOptions); diff != "" {
		h.t.Errorf("Delta (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantRebuilt, rebuilt, cmpopts.EquateEmpty()); diff != "" {
		h.t.Errorf("rebuilt ExtensionServices (-want +got):\n%s", diff)
	}
	h.checkState(result)
}

// checkState asserts that State is a full Delta of Translate's output.
func (h *harness) checkState(r *translate.Result) {
	h.t.Helper()
	// Translate lists resources in namespace/name order, a Delta in name order.
	byName := func(a, b translate.Resource) int { return strings.Compare(a.Name, b.Name) }
	want := session.Delta{
		Clusters:               slices.SortedFunc(slices.Values(r.Clusters), byName),
		ClusterLoadAssignments: slices.SortedFunc(slices.Values(r.ClusterLoadAssignments), byName),
		Statuses:               r.Statuses,
	}
	if diff := cmp.Diff(want, h.session.State(), deltaOptions); diff != "" {
		h.t.Errorf("State (-translate +got):\n%s", diff)
	}
}

var allFour = []source.NamespacedName{nn("auth", "a"), nn("auth", "b"), nn("auth", "c"), nn("auth", "d")}

// loaded returns a harness holding baseObjects, checking that the first
// Apply gives the complete output.
func loaded(t *testing.T, settings source.Settings, extra source.Objects) *harness {
	t.Helper()
	h := newHarness(t, settings)
	objs := baseObjects()
	objs.Secrets = append(objs.Secrets, extra.Secrets...)
	all := []string{"auth/a", "auth/b", "auth/c", "auth/d"}
	h.check(session.Batch{Upserts: objs}, expected{clusters: all, clas: all, statuses: all}, allFour...)
	for _, st := range h.session.State().Statuses {
		if st.Condition.Status != model.ConditionTrue {
			t.Fatalf("base object %s/%s is not valid: %+v", st.Namespace, st.Name, st.Condition)
		}
	}
	return h
}

func TestApplyEndpointAdded(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{
		endpointSlice("auth", "s1-a", "s1", "10.0.0.1", "10.0.0.3"),
	}}}, expected{clas: []string{"auth/a", "auth/c"}}, nn("auth", "a"), nn("auth", "c"))
}

func TestApplyEndpointSliceAddedAndDeleted(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{
		endpointSlice("auth", "s2-b", "s2", "10.0.0.9"),
	}}}, expected{clas: []string{"auth/b", "auth/d"}}, nn("auth", "b"), nn("auth", "d"))
	h.check(session.Batch{Deletes: []session.Ref{{Kind: session.KindEndpointSlice, Name: nn("auth", "s2-b")}}},
		expected{clas: []string{"auth/b", "auth/d"}}, nn("auth", "b"), nn("auth", "d"))
}

// A slice relabelled from s1 to s2 leaves the readers of s1 and joins the
// readers of s2: all of them change.
func TestApplyEndpointSliceRelabelled(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{
		endpointSlice("auth", "s1-a", "s2", "10.0.0.1"),
	}}}, expected{clas: []string{"auth/a", "auth/b", "auth/c", "auth/d"}}, allFour...)
	// Unlabelled, it belongs to no Service any more.
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{
		endpointSlice("auth", "s1-a", "", "10.0.0.1"),
	}}}, expected{clas: []string{"auth/b", "auth/d"}}, nn("auth", "b"), nn("auth", "d"))
	// An unlabelled slice concerns nobody.
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{
		endpointSlice("auth", "s1-a", "", "10.0.0.1", "10.0.0.4"),
	}}}, expected{})
	h.check(session.Batch{Deletes: []session.Ref{{Kind: session.KindEndpointSlice, Name: nn("auth", "s1-a")}}}, expected{})
}

// An ExtensionService whose spec moves from s1 to s2 stops depending on s1
// and starts depending on s2.
func TestApplyExtensionServiceRetargeted(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Upserts: source.Objects{ExtensionServices: []source.ExtensionService{
		extensionService("auth", "a", "s2"),
	}}}, expected{clas: []string{"auth/a"}}, nn("auth", "a"))
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{
		endpointSlice("auth", "s1-a", "s1", "10.0.0.5"),
	}}}, expected{clas: []string{"auth/c"}}, nn("auth", "c"))
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{
		endpointSlice("auth", "s2-a", "s2", "10.0.0.6"),
	}}}, expected{clas: []string{"auth/a", "auth/b", "auth/d"}}, nn("auth", "a"), nn("auth", "b"), nn("auth", "d"))
}

// A spec change that touches only the Cluster sends only the Cluster; a
// new generation alone sends only the status.
func TestApplyExtensionServiceSpecChanged(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	random := extensionService("auth", "a", "s1")
	random.Spec.LoadBalancerPolicy = &source.LoadBalancerPolicy{Strategy: "Random"}
	h.check(session.Batch{Upserts: source.Objects{ExtensionServices: []source.ExtensionService{random}}},
		expected{clusters: []string{"auth/a"}}, nn("auth", "a"))
	random.Generation = 2
	h.check(session.Batch{Upserts: source.Objects{ExtensionServices: []source.ExtensionService{random}}},
		expected{statuses: []string{"auth/a"}}, nn("auth", "a"))
}

func TestApplyExtensionServiceDeleted(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Deletes: []session.Ref{{Kind: session.KindExtensionService, Name: nn("auth", "a")}}},
		expected{removedClusters: []string{"auth/a"}, removedCLAs: []string{"auth/a"}, removedStatuses: []string{"auth/a"}},
		nn("auth", "a"))
	// It no longer depends on s1.
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{
		endpointSlice("auth", "s1-a", "s1", "10.0.0.5"),
	}}}, expected{clas: []string{"auth/c"}}, nn("auth", "c"))
}

// An ExtensionService that becomes invalid loses its resources and says
// why; when it becomes valid again they come back.
func TestApplyExtensionServiceInvalidated(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Deletes: []session.Ref{{Kind: session.KindService, Name: nn("auth", "s2")}}},
		expected{
			removedClusters: []string{"auth/b", "auth/d"}, removedCLAs: []string{"auth/b", "auth/d"},
			statuses: []string{"auth/b", "auth/d"},
		}, nn("auth", "b"), nn("auth", "d"))
	h.check(session.Batch{Upserts: source.Objects{Services: []source.Service{service("auth", "s2")}}},
		expected{clusters: []string{"auth/b", "auth/d"}, clas: []string{"auth/b", "auth/d"}, statuses: []string{"auth/b", "auth/d"}},
		nn("auth", "b"), nn("auth", "d"))
	// An ExtensionService invalid by its own spec.
	h.check(session.Batch{Upserts: source.Objects{ExtensionServices: []source.ExtensionService{extensionService("auth", "a")}}},
		expected{removedClusters: []string{"auth/a"}, removedCLAs: []string{"auth/a"}, statuses: []string{"auth/a"}},
		nn("auth", "a"))
}

// Resources are listed in name order, which is not the namespace/name
// order statuses follow: "extension/a-b/x" comes before "extension/a/y".
func TestApplySortsResourcesByName(t *testing.T) {
	h := newHarness(t, source.Settings{})
	objs := source.Objects{
		ExtensionServices: []source.ExtensionService{extensionService("a", "y", "s"), extensionService("a-b", "x", "s")},
		Services:          []source.Service{service("a", "s"), service("a-b", "s")},
	}
	h.check(session.Batch{Upserts: objs}, expected{
		clusters: []string{"a-b/x", "a/y"}, clas: []string{"a-b/x", "a/y"}, statuses: []string{"a/y", "a-b/x"},
	}, nn("a", "y"), nn("a-b", "x"))
	h.check(session.Batch{Deletes: []session.Ref{
		{Kind: session.KindExtensionService, Name: nn("a", "y")},
		{Kind: session.KindExtensionService, Name: nn("a-b", "x")},
	}}, expected{
		removedClusters: []string{"a-b/x", "a/y"}, removedCLAs: []string{"a-b/x", "a/y"}, removedStatuses: []string{"a/y", "a-b/x"},
	}, nn("a", "y"), nn("a-b", "x"))
}

func TestApplyCASecretChanged(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Upserts: source.Objects{Secrets: []source.Secret{caSecret("auth", "ca", nil)}}},
		expected{removedClusters: []string{"auth/c"}, removedCLAs: []string{"auth/c"}, statuses: []string{"auth/c"}},
		nn("auth", "c"))
	h.check(session.Batch{Deletes: []session.Ref{{Kind: session.KindSecret, Name: nn("other", "ca")}}},
		expected{removedClusters: []string{"auth/d"}, removedCLAs: []string{"auth/d"}, statuses: []string{"auth/d"}},
		nn("auth", "d"))
	// A Secret nobody reads.
	h.check(session.Batch{Upserts: source.Objects{Secrets: []source.Secret{caSecret("auth", "unread", genCA)}}}, expected{})
}

// "/ca" and "auth/ca" name the same Secret as "ca" does for an
// ExtensionService in auth.
func TestApplyCASecretNamespaceDefaults(t *testing.T) {
	for _, ref := range []string{"/ca", "auth/ca"} {
		t.Run(ref, func(t *testing.T) {
			h := loaded(t, source.Settings{}, source.Objects{})
			h.check(session.Batch{Upserts: source.Objects{ExtensionServices: []source.ExtensionService{
				validatedExtensionService("auth", "c", "s1", ref),
			}}}, expected{}, nn("auth", "c"))
			h.check(session.Batch{Deletes: []session.Ref{{Kind: session.KindSecret, Name: nn("auth", "ca")}}},
				expected{removedClusters: []string{"auth/c"}, removedCLAs: []string{"auth/c"}, statuses: []string{"auth/c"}},
				nn("auth", "c"))
		})
	}
}

func TestApplyDelegationChanged(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Deletes: []session.Ref{{Kind: session.KindTLSCertificateDelegation, Name: nn("other", "delegate")}}},
		expected{removedClusters: []string{"auth/d"}, removedCLAs: []string{"auth/d"}, statuses: []string{"auth/d"}},
		nn("auth", "d"))
	h.check(session.Batch{Upserts: source.Objects{TLSCertificateDelegations: []source.TLSCertificateDelegation{{
		Meta:        source.Meta{Namespace: "other", Name: "another"},
		Delegations: []source.CertificateDelegation{{SecretName: "ca", TargetNamespaces: []string{"*"}}},
	}}}}, expected{clusters: []string{"auth/d"}, clas: []string{"auth/d"}, statuses: []string{"auth/d"}}, nn("auth", "d"))
	// Delegations in auth concern nobody: c's CA Secret is its own.
	h.check(session.Batch{Upserts: source.Objects{TLSCertificateDelegations: []source.TLSCertificateDelegation{{
		Meta: source.Meta{Namespace: "auth", Name: "delegate"},
	}}}}, expected{})
}

// Every ExtensionService checks the client certificate Secret.
func TestApplyClientCertificateChanged(t *testing.T) {
	client := source.Secret{Meta: source.Meta{Namespace: "auth", Name: "client"}, Type: "kubernetes.io/tls", TLSCrt: genLeaf}
	h := loaded(t, source.Settings{ClientCertificate: &source.NamespacedName{Namespace: "auth", Name: "client"}},
		source.Objects{Secrets: []source.Secret{client}})
	all := []string{"auth/a", "auth/b", "auth/c", "auth/d"}
	h.check(session.Batch{Deletes: []session.Ref{{Kind: session.KindSecret, Name: nn("auth", "client")}}},
		expected{removedClusters: all, removedCLAs: all, statuses: all}, allFour...)
	h.check(session.Batch{Upserts: source.Objects{Secrets: []source.Secret{client}}},
		expected{clusters: all, clas: all, statuses: all}, allFour...)
}

// Deleting what the session never held, or upserting what it already
// holds, changes nothing.
func TestApplyNoOps(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Deletes: []session.Ref{
		{Kind: session.KindExtensionService, Name: nn("auth", "never")},
		{Kind: session.KindService, Name: nn("auth", "never")},
		{Kind: session.KindEndpointSlice, Name: nn("auth", "never")},
		{Kind: session.KindSecret, Name: nn("auth", "never")},
		{Kind: session.KindTLSCertificateDelegation, Name: nn("other", "never")},
	}}, expected{})
	h.check(session.Batch{}, expected{})
	h.check(session.Batch{Upserts: baseObjects()}, expected{}, allFour...)
}

// An ExtensionService waiting for a Service that does not exist yet is
// rebuilt when it appears.
func TestApplyMissingServiceCreated(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Upserts: source.Objects{ExtensionServices: []source.ExtensionService{extensionService("auth", "e", "s3")}}},
		expected{statuses: []string{"auth/e"}}, nn("auth", "e"))
	// Deleting the Service it waits for, never held, rebuilds nothing.
	h.check(session.Batch{Deletes: []session.Ref{{Kind: session.KindService, Name: nn("auth", "s3")}}}, expected{})
	h.check(session.Batch{Upserts: source.Objects{
		Services:       []source.Service{service("auth", "s3")},
		EndpointSlices: []source.EndpointSlice{endpointSlice("auth", "s3-a", "s3", "10.0.0.7")},
	}}, expected{clusters: []string{"auth/e"}, clas: []string{"auth/e"}, statuses: []string{"auth/e"}}, nn("auth", "e"))
}

// Apply keeps no pointer into the batch's slices of objects: the session
// is unaffected when the caller reuses the slice's memory for other
// objects (though not the objects' own contents, which it hands over).
func TestApplyCopiesTopLevelObjects(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	batchSlices := []source.EndpointSlice{endpointSlice("auth", "s1-a", "s1", "10.0.0.1", "10.0.0.3")}
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: batchSlices}},
		expected{clas: []string{"auth/a", "auth/c"}}, nn("auth", "a"), nn("auth", "c"))
	batchSlices[0] = endpointSlice("auth", "s2-a", "s2", "10.9.9.9")
	h.checkState(translate.Translate(h.objects.objects(), h.settings))
}
