package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/server"
	"github.com/tributary-dev/tributary/internal/source"
)

// switchboard serves one gRPC server at a time over in-memory listeners;
// its connection always dials the current one, so a test can stop a server
// mid-session and put another in its place, as a rolling restart does.
type switchboard struct {
	t    *testing.T
	mu   sync.Mutex
	lis  *bufconn.Listener
	stop func()
}

func newSwitchboard(t *testing.T) *switchboard {
	sb := &switchboard{t: t}
	t.Cleanup(sb.stopServer)
	return sb
}

// serve stops the current server, if any, and serves s on a new listener.
func (sb *switchboard) serve(s *grpc.Server) {
	sb.stopServer()
	lis := bufconn.Listen(1 << 20)
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	sb.mu.Lock()
	sb.lis = lis
	sb.stop = func() {
		s.Stop()
		if err := <-done; err != nil {
			sb.t.Errorf("Serve: %v", err)
		}
	}
	sb.mu.Unlock()
}

// serveReal serves a new real TranslationService.
func (sb *switchboard) serveReal() {
	sb.serve(server.NewGRPCServer(server.Options{Logger: quietLogger()}))
}

func (sb *switchboard) stopServer() {
	sb.mu.Lock()
	stop := sb.stop
	sb.stop = nil
	sb.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// conn returns a connection that reconnects quickly: gRPC's default
// reconnect backoff starts at a second.
func (sb *switchboard) conn() *grpc.ClientConn {
	conn, err := grpc.NewClient("passthrough:///switchboard",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			sb.mu.Lock()
			lis := sb.lis
			sb.mu.Unlock()
			return lis.DialContext(ctx)
		}),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 5 * time.Millisecond, Multiplier: 2, MaxDelay: 50 * time.Millisecond},
			MinConnectTimeout: 5 * time.Second,
		}),
	)
	if err != nil {
		sb.t.Fatalf("NewClient: %v", err)
	}
	sb.t.Cleanup(func() { conn.Close() })
	return conn
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

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

var ignoreVersion = cmpopts.IgnoreFields(client.View{}, "Version")

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

// TestSyncFollowsChanges: each Flush delivers exactly what its batch
// changed, typed and valid, and the session's view is at every step what
// Translate gives for the same objects.
func TestSyncFollowsChanges(t *testing.T) {
	sb := newSwitchboard(t)
	sb.serveReal()
	c := client.New(sb.conn())
	rec := newRecorder()
	s := c.Sync(t.Context(), nil, client.WithUpdateHandler(rec.handle), client.WithLogger(quietLogger()))
	defer s.Close()
	var all []client.Update
	d := desiredSet{}
	check := func(step string, want []updateShape) {
		t.Helper()
		got := rec.take()
		all = append(all, got...)
		diffShapes(t, step, want, got)
		v := s.View()
		diffViews(t, step+": view vs Translate", translated(t, c, nil, d.objects()), v)
		diffViews(t, step+": replayed updates vs view", v, replay(all))
		validate(t, v)
	}

	d.upsert(s, extension("authz", target("v1", 80), target("v2", 20)),
		service("v1"), service("v2"), slice("v1-a", "v1", "10.0.0.1", "10.0.0.2"), slice("v2-a", "v2", "10.0.1.1"),
		extension("broken"))
	flush(t, s)
	check("initial", []updateShape{{
		FullState:              true,
		Clusters:               []string{"extension/ns/authz"},
		ClusterLoadAssignments: []string{"extension/ns/authz"},
		Statuses:               []string{"ns/authz:True", "ns/broken:False"},
	}})

	d.upsert(s, slice("v2-a", "v2", "10.0.1.1", "10.0.1.2"))
	flush(t, s)
	check("endpoints scale up", []updateShape{{ClusterLoadAssignments: []string{"extension/ns/authz"}}})

	// An equal object changes nothing, so nothing is sent or delivered.
	d.upsert(s, slice("v2-a", "v2", "10.0.1.1", "10.0.1.2"), service("v1"))
	flush(t, s)
	check("unchanged upsert", nil)

	d.upsert(s, extension("broken", target("v1", 1)))
	flush(t, s)
	check("broken fixed", []updateShape{{
		Clusters:               []string{"extension/ns/broken"},
		ClusterLoadAssignments: []string{"extension/ns/broken"},
		Statuses:               []string{"ns/broken:True"},
	}})

	d.delete(s, extension("authz"), slice("v1-a", "v1"))
	flush(t, s)
	check("delete", []updateShape{{
		ClusterLoadAssignments:        []string{"extension/ns/broken"},
		RemovedClusters:               []string{"extension/ns/authz"},
		RemovedClusterLoadAssignments: []string{"extension/ns/authz"},
		RemovedStatuses:               []string{"ns/authz"},
	}})
}

