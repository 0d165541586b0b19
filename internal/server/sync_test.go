package server

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	gocmp "github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/testproc"
)

// syncClient drives one Sync stream from the test's goroutine.
type syncClient struct {
	t      *testing.T
	stream grpc.BidiStreamingClient[tributaryv1.SyncRequest, tributaryv1.SyncResponse]
}

// openSync opens a Sync stream on conn and sends its SyncStart.
func openSync(ctx context.Context, t *testing.T, conn *grpc.ClientConn, settings *tributaryv1.Settings) *syncClient {
	t.Helper()
	c := openStream(ctx, t, conn)
	c.sendRequest(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{Settings: settings}}})
	return c
}

// openUnwelcome opens a Sync stream that the server ends without reading
// it (over the session limit, or while draining) and sends its start: the
// stream may have ended before the start goes out, so io.EOF from the send
// is part of the outcome, which Recv tells.
func openUnwelcome(t *testing.T, conn *grpc.ClientConn) *syncClient {
	t.Helper()
	c := openStream(t.Context(), t, conn)
	err := c.stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}})
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("Send: %v", err)
	}
	return c
}

// openStream opens a Sync stream and sends nothing.
func openStream(ctx context.Context, t *testing.T, conn *grpc.ClientConn) *syncClient {
	t.Helper()
	stream, err := tributaryv1.NewTranslationServiceClient(conn).Sync(ctx)
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	return &syncClient{t: t, stream: stream}
}

func (c *syncClient) sendRequest(req *tributaryv1.SyncRequest) {
	c.t.Helper()
	if err := c.stream.Send(req); err != nil {
		c.t.Fatalf("Send: %v", err)
	}
}

func (c *syncClient) send(b *tributaryv1.SyncBatch) {
	c.t.Helper()
	c.sendRequest(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: b}})
}

func (c *syncClient) recv() *tributaryv1.SyncResponse {
	c.t.Helper()
	resp, err := c.stream.Recv()
	if err != nil {
		c.t.Fatalf("Recv: %v", err)
	}
	return resp
}

// delta receives one response, which must be a delta.
func (c *syncClient) delta() *tributaryv1.SyncDelta {
	c.t.Helper()
	resp := c.recv()
	if resp.GetDelta() == nil {
		c.t.Fatalf("got %v, want a delta", resp)
	}
	return resp.GetDelta()
}

