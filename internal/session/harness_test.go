package session_test

import (
	"context"
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
	slice.Service = service
	var eps source.EndpointsBuilder
	for _, a := range addresses {
		eps.Add(a, false)
	}
	slice.Endpoints = eps.Endpoints()
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

// apply applies b and returns the Changes, the ExtensionServices rebuilt
// (nil for none) and a Translate of the objects after b.
func (h *harness) apply(b session.Batch) (translate.Changes, []source.NamespacedName, *translate.Result) {
	h.t.Helper()
	h.rebuilt = nil
	h.objects.apply(&b)
	d := mustApply(h.t, h.session, &b)
	return d, h.rebuilt, translate.Translate(h.objects.objects(), h.settings)
}

// expected names the entries a Changes should hold; their contents come from
// a Translate.
type expected struct {
	clusters, clas, statuses                      []string // "namespace/name" of ExtensionServices
	removedClusters, removedCLAs, removedStatuses []string
}

func (e expected) delta(t *testing.T, r *translate.Result) translate.Changes {
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
	var d translate.Changes
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
		h.t.Errorf("Changes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantRebuilt, rebuilt, cmpopts.EquateEmpty()); diff != "" {
		h.t.Errorf("rebuilt ExtensionServices (-want +got):\n%s", diff)
	}
	h.checkState(result)
}

// checkState asserts that State is full Changes of Translate's output.
func (h *harness) checkState(r *translate.Result) {
	h.t.Helper()
	// Translate lists resources in namespace/name order, a Changes in name order.
	byName := func(a, b translate.Resource) int { return strings.Compare(a.Name, b.Name) }
	want := translate.Changes{
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

// defaultLimits bound the output as the server does by default (its
// 64 MiB send limit), so that tests and benchmarks take the path the
// server takes.
var defaultLimits = translate.Limits{MaxOutputBytes: 64 << 20}

// mustApply applies b to s under defaultLimits, which no test batch comes
// near, and fails tb if that fails.
func mustApply(tb testing.TB, s *session.Session, b *session.Batch) translate.Changes {
	tb.Helper()
	d, err := s.Apply(context.Background(), b, defaultLimits)
	if err != nil {
		tb.Fatalf("Apply: %v", err)
	}
	return d
}