// TestSyncRejected: a malformed batch fails its Flush with a
// *BatchRejectedError naming the batch and the field, changes nothing, and
// is dropped from the desired set, so the session goes on and never sends
// it again.
func TestSyncRejected(t *testing.T) {
	sb := newSwitchboard(t)
	sb.serveReal()
	c := client.New(sb.conn())
	rec := newRecorder()
	s := c.Sync(t.Context(), nil, client.WithUpdateHandler(rec.handle), client.WithLogger(quietLogger()))
	defer s.Close()
	d := desiredSet{}
	d.upsert(s, extension("authz", target("v1", 1)), service("v1"), slice("v1-a", "v1", "10.0.0.1"))
	flush(t, s)
	rec.take()
	before := s.View()

	s.Upsert(slice("v1-a", "v1", "10.0.0.1", "10.0.0.2"), object(&tributaryv1.Service{Metadata: meta("")}))
	err := s.Flush(t.Context())
	var rejected *client.BatchRejectedError
	if !errors.As(err, &rejected) {
		t.Fatalf("Flush: got %v, want a *BatchRejectedError", err)
	}
	// Batches list objects by kind, then name: the Service comes first.
	wantErr := &client.BatchRejectedError{
		BatchID: 2,
		Message: "batch.upserts[0] (Service): metadata.name is required",
		Violations: []*tributaryv1.FieldViolation{{
			Field: "batch.upserts[0].service.metadata.name", Reason: "REQUIRED",
			Description: "batch.upserts[0] (Service): metadata.name is required",
		}},
	}
	if d := cmp.Diff(wantErr, rejected, protocmp.Transform()); d != "" {
		t.Errorf("rejection (-want +got):\n%s", d)
	}
	if want := "tributary: batch 2 rejected: batch.upserts[0] (Service): metadata.name is required"; err.Error() != want {
		t.Errorf("error text %q, want %q", err.Error(), want)
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("a rejected batch delivered %d updates", len(got))
	}
	diffViews(t, "view after rejection", before, s.View())

	// The refused changes are gone: nothing is left to send...
	if err := s.Flush(t.Context()); err != nil {
		t.Fatalf("Flush with nothing to send: %v", err)
	}
	// ...and the refused object is not remembered as sent: upserting it
	// again sends it again, and it is refused again.
	s.Upsert(object(&tributaryv1.Service{Metadata: meta("")}))
	if err := s.Flush(t.Context()); !errors.As(err, &rejected) || rejected.BatchID != 3 {
		t.Fatalf("Flush of the same malformed Service: got %v, want batch 3 rejected", err)
	}
	// The next valid batch is accepted (it would be refused again if the
	// nameless Service were still desired).
	d.upsert(s, slice("v1-a", "v1", "10.0.0.3"))
	flush(t, s)
	diffShapes(t, "after rejection", []updateShape{{ClusterLoadAssignments: []string{"extension/ns/authz"}}}, rec.take())
	diffViews(t, "view", translated(t, c, nil, d.objects()), s.View())
}

