package loadtest

import (
	"context"
	"net"
	"regexp"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
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