// end reads the stream to its end, which must come without another
// response, and returns its status (nil for OK).
func (c *syncClient) end() error {
	c.t.Helper()
	resp, err := c.stream.Recv()
	if err == nil {
		c.t.Fatalf("got %v, want the end of the stream", resp)
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// closeAndEnd half-closes the stream and expects it to end OK with no
// further response.
func (c *syncClient) closeAndEnd() {
	c.t.Helper()
	if err := c.stream.CloseSend(); err != nil {
		c.t.Fatalf("CloseSend: %v", err)
	}
	if err := c.end(); err != nil {
		c.t.Fatalf("stream ended with %v, want OK", err)
	}
}

func batch(id uint64, upserts ...*tributaryv1.KubernetesObject) *tributaryv1.SyncBatch {
	return &tributaryv1.SyncBatch{Id: id, Upserts: upserts}
}

func deleteOf(kind tributaryv1.ObjectKind, ns, name string) *tributaryv1.ObjectReference {
	return &tributaryv1.ObjectReference{Kind: kind, Namespace: ns, Name: name}
}

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

// The fixture: ExtensionService ns/plain (h2c) targets Service a, ns/tls
// (h2, validating with CA Secret ns/ca) targets Service b, and ns/broken
// targets a Service that does not exist.
const (
	plainCluster  = "extension/ns/plain"
	tlsCluster    = "extension/ns/tls"
	brokenCluster = "extension/ns/broken"
)

func plainES(protocol string) *tributaryv1.KubernetesObject {
	m := meta("ns", "plain")
	m.Generation = 2
	return extensionServiceObject(m, &tributaryv1.ExtensionServiceSpec{
		Services: []*tributaryv1.ExtensionServiceTarget{{Name: "a", Port: 9000}},
		Protocol: proto.String(protocol),
	})
}

func tlsES() *tributaryv1.KubernetesObject {
	return extensionServiceObject(meta("ns", "tls"), &tributaryv1.ExtensionServiceSpec{
		Services:   []*tributaryv1.ExtensionServiceTarget{{Name: "b", Port: 9000}},
		Validation: &tributaryv1.UpstreamValidation{CaSecret: "ca", SubjectName: "authz.ns.svc"},
	})
}

func brokenES() *tributaryv1.KubernetesObject {
	return extensionServiceObject(meta("ns", "broken"), &tributaryv1.ExtensionServiceSpec{
		Services: []*tributaryv1.ExtensionServiceTarget{{Name: "missing", Port: 9000}},
	})
}

func service(name string) *tributaryv1.KubernetesObject {
	return serviceObject(meta("ns", name), &tributaryv1.ServicePort{Name: "grpc", Port: 9000, TargetPort: "9001", Protocol: "TCP"})
}

// slice is EndpointSlice "<svc>-1" of Service svc with ready endpoints at
// addresses.
func slice(svc string, addresses ...string) *tributaryv1.KubernetesObject {
	endpoints := make([]*tributaryv1.Endpoint, len(addresses))
	for i, a := range addresses {
		endpoints[i] = &tributaryv1.Endpoint{Addresses: []string{a}, Conditions: &tributaryv1.EndpointConditions{Ready: proto.Bool(true)}}
	}
	return endpointSliceObject(sliceMeta("ns", svc+"-1", svc), []*tributaryv1.EndpointPort{tcpPort("grpc", 9001)}, endpoints...)
}

func caSecret(t *testing.T, seed byte) *tributaryv1.KubernetesObject {
	o := secretObject(meta("ns", "ca"))
	o.GetSecret().Type = "Opaque"
	o.GetSecret().CaCrt = certificatePEM(t, seed)
	return o
}

// certificatePEM is a self-signed CA certificate; seeds give distinct ones.
func certificatePEM(t *testing.T, seed byte) []byte {
	t.Helper()
	key := ed25519.NewKeyFromSeed(slices.Repeat([]byte{seed}, ed25519.SeedSize))
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(int64(seed)),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("ca-%d", seed)},
		NotBefore:             time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func fixture(t *testing.T) []*tributaryv1.KubernetesObject {
	return []*tributaryv1.KubernetesObject{
		plainES("h2c"), service("a"), slice("a", "10.0.0.1", "10.0.0.2"),
		tlsES(), service("b"), slice("b", "10.0.1.1"), caSecret(t, 1),
		brokenES(),
	}
}

// pick returns the resources of rs with the given names, in that order.
func pick(t *testing.T, rs []*tributaryv1.Resource, names ...string) []*tributaryv1.Resource {
	t.Helper()
	var out []*tributaryv1.Resource
	for _, name := range names {
		i := slices.IndexFunc(rs, func(r *tributaryv1.Resource) bool { return r.GetName() == name })
		if i < 0 {
			t.Fatalf("the oracle has no resource %q", name)
		}
		out = append(out, rs[i])
	}
	return out
}

// statusOf returns the oracle's status of ExtensionService ns/name.
func statusOf(t *testing.T, oracle *tributaryv1.TranslateResponse, name string) *tributaryv1.ExtensionServiceStatus {
	t.Helper()
	for _, st := range oracle.GetStatuses() {
		if st.GetNamespace() == "ns" && st.GetName() == name {
			return st
		}
	}
	t.Fatalf("the oracle has no status for ns/%s", name)
	return nil
}

var dialers = map[string]func(*testing.T, *grpc.Server) *grpc.ClientConn{"bufconn": dialBufconn, "tcp": dialTCP}

// TestSync follows one session through every kind of change, over both
// transports: each delta holds exactly what changed, and the deltas always
// add up to what Translate gives for the objects sent so far.
func TestSync(t *testing.T) {
	for name, dial := range dialers {
		t.Run(name, func(t *testing.T) {
			conn := dial(t, NewGRPCServer(quietOptions()))
			settings := &tributaryv1.Settings{XdsClusterName: "xds"}
			s := newSyncSession(openSync(t.Context(), t, conn, settings), settings, map[string]bool{})

			// The first batch: the complete state.
			s.step(batch(1, fixture(t)...), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return &tributaryv1.SyncDelta{BatchId: 1, FullState: true, Clusters: o.Clusters, ClusterLoadAssignments: o.ClusterLoadAssignments, Statuses: o.Statuses}
			})
			if got := len(s.view.clas); got != 2 {
				t.Fatalf("the fixture gives %d ClusterLoadAssignments, want 2", got)
			}

			// Endpoints scale up, then down: only that CLA changes.
			onlyPlainCLA := func(id uint64) func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
					return &tributaryv1.SyncDelta{BatchId: id, ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, plainCluster)}
				}
			}
			s.step(batch(2, slice("a", "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4")), onlyPlainCLA(2))
			s.step(batch(3, slice("a", "10.0.0.4")), onlyPlainCLA(3))

			// A batch that changes no output: an empty acknowledgement.
			s.step(batch(4, slice("a", "10.0.0.4"), service("a")), func(*tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return &tributaryv1.SyncDelta{BatchId: 4}
			})

			// The CA Secret rotates: only the Cluster that embeds it changes.
			s.step(batch(5, caSecret(t, 2)), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return &tributaryv1.SyncDelta{BatchId: 5, Clusters: pick(t, o.Clusters, tlsCluster)}
			})

			// An ExtensionService becomes invalid: its resources go, and its
			// status says why.
			d := s.step(batch(6, plainES("bogus")), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return &tributaryv1.SyncDelta{
					BatchId: 6, RemovedClusters: []string{plainCluster}, RemovedClusterLoadAssignments: []string{plainCluster},
					Statuses: []*tributaryv1.ExtensionServiceStatus{statusOf(t, o, "plain")},
				}
			})
			if c := d.GetStatuses()[0].GetConditions()[0]; c.GetStatus() != "False" || c.GetErrors()[0].GetReason() != "UnsupportedProtocol" {
				t.Errorf("status of the invalid ExtensionService: %v", c)
			}
			// And valid again.
			s.step(batch(7, plainES("h2c")), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return &tributaryv1.SyncDelta{
					BatchId: 7, Clusters: pick(t, o.Clusters, plainCluster), ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, plainCluster),
					Statuses: []*tributaryv1.ExtensionServiceStatus{statusOf(t, o, "plain")},
				}
			})

			// Deleting a target Service invalidates the ExtensionService.
			del := &tributaryv1.SyncBatch{Id: 8, Deletes: []*tributaryv1.ObjectReference{deleteOf(tributaryv1.ObjectKind_OBJECT_KIND_SERVICE, "ns", "b")}}
			d = s.step(del, func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return &tributaryv1.SyncDelta{
					BatchId: 8, RemovedClusters: []string{tlsCluster}, RemovedClusterLoadAssignments: []string{tlsCluster},
					Statuses: []*tributaryv1.ExtensionServiceStatus{statusOf(t, o, "tls")},
				}
			})
			if c := d.GetStatuses()[0].GetConditions()[0]; c.GetStatus() != "False" || c.GetErrors()[0].GetReason() != "ServiceUnresolvedReference" {
				t.Errorf("status after deleting the Service: %v", c)
			}

			// Deleting an ExtensionService removes its status; deleting an
			// object the session does not hold changes nothing more.
			del = &tributaryv1.SyncBatch{Id: 9, Deletes: []*tributaryv1.ObjectReference{
				deleteOf(tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE, "ns", "broken"),
				deleteOf(tributaryv1.ObjectKind_OBJECT_KIND_SECRET, "ns", "never-sent"),
			}}
			s.step(del, func(*tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return &tributaryv1.SyncDelta{BatchId: 9, RemovedStatuses: []*tributaryv1.ObjectReference{
					deleteOf(tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE, "ns", "broken"),
				}}
			})

			s.closeAndEnd()
		})
	}
}