// TestSyncBadSettings: settings the server refuses end the session; Flush
// and Err report the server's InvalidArgument.
func TestSyncBadSettings(t *testing.T) {
	sb := newSwitchboard(t)
	sb.serveReal()
	s := client.New(sb.conn()).Sync(t.Context(), &tributaryv1.Settings{ConnectTimeout: "soon"}, client.WithLogger(quietLogger()))
	defer s.Close()
	s.Upsert(service("v1"))
	err := s.Flush(t.Context())
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Flush: got %v, want InvalidArgument", err)
	}
	<-s.Done()
	if !errors.Is(s.Err(), err) {
		t.Errorf("Err() = %v, want %v", s.Err(), err)
	}
	if err := s.Flush(t.Context()); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Flush after the end: got %v, want InvalidArgument", err)
	}
}

// TestSyncReconnect: when the server goes away mid-session and another
// takes its place, the session reopens the stream by itself, restores the
// acknowledged objects, and delivers the changes made during the outage;
// nothing it had already delivered is delivered again.
func TestSyncReconnect(t *testing.T) {
	sb := newSwitchboard(t)
	sb.serveReal()
	c := client.New(sb.conn())
	rec := newRecorder()
	s := c.Sync(t.Context(), nil, client.WithUpdateHandler(rec.handle), client.WithLogger(quietLogger()),
		client.WithBackoff(time.Millisecond, 20*time.Millisecond))
	defer s.Close()
	d := desiredSet{}
	d.upsert(s, extension("authz", target("v1", 80), target("v2", 20)), extension("other", target("v1", 1)),
		service("v1"), service("v2"), slice("v1-a", "v1", "10.0.0.1"), slice("v2-a", "v2", "10.0.1.1"))
	flush(t, s)
	all := rec.take()

	sb.stopServer()
	// Changes made while no server runs wait for the next one.
	d.upsert(s, slice("v2-a", "v2", "10.0.1.1", "10.0.1.2"))
	d.delete(s, extension("other"))
	flushed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		flushed <- s.Flush(ctx)
	}()
	sb.serveReal()
	if err := <-flushed; err != nil {
		t.Fatalf("Flush across the restart: %v", err)
	}

	got := rec.take()
	all = append(all, got...)
	// The new server's full state equals what the session had, so it
	// delivers nothing; only the changes made during the outage follow.
	diffShapes(t, "after the restart", []updateShape{{
		ClusterLoadAssignments:        []string{"extension/ns/authz"},
		RemovedClusters:               []string{"extension/ns/other"},
		RemovedClusterLoadAssignments: []string{"extension/ns/other"},
		RemovedStatuses:               []string{"ns/other"},
	}}, got)
	v := s.View()
	diffViews(t, "view vs the new server's Translate", translated(t, c, nil, d.objects()), v)
	diffViews(t, "replayed updates vs view", v, replay(all))
	validate(t, v)

	// The session keeps working on the new server.
	d.upsert(s, extension("authz", target("v1", 50), target("v2", 50)))
	flush(t, s)
	diffShapes(t, "weights changed", []updateShape{{Clusters: nil, ClusterLoadAssignments: []string{"extension/ns/authz"}}}, rec.take())
	diffViews(t, "view", translated(t, c, nil, d.objects()), s.View())
}

// scripted is a TranslationService whose Sync streams follow a script, to
// make a server misbehave or change its mind in ways the real one never
// does.
type scripted struct {
	tributaryv1.UnimplementedTranslationServiceServer
	mu      sync.Mutex
	streams int
	starts  []*tributaryv1.SyncStart
	batches [][]*tributaryv1.SyncBatch
	script  func(n int, recv func() *tributaryv1.SyncBatch, send func(*tributaryv1.SyncResponse)) error
}

