package loadtest

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/workload"
)

// TestClientVanishesMidBatch: a Sync client whose connection dies in the
// middle of a batch (its process crashed: the kernel resets the connection
// after the first 32 KiB of a message over 1 MiB, leaving the server half an
// HTTP/2 frame) costs the server that session and nothing else. The other
// sessions are served throughout and end exact; the server logs the call's
// end with its code and the session's end with the reason; the session is
// released (tributary_sync_sessions_active falls back).
func TestClientVanishesMidBatch(t *testing.T) {
	srv := startServer(t, nil, "--log-level", "debug")
	ctx, cancel := context.WithTimeout(t.Context(), 3*hangGuard)
	defer cancel()
	others := startBystanders(ctx, t, dial(t, srv.Address), 0, 8)

	cut := &cuttingDialer{}
	conn := dial(t, srv.Address, grpc.WithContextDialer(cut.dial))
	stream, err := tributaryv1.NewTranslationServiceClient(conn).Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}}); err != nil {
		t.Fatal(err)
	}
	// The server counts the session once it has the start.
	waitMetric(t, srv, "tributary_sync_sessions_active", 9)
	cut.arm(32 << 10)
	// Send fails or not depending on when the cut happens; Recv reports
	// how the stream ended either way.
	_ = stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: &tributaryv1.SyncBatch{Id: 1, Upserts: overOneMiB(t, 100)}}})
	_, err = stream.Recv()
	if !cut.fired() {
		t.Fatalf("the connection was not cut mid-batch (the stream ended with %v)", err)
	}
	// How the client's own side ends (Unavailable as a rule) is incidental:
	// what matters is the server's side, below.
	if err == nil {
		t.Fatal("the vanished client's stream got an answer")
	}
	t.Logf("the vanished client's stream ended with %v", err)

	// The server ends the session and says why.
	// (batches=0 singles it out: every bystander has loaded.)
	ended := srv.waitLog(t, regexp.MustCompile(`level=DEBUG msg="sync session ended" session=(\w+) batches=0 .*error="([^"]+)"`))
	t.Logf("the server ended session %s: %s", ended[1], ended[2])
	srv.waitLog(t, regexp.MustCompile(`level=INFO msg="finished call" .*grpc.method=Sync .*session=`+ended[1]+` .*grpc.code=Canceled`))
	waitMetric(t, srv, "tributary_sync_sessions_active", 8)
	others.waitServed(t, 50)
	others.finish(ctx, t)
	translateExample(ctx, t, srv.Address)
}

// cuttingDialer dials TCP connections that, once armed, let a budget of
// bytes through and then reset the connection in the middle of a write, as
// a crashing client would leave it.
type cuttingDialer struct {
	mu     sync.Mutex
	conns  []*cuttingConn
	budget int
	armed  bool
	cut    bool
}

func (d *cuttingDialer) dial(ctx context.Context, address string) (net.Conn, error) {
	raw, err := (&net.Dialer{}).DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, err
	}
	c := &cuttingConn{Conn: raw, dialer: d}
	d.mu.Lock()
	d.conns = append(d.conns, c)
	d.mu.Unlock()
	return c, nil
}

// arm lets budget more bytes through, then cuts.
func (d *cuttingDialer) arm(budget int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.budget, d.armed = budget, true
}

func (d *cuttingDialer) fired() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cut
}

type cuttingConn struct {
	net.Conn
	dialer *cuttingDialer
}

func (c *cuttingConn) Write(p []byte) (int, error) {
	d := c.dialer
	d.mu.Lock()
	if !d.armed || d.cut {
		cut := d.cut
		d.mu.Unlock()
		if cut {
			return 0, net.ErrClosed
		}
		return c.Conn.Write(p)
	}
	if len(p) <= d.budget {
		d.budget -= len(p)
		d.mu.Unlock()
		return c.Conn.Write(p)
	}
	n := d.budget
	d.cut = true
	d.mu.Unlock()
	written, _ := c.Conn.Write(p[:n])
	// SO_LINGER 0: close sends a reset, not an orderly FIN.
	if tcp, ok := c.Conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = c.Close()
	return written, net.ErrClosed
}