// TestSyncResourceBytes: a delta carries each resource's exact bytes, as
// Translate does (protocmp compares Any by content, so check the bytes).
func TestSyncResourceBytes(t *testing.T) {
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	c := openSync(t.Context(), t, conn, nil)
	c.send(batch(1, smallRequest().Objects...))
	got := c.delta()
	want := smallResponse(t)
	if diff := gocmp.Diff(&tributaryv1.SyncDelta{BatchId: 1, FullState: true, Clusters: want.Clusters, ClusterLoadAssignments: want.ClusterLoadAssignments, Statuses: want.Statuses},
		got, protocmp.Transform(), ignoreVersion); diff != "" {
		t.Errorf("delta (-want +got):\n%s", diff)
	}
	for i, r := range got.GetClusterLoadAssignments() {
		if !proto.Equal(r.GetResource(), want.GetClusterLoadAssignments()[i].GetResource()) {
			t.Errorf("clusterLoadAssignments[%d]: bytes differ from the deterministic encoding", i)
		}
	}
	for i, r := range got.GetClusters() {
		if !proto.Equal(r.GetResource(), want.GetClusters()[i].GetResource()) {
			t.Errorf("clusters[%d]: bytes differ from the deterministic encoding", i)
		}
	}
	c.closeAndEnd()
}