func (f *scripted) Sync(st grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) error {
	f.mu.Lock()
	f.streams++
	n := f.streams
	f.batches = append(f.batches, nil)
	f.mu.Unlock()
	start, err := st.Recv()
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.starts = append(f.starts, start.GetStart())
	f.mu.Unlock()
	var streamErr error
	recv := func() *tributaryv1.SyncBatch {
		req, err := st.Recv()
		if err != nil {
			streamErr = err
			return nil
		}
		f.mu.Lock()
		f.batches[n-1] = append(f.batches[n-1], req.GetBatch())
		f.mu.Unlock()
		return req.GetBatch()
	}
	send := func(r *tributaryv1.SyncResponse) {
		if err := st.Send(r); err != nil {
			streamErr = err
		}
	}
	if err := f.script(n, recv, send); err != nil {
		return err
	}
	if streamErr != nil {
		return streamErr
	}
	<-st.Context().Done()
	return nil
}

func delta(d *tributaryv1.SyncDelta) *tributaryv1.SyncResponse {
	return &tributaryv1.SyncResponse{Message: &tributaryv1.SyncResponse_Delta{Delta: d}}
}

func resource(t *testing.T, m proto.Message, name, version string) *tributaryv1.Resource {
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return &tributaryv1.Resource{Name: name, Version: version, Resource: a}
}

// TestSyncFullStateReplacesView: after a reconnect the server's full state
// replaces the session's output, and what the new server no longer has is
// delivered as removals; a stream whose first answer is not a full state is
// dropped and reopened rather than mixed into the output.
func TestSyncFullStateReplacesView(t *testing.T) {
	cluster := func(name, version string) *tributaryv1.Resource {
		return resource(t, &clusterv3.Cluster{Name: name}, name, version)
	}
	cla := func(name, version string) *tributaryv1.Resource {
		return resource(t, &endpointv3.ClusterLoadAssignment{ClusterName: name}, name, version)
	}
	st := func(name string) *tributaryv1.ExtensionServiceStatus {
		return &tributaryv1.ExtensionServiceStatus{Namespace: "ns", Name: name, Conditions: []*tributaryv1.DetailedCondition{{Type: "Valid", Status: "True"}}}
	}
	breakFirst := make(chan struct{})
	fake := &scripted{script: func(n int, recv func() *tributaryv1.SyncBatch, send func(*tributaryv1.SyncResponse)) error {
		b := recv()
		if b == nil {
			return nil
		}
		switch n {
		case 1:
			send(delta(&tributaryv1.SyncDelta{BatchId: b.GetId(), FullState: true, Version: "1",
				Clusters:               []*tributaryv1.Resource{cluster("a", "ca1"), cluster("b", "cb1")},
				ClusterLoadAssignments: []*tributaryv1.Resource{cla("a", "la1"), cla("b", "lb1")},
				Statuses:               []*tributaryv1.ExtensionServiceStatus{st("a"), st("b")},
			}))
			select {
			case <-breakFirst:
			case <-t.Context().Done():
			}
			return status.Error(codes.Unavailable, "going away")
		case 2:
			// A delta that is not a full state cannot start a stream.
			send(delta(&tributaryv1.SyncDelta{BatchId: b.GetId(), Version: "2", RemovedClusters: []string{"a"}}))
		default:
			send(delta(&tributaryv1.SyncDelta{BatchId: b.GetId(), FullState: true, Version: "3",
				Clusters:               []*tributaryv1.Resource{cluster("a", "ca1")},
				ClusterLoadAssignments: []*tributaryv1.Resource{cla("a", "la2")},
				Statuses:               []*tributaryv1.ExtensionServiceStatus{st("a")},
			}))
		}
		return nil
	}}
	sb := newSwitchboard(t)
	gs := grpc.NewServer()
	tributaryv1.RegisterTranslationServiceServer(gs, fake)
	sb.serve(gs)
	rec := newRecorder()
	s := client.New(sb.conn()).Sync(t.Context(), nil, client.WithUpdateHandler(rec.handle), client.WithLogger(quietLogger()),
		client.WithBackoff(time.Millisecond, 10*time.Millisecond))
	defer s.Close()

	objs := []*tributaryv1.KubernetesObject{extension("a", target("v1", 1)), extension("b", target("v1", 1)), service("v1")}
	s.Upsert(objs...)
	flush(t, s)
	first := rec.take()
	diffShapes(t, "first stream", []updateShape{{FullState: true, Clusters: []string{"a", "b"}, ClusterLoadAssignments: []string{"a", "b"}, Statuses: []string{"ns/a:True", "ns/b:True"}}}, first)
	close(breakFirst)

	third := rec.await(t)
	diffShapes(t, "third stream", []updateShape{{FullState: true,
		ClusterLoadAssignments:        []string{"a"},
		RemovedClusters:               []string{"b"},
		RemovedClusterLoadAssignments: []string{"b"},
		RemovedStatuses:               []string{"ns/b"},
	}}, []client.Update{third})
	if third.Version != "3" || third.ClusterLoadAssignmentVersions["a"] != "la2" {
		t.Errorf("third update: version %q, CLA version %q; want 3 and la2", third.Version, third.ClusterLoadAssignmentVersions["a"])
	}
	v := s.View()
	if v.Version != "3" || !cmp.Equal(v.ClusterVersions, map[string]string{"a": "ca1"}) || !cmp.Equal(v.ClusterLoadAssignmentVersions, map[string]string{"a": "la2"}) || len(v.Statuses) != 1 {
		t.Errorf("view: version %q, clusters %v, CLAs %v, %d statuses; want 3, a:ca1, a:la2, 1", v.Version, v.ClusterVersions, v.ClusterLoadAssignmentVersions, len(v.Statuses))
	}
	diffViews(t, "replayed updates vs view", v, replay(append(first, third)))

	// Every stream got one batch with the complete acknowledged set: the
	// first as the client's changes, the others as resends.
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if fake.streams != 3 {
		t.Errorf("%d streams, want 3", fake.streams)
	}
	for i, bs := range fake.batches {
		if len(bs) != 1 {
			t.Errorf("stream %d got %d batches, want 1", i+1, len(bs))
			continue
		}
		want := &tributaryv1.SyncBatch{Id: uint64(i + 1), Upserts: []*tributaryv1.KubernetesObject{objs[0], objs[1], objs[2]}}
		if d := cmp.Diff(want, bs[0], protocmp.Transform()); d != "" {
			t.Errorf("stream %d batch (-want +got):\n%s", i+1, d)
		}
	}
}