// TestSlowReader: a Sync client that writes batches and does not read the
// answers blocks only its own stream. Each of its 30 batches rewrites all
// 40 of its EndpointSlices (200 endpoints each, about 160 KiB of answer per
// batch, far beyond HTTP/2's window), so the server cannot send what it
// applies; it keeps applying anyway, merges the waiting answers, and serves
// the other sessions meanwhile. When the client finally reads, it gets
// fewer answers than batches, the last one covering batch 30, and the
// answers add up to exactly the translation of its objects.
// (server/sync_test.go proves the merging itself in process.)
func TestSlowReader(t *testing.T) {
	srv := startServer(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 3*hangGuard)
	defer cancel()
	others := startBystanders(ctx, t, dial(t, srv.Address), 0, 4)

	const batches = 30
	w := newTenant(50, 20, 200)
	stream, err := tributaryv1.NewTranslationServiceClient(dial(t, srv.Address)).Sync(ctx, grpc.MaxCallRecvMsgSize(client.DefaultMaxMsgSize))
	if err != nil {
		t.Fatal(err)
	}
	send := func(b *tributaryv1.SyncBatch) {
		t.Helper()
		if err := stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: b}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}}); err != nil {
		t.Fatal(err)
	}
	services := func() float64 {
		v, _ := metric(srv.scrape(t), "tributary_sync_session_objects", `kind="Service"`)
		return v
	}
	servicesBefore := services() + float64(len(w.objs.Services))
	send(&tributaryv1.SyncBatch{Id: 1, Upserts: w.all()})
	for id := uint64(2); id <= batches; id++ {
		b := &tributaryv1.SyncBatch{Id: id}
		for i := range w.objs.EndpointSlices {
			slice := &w.objs.EndpointSlices[i]
			slice.Endpoints = withNewFirstPod(w, slice)
			b.Upserts = append(b.Upserts, workload.EndpointSliceObject(slice))
		}
		if id == batches {
			// A Service no ExtensionService uses: the server's count of
			// Services rises when the last batch is applied (the
			// bystanders add none), and batches are applied in order.
			w.objs.Services = append(w.objs.Services, source.Service{Meta: source.Meta{Namespace: "slow", Name: "marker"}, Type: "ClusterIP"})
			b.Upserts = append(b.Upserts, workload.ServiceObject(&w.objs.Services[len(w.objs.Services)-1]))
		}
		send(b)
	}
	// Every batch is applied although nothing is read, and the bystanders
	// are served meanwhile.
	waitFor(t, "the server to apply the slow reader's last batch", func() bool { return services() == servicesBefore+1 })
	others.waitServed(t, 50)
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}

	// Now read: the answers, applied in order, must give the translation.
	clas := map[string]string{} // name → version
	answers, last := 0, uint64(0)
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after %d answers: %v", answers, err)
		}
		d := resp.GetDelta()
		if d == nil {
			t.Fatalf("answer %d is not a delta: %v", answers, resp)
		}
		answers++
		last = d.GetBatchId()
		for _, r := range d.GetClusterLoadAssignments() {
			clas[r.GetName()] = r.GetVersion()
		}
		for _, name := range d.GetRemovedClusterLoadAssignments() {
			delete(clas, name)
		}
	}
	t.Logf("%d batches were answered by %d deltas", batches, answers)
	if answers >= batches || last != batches {
		t.Errorf("%d batches were answered by %d deltas, the last for batch %d: want fewer deltas than batches, the last for batch %d", batches, answers, last, batches)
	}
	if coalesced, _ := metric(srv.scrape(t), "tributary_deltas_coalesced_total"); coalesced < 1 {
		t.Errorf("tributary_deltas_coalesced_total = %v, want at least 1", coalesced)
	}
	want := translate.Translate(w.objs, source.Settings{})
	if len(clas) != len(want.ClusterLoadAssignments) {
		t.Errorf("the answers hold %d ClusterLoadAssignments, the translation %d", len(clas), len(want.ClusterLoadAssignments))
	}
	for _, r := range want.ClusterLoadAssignments {
		if clas[r.Name] != r.Version {
			t.Errorf("ClusterLoadAssignment %s: the answers end with version %q, the translation has %q", r.Name, clas[r.Name], r.Version)
		}
	}
	others.finish(ctx, t)
}

// withNewFirstPod returns slice's endpoints with the first replaced by a
// new pod, so every EndpointSlice the slow reader sends changes its output.
func withNewFirstPod(w *tenant, slice *source.EndpointSlice) []source.Endpoint {
	eps := append([]source.Endpoint(nil), slice.Endpoints...)
	eps[0] = workload.ReadyEndpoint(w.newPod())
	return eps
}