// TestSyncReconnect: a new stream starts from nothing, whatever an earlier
// stream held; the client sends its objects again and gets the complete
// state; no version repeats across the streams.
func TestSyncReconnect(t *testing.T) {
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	versions := map[string]bool{}

	first := newSyncSession(openSync(t.Context(), t, conn, nil), nil, versions)
	first.step(batch(1, fixture(t)...), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
		return &tributaryv1.SyncDelta{BatchId: 1, FullState: true, Clusters: o.Clusters, ClusterLoadAssignments: o.ClusterLoadAssignments, Statuses: o.Statuses}
	})
	first.step(batch(2, slice("a", "10.0.0.9")), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
		return &tributaryv1.SyncDelta{BatchId: 2, ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, plainCluster)}
	})
	first.closeAndEnd()

	// The second stream's first batch holds one ExtensionService and its
	// objects: its complete state is theirs alone, nothing of the first
	// stream's.
	second := newSyncSession(openSync(t.Context(), t, conn, nil), nil, versions)
	second.step(batch(1, plainES("h2c"), service("a"), slice("a", "10.0.0.1", "10.0.0.2")), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
		return &tributaryv1.SyncDelta{
			BatchId: 1, FullState: true, Clusters: pick(t, o.Clusters, plainCluster), ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, plainCluster),
			Statuses: []*tributaryv1.ExtensionServiceStatus{statusOf(t, o, "plain")},
		}
	})
	// The client resends the rest.
	second.step(batch(2, fixture(t)...), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
		return &tributaryv1.SyncDelta{
			BatchId: 2, Clusters: pick(t, o.Clusters, tlsCluster), ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, tlsCluster),
			Statuses: []*tributaryv1.ExtensionServiceStatus{statusOf(t, o, "broken"), statusOf(t, o, "tls")},
		}
	})
	second.closeAndEnd()
	if len(versions) != 4 {
		t.Errorf("got versions %v, want 4 distinct ones", versions)
	}
}

// TestSyncRejectsMalformedBatches: each malformed batch is answered with a
// BatchRejected naming every problem, exactly as Translate would word it,
// and changes nothing; the stream goes on.
func TestSyncRejectsMalformedBatches(t *testing.T) {
	const es = tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE
	const svc = tributaryv1.ObjectKind_OBJECT_KIND_SERVICE
	tooMany := make([]*tributaryv1.ObjectReference, DefaultMaxBatchObjects+1)
	for i := range tooMany {
		tooMany[i] = deleteOf(svc, "ns", "x")
	}
	tests := []struct {
		name    string
		batch   *tributaryv1.SyncBatch
		wantMsg string
		want    []violation
	}{{
		// The valid scale-up in the same batch must not be applied.
		name:    "bad upsert beside a good one",
		batch:   batch(10, slice("a", "10.0.0.7"), serviceObject(meta("ns", ""))),
		wantMsg: `batch.upserts[1] (Service): metadata.name is required`,
		want:    []violation{{"batch.upserts[1].service.metadata.name", ReasonRequired, `batch.upserts[1] (Service): metadata.name is required`}},
	}, {
		name:    "upsert without kind",
		batch:   batch(11, &tributaryv1.KubernetesObject{}),
		wantMsg: `batch.upserts[0]: kind is required (one of extensionService, service, endpointSlice, secret, tlsCertificateDelegation)`,
		want: []violation{{"batch.upserts[0]", ReasonRequired,
			`batch.upserts[0]: kind is required (one of extensionService, service, endpointSlice, secret, tlsCertificateDelegation)`}},
	}, {
		name:    "same object upserted twice",
		batch:   batch(12, slice("a", "10.0.0.7"), service("a"), slice("a", "10.0.0.8")),
		wantMsg: `batch.upserts[2] (EndpointSlice "ns/a-1"): metadata.name duplicates batch.upserts[0]: two EndpointSlices have the same namespace and name`,
		want: []violation{{"batch.upserts[2].endpointSlice.metadata.name", ReasonDuplicate,
			`batch.upserts[2] (EndpointSlice "ns/a-1"): metadata.name duplicates batch.upserts[0]: two EndpointSlices have the same namespace and name`}},
	}, {
		name: "same object upserted and deleted",
		batch: &tributaryv1.SyncBatch{Id: 13, Upserts: []*tributaryv1.KubernetesObject{service("a")},
			Deletes: []*tributaryv1.ObjectReference{deleteOf(es, "ns", "a"), deleteOf(svc, "ns", "a")}},
		wantMsg: `batch.deletes[1] (Service "ns/a"): name duplicates batch.upserts[0]: a batch cannot both upsert and delete an object`,
		want: []violation{{"batch.deletes[1].name", ReasonDuplicate,
			`batch.deletes[1] (Service "ns/a"): name duplicates batch.upserts[0]: a batch cannot both upsert and delete an object`}},
	}, {
		name:    "same object deleted twice",
		batch:   &tributaryv1.SyncBatch{Id: 14, Deletes: []*tributaryv1.ObjectReference{deleteOf(svc, "ns", "b"), deleteOf(svc, "ns", "b")}},
		wantMsg: `batch.deletes[1] (Service "ns/b"): name duplicates batch.deletes[0]: two deletes name the same Service`,
		want: []violation{{"batch.deletes[1].name", ReasonDuplicate,
			`batch.deletes[1] (Service "ns/b"): name duplicates batch.deletes[0]: two deletes name the same Service`}},
	}, {
		name: "bad deletes",
		batch: &tributaryv1.SyncBatch{Id: 15, Deletes: []*tributaryv1.ObjectReference{
			deleteOf(tributaryv1.ObjectKind_OBJECT_KIND_UNSPECIFIED, "ns", "b"),
			deleteOf(42, "ns", "b"),
			deleteOf(svc, "", "Bad_Name"),
		}},
		wantMsg: `batch.deletes[0]: kind is required (` + knownObjectKinds + `) (and 3 more problems)`,
		want: []violation{
			{"batch.deletes[0].kind", ReasonRequired, `batch.deletes[0]: kind is required (` + knownObjectKinds + `)`},
			{"batch.deletes[1].kind", ReasonOutOfRange, `batch.deletes[1]: kind 42 is not a known kind (` + knownObjectKinds + `)`},
			{"batch.deletes[2].namespace", ReasonRequired, `batch.deletes[2] (Service): namespace is required`},
			{"batch.deletes[2].name", ReasonInvalidName, `batch.deletes[2] (Service): name "Bad_Name" is not a valid name (` + dns1123SubdomainRule + `)`},
		},
	}, {
		name:    "too many objects",
		batch:   &tributaryv1.SyncBatch{Id: 16, Deletes: tooMany},
		wantMsg: fmt.Sprintf("batch holds %d upserts and deletes; a batch holds at most %d", DefaultMaxBatchObjects+1, DefaultMaxBatchObjects),
		want:    []violation{{"batch", ReasonOutOfRange, fmt.Sprintf("batch holds %d upserts and deletes; a batch holds at most %d", DefaultMaxBatchObjects+1, DefaultMaxBatchObjects)}},
	}}

	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	s := newSyncSession(openSync(t.Context(), t, conn, nil), nil, map[string]bool{})
	s.step(batch(1, fixture(t)...), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
		return &tributaryv1.SyncDelta{BatchId: 1, FullState: true, Clusters: o.Clusters, ClusterLoadAssignments: o.ClusterLoadAssignments, Statuses: o.Statuses}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.send(tt.batch)
			want := &tributaryv1.BatchRejected{BatchId: tt.batch.GetId(), Message: tt.wantMsg}
			for _, v := range tt.want {
				want.Violations = append(want.Violations, &tributaryv1.FieldViolation{Field: v.field, Reason: v.reason, Description: v.description})
			}
			got := s.recv()
			if diff := gocmp.Diff(&tributaryv1.SyncResponse{Message: &tributaryv1.SyncResponse_Rejected{Rejected: want}}, got, protocmp.Transform()); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
	// Nothing changed: the next batch's delta holds its own change alone
	// (and the deltas still add up to Translate of the accepted batches).
	s.step(batch(20, slice("b", "10.0.1.2")), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
		return &tributaryv1.SyncDelta{BatchId: 20, ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, tlsCluster)}
	})
	s.closeAndEnd()
}

