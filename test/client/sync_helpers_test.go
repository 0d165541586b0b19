package client_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/source"
)

// recorder keeps every Update a session delivers.
type recorder struct {
	mu      sync.Mutex
	updates []client.Update
	arrived chan struct{}
}

func newRecorder() *recorder { return &recorder{arrived: make(chan struct{}, 1000)} }

func (r *recorder) handle(u client.Update) {
	r.mu.Lock()
	r.updates = append(r.updates, u)
	r.mu.Unlock()
	r.arrived <- struct{}{}
}

// take returns the updates delivered since the last take.
func (r *recorder) take() []client.Update {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.updates
	r.updates = nil
	for range len(out) {
		<-r.arrived
	}
	return out
}

// await waits for the next update, for tests whose server speaks
// unprompted.
func (r *recorder) await(t *testing.T) client.Update {
	t.Helper()
	select {
	case <-r.arrived:
	case <-time.After(30 * time.Second):
		t.Fatal("no update within 30s")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.updates[0]
	r.updates = r.updates[1:]
	return u
}

// replay applies updates in order to an empty view, as a cache would.
func replay(updates []client.Update) client.View {
	v := emptyView()
	for _, u := range updates {
		v.Version = u.Version
		for _, c := range u.Clusters {
			v.Clusters[c.GetName()], v.ClusterVersions[c.GetName()] = c, u.ClusterVersions[c.GetName()]
		}
		for _, cla := range u.ClusterLoadAssignments {
			v.ClusterLoadAssignments[cla.GetClusterName()], v.ClusterLoadAssignmentVersions[cla.GetClusterName()] = cla, u.ClusterLoadAssignmentVersions[cla.GetClusterName()]
		}
		for _, name := range u.RemovedClusters {
			delete(v.Clusters, name)
			delete(v.ClusterVersions, name)
		}
		for _, name := range u.RemovedClusterLoadAssignments {
			delete(v.ClusterLoadAssignments, name)
			delete(v.ClusterLoadAssignmentVersions, name)
		}
		for _, st := range u.Statuses {
			v.Statuses[client.NamespacedName{Namespace: st.GetNamespace(), Name: st.GetName()}] = st
		}
		for _, n := range u.RemovedStatuses {
			delete(v.Statuses, n)
		}
	}
	return v
}

func emptyView() client.View {
	return client.View{
		Clusters:                      map[string]*clusterv3.Cluster{},
		ClusterLoadAssignments:        map[string]*endpointv3.ClusterLoadAssignment{},
		ClusterVersions:               map[string]string{},
		ClusterLoadAssignmentVersions: map[string]string{},
		Statuses:                      map[client.NamespacedName]*tributaryv1.ExtensionServiceStatus{},
	}
}

// translated is what Translate gives for objs, as a View: the output a
// session holding objs must converge to.
func translated(t *testing.T, c *client.Client, settings *tributaryv1.Settings, objs []*tributaryv1.KubernetesObject) client.View {
	t.Helper()
	tr, err := c.Translate(t.Context(), &tributaryv1.TranslateRequest{Settings: settings, Objects: objs})
	if err != nil {
		t.Fatalf("Translate: %v", err)
	}
	v := emptyView()
	for _, cl := range tr.Clusters {
		v.Clusters[cl.GetName()], v.ClusterVersions[cl.GetName()] = cl, tr.ClusterVersions[cl.GetName()]
	}
	for _, cla := range tr.ClusterLoadAssignments {
		v.ClusterLoadAssignments[cla.GetClusterName()], v.ClusterLoadAssignmentVersions[cla.GetClusterName()] = cla, tr.ClusterLoadAssignmentVersions[cla.GetClusterName()]
	}
	for _, st := range tr.Statuses {
		v.Statuses[client.NamespacedName{Namespace: st.GetNamespace(), Name: st.GetName()}] = st
	}
	return v
}

func diffViews(t *testing.T, what string, want, got client.View) {
	t.Helper()
	if d := cmp.Diff(want, got, protocmp.Transform(), ignoreVersion, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("%s (-want +got):\n%s", what, d)
	}
}

// validate checks every resource against Envoy's validation rules.
func validate(t *testing.T, v client.View) {
	t.Helper()
	for name, c := range v.Clusters {
		if err := c.ValidateAll(); err != nil {
			t.Errorf("Cluster %s: %v", name, err)
		}
	}
	for name, cla := range v.ClusterLoadAssignments {
		if err := cla.ValidateAll(); err != nil {
			t.Errorf("ClusterLoadAssignment %s: %v", name, err)
		}
	}
}

// updateShape is what an Update changed, by name, for exact comparisons
// that don't restate whole resources.
type updateShape struct {
	FullState                                      bool
	Clusters, ClusterLoadAssignments               []string
	RemovedClusters, RemovedClusterLoadAssignments []string
	Statuses                                       []string
	RemovedStatuses                                []string
}

func shapes(updates []client.Update) []updateShape {
	var out []updateShape
	for _, u := range updates {
		s := updateShape{FullState: u.FullState, RemovedClusters: u.RemovedClusters, RemovedClusterLoadAssignments: u.RemovedClusterLoadAssignments}
		for _, c := range u.Clusters {
			s.Clusters = append(s.Clusters, c.GetName())
		}
		for _, cla := range u.ClusterLoadAssignments {
			s.ClusterLoadAssignments = append(s.ClusterLoadAssignments, cla.GetClusterName())
		}
		for _, st := range u.Statuses {
			s.Statuses = append(s.Statuses, st.GetNamespace()+"/"+st.GetName()+":"+st.GetConditions()[0].GetStatus())
		}
		for _, n := range u.RemovedStatuses {
			s.RemovedStatuses = append(s.RemovedStatuses, n.Namespace+"/"+n.Name)
		}
		out = append(out, s)
	}
	return out
}

func diffShapes(t *testing.T, step string, want []updateShape, got []client.Update) {
	t.Helper()
	if d := cmp.Diff(want, shapes(got), cmpopts.EquateEmpty()); d != "" {
		t.Errorf("%s: updates (-want +got):\n%s", step, d)
	}
}

func meta(name string) *tributaryv1.ObjectMeta {
	return &tributaryv1.ObjectMeta{Namespace: "ns", Name: name}
}

func extension(name string, targets ...*tributaryv1.ExtensionServiceTarget) *tributaryv1.KubernetesObject {
	return object(&tributaryv1.ExtensionService{
		Metadata: meta(name),
		Spec:     &tributaryv1.ExtensionServiceSpec{Services: targets, Protocol: proto.String("h2c")},
	})
}

func target(svc string, weight uint32) *tributaryv1.ExtensionServiceTarget {
	return &tributaryv1.ExtensionServiceTarget{Name: svc, Port: 80, Weight: weight}
}

func service(name string) *tributaryv1.KubernetesObject {
	return object(&tributaryv1.Service{
		Metadata: meta(name),
		Spec:     &tributaryv1.ServiceSpec{Type: "ClusterIP", Ports: []*tributaryv1.ServicePort{{Port: 80, TargetPort: "8080", Protocol: "TCP"}}},
	})
}

func slice(name, svc string, addrs ...string) *tributaryv1.KubernetesObject {
	s := &tributaryv1.EndpointSlice{
		Metadata:    &tributaryv1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{source.ServiceNameLabel: svc}},
		AddressType: "IPv4",
		Ports:       []*tributaryv1.EndpointPort{{Port: proto.Int32(8080), Protocol: proto.String("TCP")}},
	}
	for _, a := range addrs {
		s.Endpoints = append(s.Endpoints, &tributaryv1.Endpoint{Addresses: []string{a}})
	}
	return object(s)
}

// desiredSet mirrors what a test upserted and deleted, to ask Translate
// for the output the session must reach.
type desiredSet map[string]*tributaryv1.KubernetesObject

func (d desiredSet) upsert(s *client.SyncSession, objs ...*tributaryv1.KubernetesObject) {
	for _, o := range objs {
		r := client.Reference(o)
		d[r.GetKind().String()+"/"+r.GetNamespace()+"/"+r.GetName()] = o
	}
	s.Upsert(objs...)
}

func (d desiredSet) delete(s *client.SyncSession, objs ...*tributaryv1.KubernetesObject) {
	for _, o := range objs {
		r := client.Reference(o)
		delete(d, r.GetKind().String()+"/"+r.GetNamespace()+"/"+r.GetName())
		s.Delete(r)
	}
}

func (d desiredSet) objects() []*tributaryv1.KubernetesObject {
	var out []*tributaryv1.KubernetesObject
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range d {
			if !yield(k) {
				return
			}
		}
	}) {
		out = append(out, d[k])
	}
	return out
}

func flush(t *testing.T, s *client.SyncSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}