// overOneMiB returns the objects of a tenant of 500 ExtensionServices with
// 40 endpoints per Service: a message over 1 MiB, which it checks.
func overOneMiB(t *testing.T, tenantID int) []*tributaryv1.KubernetesObject {
	t.Helper()
	objs := newTenant(tenantID, 500, 40).all()
	if size := proto.Size(&tributaryv1.SyncBatch{Upserts: objs}); size <= 1<<20 {
		t.Fatalf("the objects take %d bytes, not over 1 MiB", size)
	}
	return objs
}

// TestSIGTERMWithOpenStreams: SIGTERM reaches a server while 20 Sync
// sessions churn. It drains: /readyz and health turn away new calls, and
// every open Sync stream ends at once with Unavailable, so the server exits
// 0 without waiting out its --shutdown-timeout (ten minutes here, far
// beyond the test's guard). A new server is started on the same address;
// every session reconnects to it by itself, sends its objects again, and
// ends with exactly the translation of its objects, answered by the new
// process (its versions carry the new instance's id). Nothing fails but the
// reconnects the clients log.
func TestSIGTERMWithOpenStreams(t *testing.T) {
	first := startServer(t, nil, "--shutdown-timeout", "10m")
	ctx, cancel := context.WithTimeout(t.Context(), 3*hangGuard)
	defer cancel()
	clientLog := &warnings{}
	opts := []client.SyncOption{client.WithBackoff(20*time.Millisecond, 500*time.Millisecond), client.WithLogger(slog.New(clientLog))}
	sessions := startBystanders(ctx, t, dial(t, first.Address), 0, 10, opts...)
	more := startBystanders(ctx, t, dial(t, first.Address), 10, 10, opts...)
	sessions.waitServed(t, 20)
	firstInstance := instanceOf(sessions.sessions[0].View().Version)

	first.Signal(t, syscall.SIGTERM)
	first.waitLog(t, regexp.MustCompile(`msg="shutting down"`))
	if code := first.Wait(t, hangGuard); code != 0 {
		t.Errorf("the first server exited with %d after SIGTERM, want 0", code)
	}
	first.waitLog(t, regexp.MustCompile(`msg=stopped`))
	if lines := append(first.linesAt("WARN"), first.linesAt("ERROR")...); len(lines) > 0 {
		t.Errorf("the first server logged warnings or errors while draining:\n%s", strings.Join(lines, "\n"))
	}
	waitListenable(t, first.Address)
	second := startServer(t, nil, "--address", first.Address)

	// Served by the second server now.
	sessions.waitServed(t, 50)
	more.waitServed(t, 50)
	sessions.finish(ctx, t)
	more.finish(ctx, t)
	for i, s := range append(sessions.sessions, more.sessions...) {
		if got := instanceOf(s.View().Version); got == firstInstance {
			t.Errorf("session %d's output still has version %q, from the first server", i, s.View().Version)
		}
	}
	if active, _ := metric(second.scrape(t), "tributary_sync_sessions_active"); active != 20 {
		t.Errorf("the second server holds %v sessions, want 20", active)
	}
	if !strings.Contains(clientLog.String(), "reconnecting") || !strings.Contains(clientLog.String(), "code = Unavailable desc = the server is shutting down") {
		t.Errorf("the clients logged no reconnect after the drain ended their streams:\n%s", clientLog.String())
	}
	if lines := append(second.linesAt("WARN"), second.linesAt("ERROR")...); len(lines) > 0 {
		t.Errorf("the second server logged warnings or errors:\n%s", strings.Join(lines, "\n"))
	}
}

// instanceOf returns the server instance part of a session output version
// ("<instance>-<counter>").
func instanceOf(version string) string {
	instance, _, _ := strings.Cut(version, "-")
	return instance
}