// TestSyncResendRejected: a server that refuses the objects an earlier
// server accepted ends the session: retrying would be refused again. A
// Flush waiting for the restore returns the rejection.
func TestSyncResendRejected(t *testing.T) {
	breakFirst, gotResend, reject := make(chan struct{}), make(chan struct{}), make(chan struct{})
	wait := func(c chan struct{}) {
		select {
		case <-c:
		case <-t.Context().Done():
		}
	}
	fake := &scripted{script: func(n int, recv func() *tributaryv1.SyncBatch, send func(*tributaryv1.SyncResponse)) error {
		b := recv()
		if b == nil {
			return nil
		}
		if n == 1 {
			send(delta(&tributaryv1.SyncDelta{BatchId: b.GetId(), FullState: true, Version: "1"}))
			wait(breakFirst)
			return status.Error(codes.Unavailable, "going away")
		}
		close(gotResend)
		wait(reject)
		send(&tributaryv1.SyncResponse{Message: &tributaryv1.SyncResponse_Rejected{Rejected: &tributaryv1.BatchRejected{BatchId: b.GetId(), Message: "no"}}})
		return nil
	}}
	sb := newSwitchboard(t)
	gs := grpc.NewServer()
	tributaryv1.RegisterTranslationServiceServer(gs, fake)
	sb.serve(gs)
	s := client.New(sb.conn()).Sync(t.Context(), nil, client.WithLogger(quietLogger()), client.WithBackoff(time.Millisecond, 10*time.Millisecond))
	defer s.Close()
	s.Upsert(service("v1"))
	flush(t, s)

	close(breakFirst)
	wait(gotResend)
	// A change made while the resend is in flight waits for it, and ends
	// with the session (whether Flush starts before or after the end).
	s.Upsert(service("v2"))
	flushed := make(chan error, 1)
	go func() { flushed <- s.Flush(t.Context()) }()
	close(reject)
	var rejected *client.BatchRejectedError
	if err := <-flushed; !errors.As(err, &rejected) || rejected.BatchID != 2 {
		t.Errorf("Flush of a change made during the resend: got %v, want batch 2 rejected", err)
	}
	<-s.Done()
	if err := s.Err(); !errors.As(err, &rejected) || rejected.BatchID != 2 {
		t.Fatalf("Err() = %v, want batch 2 rejected", err)
	}
	if err := s.Flush(t.Context()); !errors.As(err, &rejected) {
		t.Errorf("Flush after the end: got %v, want the rejection", err)
	}
}

