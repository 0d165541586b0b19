package session_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
)

// An endpoint added to a Service changes the CLAs of its readers, and
// their statuses: the availability counts one more ready endpoint.
func TestApplyEndpointAdded(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	d, _, _ := h.apply(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{
		endpointSlice("auth", "s1-a", "s1", "10.0.0.1", "10.0.0.3"),
	}}})
	want := []model.TargetAvailability{{Service: "s1", Port: 9000, ReadyEndpoints: 2, Weight: 1}}
	var names []string
	for _, st := range d.Statuses {
		names = append(names, st.Namespace+"/"+st.Name)
	}
	if diff := cmp.Diff([]string{"auth/a", "auth/c"}, names); diff != "" {
		t.Fatalf("statuses (-want +got):\n%s", diff)
	}
	for _, st := range d.Statuses {
		if diff := cmp.Diff(want, st.Availability); diff != "" {
			t.Errorf("availability of %s/%s (-want +got):\n%s", st.Namespace, st.Name, diff)
		}
	}
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{
		endpointSlice("auth", "s1-a", "s1", "10.0.0.1", "10.0.0.3", "10.0.0.4"),
	}}}, expected{clas: []string{"auth/a", "auth/c"}, statuses: []string{"auth/a", "auth/c"}}, nn("auth", "a"), nn("auth", "c"))
}

// An endpoint whose address moves, with as many ready, changes the CLAs
// alone: the statuses, availability included, are what they were.
func TestApplyEndpointMovedKeepsStatus(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{
		endpointSlice("auth", "s1-a", "s1", "10.0.0.9"),
	}}}, expected{clas: []string{"auth/a", "auth/c"}}, nn("auth", "a"), nn("auth", "c"))
	// A ready endpoint replaced by one not ready: the count falls to 0.
	notReady := endpointSlice("auth", "s1-a", "s1", "10.0.0.9")
	notReady.Endpoints = source.MakeEndpoints(source.Endpoint{Address: "10.0.0.9", NotReady: true})
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{notReady}}},
		expected{clas: []string{"auth/a", "auth/c"}, statuses: []string{"auth/a", "auth/c"}}, nn("auth", "a"), nn("auth", "c"))
}

func TestApplyEndpointSliceAddedAndDeleted(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	// Each changes the ready endpoints of s2: the statuses change too.
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{
		endpointSlice("auth", "s2-b", "s2", "10.0.0.9"),
	}}}, expected{clas: []string{"auth/b", "auth/d"}, statuses: []string{"auth/b", "auth/d"}}, nn("auth", "b"), nn("auth", "d"))
	h.check(session.Batch{Deletes: []session.Ref{{Kind: source.KindEndpointSlice, Name: nn("auth", "s2-b")}}},
		expected{clas: []string{"auth/b", "auth/d"}, statuses: []string{"auth/b", "auth/d"}}, nn("auth", "b"), nn("auth", "d"))
}

// A slice relabelled from s1 to s2 leaves the readers of s1 and joins the
// readers of s2: all of them change, statuses too (s1 has no ready
// endpoint left, s2 one more).
func TestApplyEndpointSliceRelabelled(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	all := []string{"auth/a", "auth/b", "auth/c", "auth/d"}
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{
		endpointSlice("auth", "s1-a", "s2", "10.0.0.1"),
	}}}, expected{clas: all, statuses: all}, allFour...)
	// Unlabelled, it belongs to no Service any more.
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{
		endpointSlice("auth", "s1-a", "", "10.0.0.1"),
	}}}, expected{clas: []string{"auth/b", "auth/d"}, statuses: []string{"auth/b", "auth/d"}}, nn("auth", "b"), nn("auth", "d"))
	// An unlabelled slice concerns nobody.
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{
		endpointSlice("auth", "s1-a", "", "10.0.0.1", "10.0.0.4"),
	}}}, expected{})
	h.check(session.Batch{Deletes: []session.Ref{{Kind: source.KindEndpointSlice, Name: nn("auth", "s1-a")}}}, expected{})
}

// An ExtensionService whose spec moves from s1 to s2 stops depending on s1
// and starts depending on s2. Its status changes: its availability names
// s2. Endpoints that move afterwards change CLAs alone.
func TestApplyExtensionServiceRetargeted(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Upserts: source.Objects{ExtensionServices: []source.ExtensionService{
		extensionService("auth", "a", "s2"),
	}}}, expected{clas: []string{"auth/a"}, statuses: []string{"auth/a"}}, nn("auth", "a"))
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
	h.check(session.Batch{Deletes: []session.Ref{{Kind: source.KindExtensionService, Name: nn("auth", "a")}}},
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
	h.check(session.Batch{Deletes: []session.Ref{{Kind: source.KindService, Name: nn("auth", "s2")}}},
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
		{Kind: source.KindExtensionService, Name: nn("a", "y")},
		{Kind: source.KindExtensionService, Name: nn("a-b", "x")},
	}}, expected{
		removedClusters: []string{"a-b/x", "a/y"}, removedCLAs: []string{"a-b/x", "a/y"}, removedStatuses: []string{"a/y", "a-b/x"},
	}, nn("a", "y"), nn("a-b", "x"))
}

// Deleting what the session never held, or upserting what it already
// holds, changes nothing.
func TestApplyNoOps(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Deletes: []session.Ref{
		{Kind: source.KindExtensionService, Name: nn("auth", "never")},
		{Kind: source.KindService, Name: nn("auth", "never")},
		{Kind: source.KindEndpointSlice, Name: nn("auth", "never")},
		{Kind: source.KindSecret, Name: nn("auth", "never")},
		{Kind: source.KindTLSCertificateDelegation, Name: nn("other", "never")},
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
	h.check(session.Batch{Deletes: []session.Ref{{Kind: source.KindService, Name: nn("auth", "s3")}}}, expected{})
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
		expected{clas: []string{"auth/a", "auth/c"}, statuses: []string{"auth/a", "auth/c"}}, nn("auth", "a"), nn("auth", "c"))
	batchSlices[0] = endpointSlice("auth", "s2-a", "s2", "10.9.9.9")
	h.checkState(translate.Translate(h.objects.objects(), h.settings))
}