// TestJunkAndOversized: random bytes on the gRPC port (before and after a
// valid HTTP/2 preface), a Sync message of random bytes, and messages over
// --max-message-size, one unary and one on a Sync stream, each refused
// while the other sessions go on being served and a Translate succeeds
// right after. Each refusal has its reason in the server's own log at the
// default level: why a connection was dropped (gRPC's reason, carried into
// it), why a Sync stream ended, and which call gRPC refused before the
// service saw it.
func TestJunkAndOversized(t *testing.T) {
	srv := startServer(t, nil, "--max-message-size", "1MiB")
	ctx, cancel := context.WithTimeout(t.Context(), 3*hangGuard)
	defer cancel()
	others := startBystanders(ctx, t, dial(t, srv.Address), 0, 4)

	t.Run("random bytes", func(t *testing.T) {
		junk(t, srv.Address, nil)
		srv.waitLog(t, regexp.MustCompile(`level=INFO msg="refused a connection before any call" grpc.log=".*failed to create ServerTransport: .*received bogus greeting from client`))
		translateExample(ctx, t, srv.Address)
	})
	t.Run("random frames after the preface", func(t *testing.T) {
		junk(t, srv.Address, []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
		srv.waitLog(t, regexp.MustCompile(`level=INFO msg="refused a connection before any call" grpc.log=".*failed to create ServerTransport: .*(failed to read initial settings frame|saw invalid preface type)`))
		translateExample(ctx, t, srv.Address)
	})
	t.Run("random bytes as a Sync message", func(t *testing.T) {
		conn := dial(t, srv.Address)
		stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true},
			tributaryv1.TranslationService_Sync_FullMethodName, grpc.ForceCodecV2(rawCodec{}))
		if err != nil {
			t.Fatal(err)
		}
		payload := make([]byte, 4096)
		_, _ = rand.Read(payload)
		payload[0] = 0x0f // field 1 of wire type 7, which does not exist: never a valid message, whatever follows
		if err := stream.SendMsg(payload); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		var reply []byte
		err = stream.RecvMsg(&reply)
		if code := status.Code(err); code != codes.Internal {
			t.Errorf("a Sync message of random bytes ended the stream with %v, want Internal", err)
		}
		srv.waitLog(t, regexp.MustCompile(`msg="finished call" .*grpc.method=Sync .*grpc.code=Internal .*grpc.error=".*unmarshal`))
		translateExample(ctx, t, srv.Address)
	})
	t.Run("oversized Translate", func(t *testing.T) {
		_, err := client.New(dial(t, srv.Address)).Translate(ctx, &tributaryv1.TranslateRequest{Objects: overOneMiB(t, 200)})
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "larger than max") {
			t.Errorf("a 1 MiB+ Translate ended with %v, want ResourceExhausted: larger than max", err)
		}
		srv.waitLog(t, regexp.MustCompile(`level=WARN msg="refused a call before it reached the service" grpc.method=/tributary.v1.TranslationService/Translate grpc.code=ResourceExhausted grpc.error="grpc: received message larger than max \(\d+ vs\. 1048576\)"`))
		translateExample(ctx, t, srv.Address)
	})
	t.Run("oversized Sync batch", func(t *testing.T) {
		// A raw stream, to see exactly what the server answers (a
		// client.SyncSession ends with this error too).
		stream, err := tributaryv1.NewTranslationServiceClient(dial(t, srv.Address)).Sync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}})
		_ = stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: &tributaryv1.SyncBatch{Id: 1, Upserts: overOneMiB(t, 201)}}})
		_, err = stream.Recv()
		if status.Code(err) != codes.ResourceExhausted {
			t.Errorf("a 1 MiB+ Sync batch ended with %v, want ResourceExhausted", err)
		}
		srv.waitLog(t, regexp.MustCompile(`level=WARN msg="finished call" .*grpc.method=Sync .*grpc.code=ResourceExhausted .*received message larger than max \(\d+ vs\. 1048576\)`))
		translateExample(ctx, t, srv.Address)
	})
	others.finish(ctx, t)
}

// junk writes prefix and then 64 KiB of random bytes to a new connection
// to address, and waits until the server closes it.
func junk(t *testing.T, address string, prefix []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", address, hangGuard)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	payload := make([]byte, 64<<10)
	_, _ = rand.Read(payload)
	// The server may close before reading everything: a failed write is
	// part of the expected outcome.
	_, _ = conn.Write(append(prefix, payload...))
	_ = conn.SetReadDeadline(time.Now().Add(hangGuard))
	if _, err := io.Copy(io.Discard, conn); err != nil && !isReset(err) {
		t.Fatalf("the server did not close the connection: %v", err)
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "connection reset")
}

// rawCodec sends a []byte message as it is.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*(v.(*[]byte)) = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// translateExample makes a Translate call on a new connection and fails the
// test unless it succeeds: proof the server still serves newcomers.
func translateExample(ctx context.Context, t *testing.T, address string) {
	t.Helper()
	resp, err := client.New(dial(t, address)).Translate(ctx, &tributaryv1.TranslateRequest{Objects: newTenant(999, 1, 1).all()})
	if err != nil {
		t.Fatalf("Translate after the fault: %v", err)
	}
	if len(resp.Clusters) != 1 {
		t.Fatalf("Translate after the fault gave %d Clusters, want 1", len(resp.Clusters))
	}
}