// TestSyncAnswersInOrder: batches sent without reading in between are
// answered in order, a rejection after the delta of the batch before it
// and before the delta of the batch after it.
func TestSyncAnswersInOrder(t *testing.T) {
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	s := newSyncSession(openSync(t.Context(), t, conn, nil), nil, map[string]bool{})
	first := batch(1, fixture(t)...)
	bad := batch(2, serviceObject(meta("", "x")))
	last := batch(3, slice("a", "10.0.0.5"))
	for _, b := range []*tributaryv1.SyncBatch{first, bad, last} {
		s.send(b)
	}
	s.world.apply(first)
	o := s.world.translate(t)
	s.expect(&tributaryv1.SyncDelta{BatchId: 1, FullState: true, Clusters: o.Clusters, ClusterLoadAssignments: o.ClusterLoadAssignments, Statuses: o.Statuses})
	if got := s.recv(); got.GetRejected().GetBatchId() != 2 {
		t.Fatalf("second answer: got %v, want the rejection of batch 2", got)
	}
	s.world.apply(last)
	o = s.world.translate(t)
	s.expect(&tributaryv1.SyncDelta{BatchId: 3, ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, plainCluster)})
	s.closeAndEnd()
}

// TestSyncStreamErrors: what ends a stream, and with which status.
func TestSyncStreamErrors(t *testing.T) {
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	wantStatus := func(t *testing.T, err error, code codes.Code, msg string) {
		t.Helper()
		if st := status.Convert(err); st.Code() != code || st.Message() != msg {
			t.Errorf("stream ended with %v, want %v %q", err, code, msg)
		}
	}

	t.Run("no start", func(t *testing.T) {
		c := openStream(t.Context(), t, conn)
		c.send(batch(1, service("a")))
		wantStatus(t, c.end(), codes.InvalidArgument, "the first message of a Sync stream must be a start (SyncStart)")
	})
	t.Run("malformed settings", func(t *testing.T) {
		c := openSync(t.Context(), t, conn, &tributaryv1.Settings{ConnectTimeout: "-1s", ClientCertificate: "nope"})
		checkInvalidArgument(t, c.end(), `start.settings.connectTimeout "-1s" is negative (and 1 more problems)`, []violation{
			{"start.settings.connectTimeout", ReasonOutOfRange, `start.settings.connectTimeout "-1s" is negative`},
			{"start.settings.clientCertificate", ReasonInvalidFormat, `start.settings.clientCertificate "nope" is not "namespace/name"`},
		})
	})
	t.Run("second start", func(t *testing.T) {
		c := openSync(t.Context(), t, conn, nil)
		c.send(batch(7, service("a")))
		c.sendRequest(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}})
		// The batch before it is answered first.
		if d := c.delta(); d.GetBatchId() != 7 || !d.GetFullState() {
			t.Errorf("got %v, want the full state after batch 7", d)
		}
		wantStatus(t, c.end(), codes.FailedPrecondition, "a Sync stream takes one start (SyncStart), as its first message; open a new stream for other settings")
	})
	t.Run("empty request", func(t *testing.T) {
		c := openSync(t.Context(), t, conn, nil)
		c.sendRequest(&tributaryv1.SyncRequest{})
		wantStatus(t, c.end(), codes.InvalidArgument, "a SyncRequest must hold a start or a batch")
	})
	t.Run("closed before start", func(t *testing.T) {
		c := openStream(t.Context(), t, conn)
		c.closeAndEnd()
	})
	t.Run("closed after start", func(t *testing.T) {
		c := openSync(t.Context(), t, conn, nil)
		c.closeAndEnd()
	})
}

