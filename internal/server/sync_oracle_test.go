package server

import (
	"cmp"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// objectKey identifies an object the way a session does.
type objectKey struct {
	kind      tributaryv1.ObjectKind
	namespace string
	name      string
}

func keyOf(o *tributaryv1.KubernetesObject) objectKey {
	r := client.Reference(o)
	return objectKey{r.GetKind(), r.GetNamespace(), r.GetName()}
}

// world is what a session should hold: the objects of every batch
// accepted so far. Its Translate is the oracle for the session's output.
type world struct {
	settings *tributaryv1.Settings
	objects  map[objectKey]*tributaryv1.KubernetesObject
}

func newWorld(settings *tributaryv1.Settings) *world {
	return &world{settings: settings, objects: map[objectKey]*tributaryv1.KubernetesObject{}}
}

func (w *world) apply(b *tributaryv1.SyncBatch) {
	for _, o := range b.GetUpserts() {
		w.objects[keyOf(o)] = o
	}
	for _, d := range b.GetDeletes() {
		delete(w.objects, objectKey{d.GetKind(), d.GetNamespace(), d.GetName()})
	}
}

// translate is the Translate response for the world's objects.
func (w *world) translate(t testing.TB) *tributaryv1.TranslateResponse {
	t.Helper()
	keys := slices.SortedFunc(func(yield func(objectKey) bool) {
		for k := range w.objects {
			if !yield(k) {
				return
			}
		}
	}, func(a, b objectKey) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
	})
	req := &tributaryv1.TranslateRequest{Settings: w.settings}
	for _, k := range keys {
		req.Objects = append(req.Objects, w.objects[k])
	}
	resp, err := NewTranslationService().Translate(t.Context(), req)
	if err != nil {
		t.Fatalf("Translate of the world: %v", err)
	}
	return resp
}

// view is a client's copy of a session's output, built from deltas alone.
type view struct {
	clusters, clas map[string]*tributaryv1.Resource
	statuses       map[[2]string]*tributaryv1.ExtensionServiceStatus
}

func newView() *view {
	return &view{
		clusters: map[string]*tributaryv1.Resource{},
		clas:     map[string]*tributaryv1.Resource{},
		statuses: map[[2]string]*tributaryv1.ExtensionServiceStatus{},
	}
}

func (v *view) apply(d *tributaryv1.SyncDelta) {
	for _, r := range d.GetClusters() {
		v.clusters[r.GetName()] = r
	}
	for _, r := range d.GetClusterLoadAssignments() {
		v.clas[r.GetName()] = r
	}
	for _, name := range d.GetRemovedClusters() {
		delete(v.clusters, name)
	}
	for _, name := range d.GetRemovedClusterLoadAssignments() {
		delete(v.clas, name)
	}
	for _, st := range d.GetStatuses() {
		v.statuses[[2]string{st.GetNamespace(), st.GetName()}] = st
	}
	for _, ref := range d.GetRemovedStatuses() {
		delete(v.statuses, [2]string{ref.GetNamespace(), ref.GetName()})
	}
}

// response lists the view like a TranslateResponse (compare it with
// sortedLists: the order of the lists is not the view's concern).
func (v *view) response() *tributaryv1.TranslateResponse {
	resp := &tributaryv1.TranslateResponse{}
	for _, r := range v.clusters {
		resp.Clusters = append(resp.Clusters, r)
	}
	for _, r := range v.clas {
		resp.ClusterLoadAssignments = append(resp.ClusterLoadAssignments, r)
	}
	for _, st := range v.statuses {
		resp.Statuses = append(resp.Statuses, st)
	}
	return resp
}

// sortedLists compares repeated resources and statuses whatever their order.
var sortedLists = gocmp.Options{
	protocmp.Transform(),
	protocmp.SortRepeated(func(a, b *tributaryv1.Resource) bool { return a.GetName() < b.GetName() }),
	protocmp.SortRepeated(func(a, b *tributaryv1.ExtensionServiceStatus) bool {
		return a.GetNamespace()+"/"+a.GetName() < b.GetNamespace()+"/"+b.GetName()
	}),
}

// ignoreVersion leaves the session version out of a delta comparison; the
// tests check it on its own.
var ignoreVersion = protocmp.IgnoreFields(&tributaryv1.SyncDelta{}, "version")

// syncSession is a Sync stream with what the test expects of it.
type syncSession struct {
	*syncClient
	world *world
	view  *view
	// version is the session version the client has; versions holds every
	// version seen, by every stream of the test.
	version  string
	versions map[string]bool
}

func newSyncSession(c *syncClient, settings *tributaryv1.Settings, versions map[string]bool) *syncSession {
	return &syncSession{syncClient: c, world: newWorld(settings), view: newView(), versions: versions}
}

// step sends b, expects exactly the delta want gives for the world after b
// (the version aside), and checks that the deltas so far add up to what
// Translate gives for the world.
func (s *syncSession) step(b *tributaryv1.SyncBatch, want func(oracle *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta) *tributaryv1.SyncDelta {
	s.t.Helper()
	s.send(b)
	s.world.apply(b)
	return s.expect(want(s.world.translate(s.t)))
}

// expect receives a delta, compares it with want and checks the state.
func (s *syncSession) expect(want *tributaryv1.SyncDelta) *tributaryv1.SyncDelta {
	s.t.Helper()
	got := s.delta()
	if diff := gocmp.Diff(want, got, sortedLists, ignoreVersion); diff != "" {
		s.t.Errorf("batch %d: delta (-want +got):\n%s", want.GetBatchId(), diff)
	}
	changed := got.GetFullState() || len(got.GetClusters())+len(got.GetClusterLoadAssignments())+len(got.GetRemovedClusters())+
		len(got.GetRemovedClusterLoadAssignments())+len(got.GetStatuses())+len(got.GetRemovedStatuses()) > 0
	switch {
	case changed && s.versions[got.GetVersion()]:
		s.t.Errorf("batch %d: version %q was seen before", got.GetBatchId(), got.GetVersion())
	case changed && got.GetVersion() == "":
		s.t.Errorf("batch %d: no version", got.GetBatchId())
	case !changed && got.GetVersion() != s.version:
		s.t.Errorf("batch %d: an empty acknowledgement has version %q, want the unchanged %q", got.GetBatchId(), got.GetVersion(), s.version)
	}
	s.version = got.GetVersion()
	s.versions[got.GetVersion()] = true
	s.view.apply(got)
	if diff := gocmp.Diff(s.world.translate(s.t), s.view.response(), sortedLists); diff != "" {
		s.t.Errorf("after batch %d, the deltas add up to (-Translate +deltas):\n%s", got.GetBatchId(), diff)
	}
	return got
}