// TestSyncXDSPublishing: the xDS options reach the server in SyncStart, and
// an XdsNack answer goes to the handler without breaking the stream.
func TestSyncXDSPublishing(t *testing.T) {
	nack := &tributaryv1.XdsNack{NodeId: "envoy-1", NodeGroup: "projectcontour", TypeUrl: "type.googleapis.com/envoy.config.cluster.v3.Cluster",
		ResourceNames: []string{"extension/ns/a"}, ErrorDetail: "refused"}
	fake := &scripted{script: func(n int, recv func() *tributaryv1.SyncBatch, send func(*tributaryv1.SyncResponse)) error {
		b := recv()
		if b == nil {
			return nil
		}
		send(&tributaryv1.SyncResponse{Message: &tributaryv1.SyncResponse_XdsNack{XdsNack: nack}})
		send(delta(&tributaryv1.SyncDelta{BatchId: b.GetId(), FullState: true, Version: "1"}))
		return nil
	}}
	sb := newSwitchboard(t)
	gs := grpc.NewServer()
	tributaryv1.RegisterTranslationServiceServer(gs, fake)
	sb.serve(gs)
	var got []*tributaryv1.XdsNack
	var mu sync.Mutex
	s := client.New(sb.conn()).Sync(t.Context(), nil, client.WithLogger(quietLogger()),
		client.WithXDSPublishing("projectcontour", true),
		client.WithXDSNackHandler(func(n *tributaryv1.XdsNack) { mu.Lock(); got = append(got, n); mu.Unlock() }))
	defer s.Close()
	s.Upsert(service("v1"))
	flush(t, s)

	mu.Lock()
	defer mu.Unlock()
	if d := cmp.Diff([]*tributaryv1.XdsNack{nack}, got, protocmp.Transform()); d != "" {
		t.Errorf("NACKs delivered (-want +got):\n%s", d)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	want := []*tributaryv1.SyncStart{{XdsNodeGroup: "projectcontour", PublishListeners: true}}
	if d := cmp.Diff(want, fake.starts, protocmp.Transform()); d != "" {
		t.Errorf("SyncStart (-want +got):\n%s", d)
	}
}

// TestSyncOversizedBatchEndsSession: a batch over the server's message size
// limit would be refused on every retry, so it ends the session and Flush
// returns the error instead of waiting for a reconnect that cannot help.
func TestSyncOversizedBatchEndsSession(t *testing.T) {
	sb := newSwitchboard(t)
	sb.serve(server.NewGRPCServer(server.Options{Logger: quietLogger(), MaxRecvMsgSize: 4096}))
	s := client.New(sb.conn()).Sync(t.Context(), nil, client.WithLogger(quietLogger()),
		client.WithBackoff(time.Millisecond, 10*time.Millisecond))
	defer s.Close()

	s.Upsert(&tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Secret{Secret: &tributaryv1.Secret{
		Metadata: &tributaryv1.ObjectMeta{Namespace: "ns", Name: "big"}, CaCrt: make([]byte, 8192)}}})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := s.Flush(ctx)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "larger than max") {
		t.Fatalf("Flush of an oversized batch: got %v, want ResourceExhausted (larger than max)", err)
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatal("the session did not end")
	}
	if status.Code(s.Err()) != codes.ResourceExhausted {
		t.Errorf("Err: got %v, want ResourceExhausted", s.Err())
	}
}