// countingService counts the Recv calls its Sync streams make, so a test can
// tell when the server has applied every batch sent: the server calls Recv
// again only after applying the last batch it received.
type countingService struct {
	tributaryv1.TranslationServiceServer
	recvs     atomic.Int64
	reachedAt int64
	reached   chan struct{}
}

func (s *countingService) Sync(stream grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) error {
	return s.TranslationServiceServer.Sync(countingStream{stream, s})
}

type countingStream struct {
	grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]
	service *countingService
}

func (s countingStream) Recv() (*tributaryv1.SyncRequest, error) {
	if s.service.recvs.Add(1) == s.service.reachedAt {
		close(s.service.reached)
	}
	return s.BidiStreamingServer.Recv()
}

// TestSyncSlowReader: a client sends a thousand batches of endpoint churn
// without reading, then reads. The server merges what waits, so far fewer
// answers come than batches, the last covers the last batch, and together
// they give exactly the final state.
func TestSyncSlowReader(t *testing.T) {
	const batches = 1000
	// Recv calls: the start, every batch, and the one that waits for more.
	svc := &countingService{TranslationServiceServer: NewTranslationService(), reachedAt: batches + 2, reached: make(chan struct{})}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, newGRPCServer(quietOptions(), svc), lis)
	// A fixed, small window (no BDP growth) keeps the server from sending
	// far ahead of the reader.
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })

	s := newSyncSession(openSync(t.Context(), t, conn, nil), nil, map[string]bool{})
	// 200 endpoints make each CLA a few kilobytes, so a few deltas fill
	// the window.
	addresses := func(shift int) []string {
		out := make([]string, 200)
		for i := range out {
			n := i + shift
			out[i] = fmt.Sprintf("10.1.%d.%d", n/250, n%250+1)
		}
		return out
	}
	s.send(batch(1, plainES("h2c"), service("a"), slice("a", addresses(0)...)))
	s.world.apply(batch(1, plainES("h2c"), service("a"), slice("a", addresses(0)...)))
	for i := 2; i <= batches; i++ {
		b := batch(uint64(i), slice("a", addresses(i)...))
		s.send(b)
		s.world.apply(b)
	}
	<-svc.reached

	var responses int
	for {
		got := s.delta()
		responses++
		s.view.apply(got)
		if got.GetBatchId() == batches {
			break
		}
	}
	if diff := gocmp.Diff(s.world.translate(t), s.view.response(), sortedLists); diff != "" {
		t.Errorf("the deltas add up to (-Translate +deltas):\n%s", diff)
	}
	t.Logf("%d batches, %d answers", batches, responses)
	if responses > batches/10 {
		t.Errorf("%d batches got %d answers: pending deltas were not merged", batches, responses)
	}
	s.closeAndEnd()
}

// TestSyncCancel: a client that cancels its stream, while the server is
// blocked sending to it and a rejection waits (or the receiver has ended
// the call over a second SyncStart), leaves nothing running on the server,
// and the call is logged as the client ended it.
func TestSyncCancel(t *testing.T) {
	for _, last := range []struct {
		name string
		req  *tributaryv1.SyncRequest
	}{
		{"malformed batch", &tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: batch(200, serviceObject(meta("", "")))}}},
		{"second start", &tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}}},
	} {
		t.Run(last.name, func(t *testing.T) {
			var log testproc.Buffer
			conn := dialBufconn(t, NewGRPCServer(Options{Logger: slog.New(slog.NewTextHandler(&log, nil))}))
			// Connect before taking the goroutine snapshot: the connection's
			// own goroutines live on.
			if _, err := tributaryv1.NewTranslationServiceClient(conn).Translate(t.Context(), &tributaryv1.TranslateRequest{}); err != nil {
				t.Fatal(err)
			}
			before := goleak.IgnoreCurrent()

			ctx, cancel := context.WithCancel(t.Context())
			c := openSync(ctx, t, conn, nil)
			var endpoints []string
			for i := range 2000 {
				endpoints = append(endpoints, fmt.Sprintf("10.2.%d.%d", i/250, i%250+1))
			}
			c.send(batch(1, plainES("h2c"), service("a")))
			// Large deltas the client never reads, then the last request.
			for i := range 100 {
				endpoints[0] = fmt.Sprintf("10.3.0.%d", i+1)
				c.send(batch(uint64(i+2), slice("a", endpoints...)))
			}
			c.sendRequest(last.req)
			cancel()
			for {
				if _, err := c.stream.Recv(); err != nil {
					if status.Code(err) != codes.Canceled {
						t.Errorf("Recv: got %v, want Canceled", err)
					}
					break
				}
			}
			goleak.VerifyNone(t, before)
			if !regexp.MustCompile(`msg="finished call" .*grpc.method=Sync .*grpc.code=Canceled`).MatchString(log.String()) {
				t.Errorf("the call was not logged as Canceled; log:\n%s", log.String())
			}
		})
	}
}

// TestSyncEmptyBatch: an empty first batch gives an empty complete state,
// with a version.
func TestSyncEmptyBatch(t *testing.T) {
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	c := openSync(t.Context(), t, conn, nil)
	c.send(&tributaryv1.SyncBatch{Id: 3})
	got := c.delta()
	if diff := gocmp.Diff(&tributaryv1.SyncDelta{BatchId: 3, FullState: true}, got, protocmp.Transform(), ignoreVersion); diff != "" {
		t.Errorf("delta (-want +got):\n%s", diff)
	}
	if got.GetVersion() == "" {
		t.Error("the complete state has no version")
	}
	c.closeAndEnd()
}

// TestSyncIncludeJSON: a session started with include_json gets every
// resource's JSON beside its unchanged bytes, and the JSON reads back into
// the same resource.
func TestSyncIncludeJSON(t *testing.T) {
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	c := openStream(t.Context(), t, conn)
	c.sendRequest(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{IncludeJson: true}}})
	c.send(batch(1, smallRequest().Objects...))
	got := c.delta()
	want := smallResponse(t)
	if diff := gocmp.Diff(&tributaryv1.SyncDelta{BatchId: 1, FullState: true, Clusters: want.Clusters, ClusterLoadAssignments: want.ClusterLoadAssignments, Statuses: want.Statuses},
		got, protocmp.Transform(), ignoreVersion, protocmp.IgnoreFields(&tributaryv1.Resource{}, "json")); diff != "" {
		t.Errorf("delta (-want +got):\n%s", diff)
	}
	resources := slices.Concat(got.GetClusters(), got.GetClusterLoadAssignments())
	if len(resources) != 2 {
		t.Fatalf("got %d resources, want 2", len(resources))
	}
	for _, r := range resources {
		fromBytes, err := r.GetResource().UnmarshalNew()
		if err != nil {
			t.Fatal(err)
		}
		fromJSON := fromBytes.ProtoReflect().New().Interface()
		if err := protojson.Unmarshal([]byte(r.GetJson()), fromJSON); err != nil {
			t.Fatalf("%s: json %q: %v", r.GetName(), r.GetJson(), err)
		}
		if diff := gocmp.Diff(fromBytes, fromJSON, protocmp.Transform()); diff != "" {
			t.Errorf("%s: JSON reads back as (-bytes +json):\n%s", r.GetName(), diff)
		}
	}
	c.closeAndEnd()
}

// TestSyncConcurrentReader: a client that reads while it writes, as a
// controller does, gets every batch answered and the right final state,
// however the server's two goroutines interleave.
func TestSyncConcurrentReader(t *testing.T) {
	const batches = 3000
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	s := newSyncSession(openSync(t.Context(), t, conn, nil), nil, map[string]bool{})
	w := newWorld(nil)
	read := make(chan error, 1)
	go func() {
		for responses := 0; ; responses++ {
			resp, err := s.stream.Recv()
			if err != nil {
				read <- fmt.Errorf("after %d responses: %w", responses, err)
				return
			}
			s.view.apply(resp.GetDelta())
			if resp.GetDelta().GetBatchId() == batches {
				read <- nil
				return
			}
		}
	}()
	for i := 1; i <= batches; i++ {
		b := batch(uint64(i), slice("a", fmt.Sprintf("10.4.%d.%d", i/250, i%250+1)))
		if i == 1 {
			b.Upserts = append(b.Upserts, plainES("h2c"), service("a"))
		}
		s.send(b)
		w.apply(b)
	}
	if err := <-read; err != nil {
		t.Fatalf("reading: %v", err)
	}
	if diff := gocmp.Diff(w.translate(t), s.view.response(), sortedLists); diff != "" {
		t.Errorf("the deltas add up to (-Translate +deltas):\n%s", diff)
	}
	s.closeAndEnd()
}

// TestDecodeBatch: deletes of every kind become the session's references,
// and each upserted object gets arrays of its own, so a session that keeps
// one object of a batch keeps nothing else of it.
func TestDecodeBatch(t *testing.T) {
	var refs []*tributaryv1.ObjectReference
	for k := range tributaryv1.ObjectKind_OBJECT_KIND_TLS_CERTIFICATE_DELEGATION {
		refs = append(refs, deleteOf(k+1, "ns", "gone"))
	}
	pb := &tributaryv1.SyncBatch{Upserts: []*tributaryv1.KubernetesObject{slice("a", "10.0.0.1", "10.0.0.2"), slice("b", "10.0.0.3")}, Deletes: refs}
	var p problems
	b := decodeBatch(pb, &p)
	if p.count != 0 {
		t.Fatalf("problems: %v", p.violations)
	}
	gone := source.NamespacedName{Namespace: "ns", Name: "gone"}
	want := []session.Ref{
		{Kind: session.KindExtensionService, Name: gone},
		{Kind: session.KindService, Name: gone},
		{Kind: session.KindEndpointSlice, Name: gone},
		{Kind: session.KindSecret, Name: gone},
		{Kind: session.KindTLSCertificateDelegation, Name: gone},
	}
	if diff := gocmp.Diff(want, b.Deletes); diff != "" {
		t.Errorf("deletes (-want +got):\n%s", diff)
	}
	first, second := b.Upserts.EndpointSlices[0].Endpoints, b.Upserts.EndpointSlices[1].Endpoints
	if len(first) != 2 || len(second) != 1 {
		t.Fatalf("got %d and %d endpoints, want 2 and 1", len(first), len(second))
	}
	if unsafeAdjacent(first, second) {
		t.Error("the two slices' endpoints share one array")
	}
}

// unsafeAdjacent reports whether b starts right where a ends in memory, as
// carving from one shared array would place them.
func unsafeAdjacent[T any](a, b []T) bool {
	end := uintptr(unsafe.Pointer(unsafe.SliceData(a))) + uintptr(len(a))*unsafe.Sizeof(a[0])
	return end == uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}

// TestSyncDrain: when Options.Draining closes, every open Sync call ends
// with Unavailable, whether it has answered batches, is still waiting for
// its first, or has not even sent its start; a call that only starts
// afterwards is not held either.
func TestSyncDrain(t *testing.T) {
	draining := make(chan struct{})
	opts := quietOptions()
	opts.Draining = draining
	conn := dialBufconn(t, NewGRPCServer(opts))

	busy := openSync(t.Context(), t, conn, nil)
	busy.send(batch(1, fixture(t)...))
	busy.delta()
	idle := openSync(t.Context(), t, conn, nil)
	unstarted := openStream(t.Context(), t, conn)

	busy.send(batch(2, slice("a", "10.0.0.9")))
	if got := busy.delta(); got.GetBatchId() != 2 {
		t.Fatalf("answer to batch 2: got batch %d", got.GetBatchId())
	}
	close(draining)
	for name, c := range map[string]*syncClient{"busy": busy, "idle": idle, "unstarted": unstarted, "late": openUnwelcome(t, conn)} {
		_, err := c.stream.Recv()
		if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "shutting down") {
			t.Errorf("%s session: got %v, want Unavailable saying the server is shutting down", name, err)
		}
	}
}
