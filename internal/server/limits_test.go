package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/testproc"
)

// serveTCP serves s on a loopback port until the test ends and returns a
// dialer of new connections to it.
func serveTCP(t *testing.T, s *grpc.Server) func() *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, s, lis)
	return func() *grpc.ClientConn {
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
}

// started opens a Sync session and waits for the answer to its first
// batch, so the server surely holds the session.
func started(t *testing.T, conn *grpc.ClientConn) *syncClient {
	t.Helper()
	c := openSync(t.Context(), t, conn, nil)
	c.send(batch(1, service("a")))
	if d := c.delta(); d.GetBatchId() != 1 {
		t.Fatalf("first delta answers batch %d, want 1", d.GetBatchId())
	}
	return c
}

// wantRejected receives a BatchRejected for batch id with one violation at
// "batch".
func wantRejected(t *testing.T, c *syncClient, id uint64, reason, message string) {
	t.Helper()
	want := &tributaryv1.SyncResponse{Message: &tributaryv1.SyncResponse_Rejected{Rejected: &tributaryv1.BatchRejected{
		BatchId: id, Message: message,
		Violations: []*tributaryv1.FieldViolation{{Field: "batch", Reason: reason, Description: message}},
	}}}
	if diff := gocmp.Diff(want, c.recv(), protocmp.Transform()); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

// TestMaxSessions: beyond MaxSessions, a new Sync stream ends at once with
// ResourceExhausted; the sessions held and Translate go on, and a session
// that ends frees its slot.
func TestMaxSessions(t *testing.T) {
	opts := quietOptions()
	opts.MaxSessions = 2
	conn := serveTCP(t, NewGRPCServer(opts))()
	first, second := started(t, conn), started(t, conn)

	refused := openUnwelcome(t, conn)
	err := refused.end()
	if status.Code(err) != codes.ResourceExhausted || status.Convert(err).Message() != "the server holds 2 Sync sessions, its limit; retry later" {
		t.Errorf("third session: %v, want ResourceExhausted: the server holds 2 Sync sessions, its limit; retry later", err)
	}

	// The sessions held go on, and so does Translate.
	first.send(batch(2, service("b")))
	if d := first.delta(); d.GetBatchId() != 2 {
		t.Errorf("first session: delta for batch %d, want 2", d.GetBatchId())
	}
	if _, err := tributaryv1.NewTranslationServiceClient(conn).Translate(t.Context(), &tributaryv1.TranslateRequest{}); err != nil {
		t.Errorf("Translate while the sessions are full: %v", err)
	}

	// A session that ends gives its slot to the next.
	second.closeAndEnd()
	third := started(t, conn)
	third.closeAndEnd()
	first.closeAndEnd()
}

// TestMaxBatchObjects: a batch of more objects than MaxBatchObjects is
// rejected before it is decoded and changes nothing; one at the limit is
// applied.
func TestMaxBatchObjects(t *testing.T) {
	opts := quietOptions()
	opts.MaxBatchObjects = 3
	conn := dialBufconn(t, NewGRPCServer(opts))
	c := started(t, conn)

	tooMany := batch(2, service("b"), service("c"), plainES("h2c"))
	tooMany.Deletes = []*tributaryv1.ObjectReference{deleteOf(tributaryv1.ObjectKind_OBJECT_KIND_SERVICE, "ns", "a")}
	c.send(tooMany)
	wantRejected(t, c, 2, ReasonOutOfRange, "batch holds 4 upserts and deletes; a batch holds at most 3")

	// At the limit: the ExtensionService's delta shows Service a is still
	// there (its status is valid), so the rejected delete did nothing.
	c.send(batch(3, plainES("h2c"), service("b"), slice("a", "10.0.0.1")))
	d := c.delta()
	if d.GetBatchId() != 3 || len(d.GetStatuses()) != 1 || d.GetStatuses()[0].GetClusterName() != plainCluster {
		t.Errorf("batch at the limit: got %v, want batch 3 with plain valid", d)
	}
	c.closeAndEnd()
}

// TestMaxSessionBytes: a batch that would take a session over
// MaxSessionBytes is rejected and changes nothing; deleting objects makes
// room again; another session has a budget of its own.
func TestMaxSessionBytes(t *testing.T) {
	addresses := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)
		}
		return out
	}
	first := batch(1, plainES("h2c"), service("a"), slice("a", addresses(10)...))
	grow := batch(2, slice("a", addresses(200)...))
	// The sizes the server estimates, from a session of its own.
	mirror := session.New(source.Settings{})
	sizeOf := func(pb *tributaryv1.SyncBatch) int64 {
		var p problems
		b := decodeBatch(pb, nil, &p)
		if p.count > 0 {
			t.Fatalf("batch %d: %v", pb.GetId(), p.violations)
		}
		n := mirror.SizeChange(b)
		if _, err := mirror.Apply(t.Context(), b, syncLimits{}.output(false)); err != nil {
			t.Fatalf("batch %d: %v", pb.GetId(), err)
		}
		return n
	}
	held := sizeOf(first)
	growth := sizeOf(grow)
	limit := held + growth - 1

	opts := quietOptions()
	opts.MaxSessionBytes = limit
	conn := dialBufconn(t, NewGRPCServer(opts))
	c := openSync(t.Context(), t, conn, nil)
	c.send(first)
	if d := c.delta(); d.GetBatchId() != 1 {
		t.Fatalf("first batch: %v", d)
	}
	c.send(grow)
	wantRejected(t, c, 2, ReasonResourceExhausted, fmt.Sprintf(
		"batch would bring the session to about %d bytes, over its limit of %d (it holds about %d): delete objects first, or spread them over several sessions",
		held+growth, limit, held))

	// Nothing changed: sending the first batch's slice again changes
	// nothing either (with the 200 endpoints applied, it would).
	c.send(batch(3, slice("a", addresses(10)...)))
	if diff := gocmp.Diff(&tributaryv1.SyncDelta{BatchId: 3}, c.delta(), protocmp.Transform(), protocmp.IgnoreFields(&tributaryv1.SyncDelta{}, "version")); diff != "" {
		t.Errorf("batch 3 (-want +got):\n%s", diff)
	}

	// Another session fits the big slice: budgets are per session.
	other := openSync(t.Context(), t, conn, nil)
	other.send(batch(1, slice("a", addresses(200)...)))
	if d := other.delta(); d.GetBatchId() != 1 {
		t.Errorf("other session: %v", d)
	}
	other.closeAndEnd()

	// Deleting the ExtensionService makes room for the endpoints.
	c.send(&tributaryv1.SyncBatch{Id: 4, Deletes: []*tributaryv1.ObjectReference{deleteOf(tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE, "ns", "plain")}})
	if d := c.delta(); d.GetBatchId() != 4 {
		t.Fatalf("delete: %v", d)
	}
	c.send(batch(5, slice("a", addresses(200)...)))
	if d := c.delta(); d.GetBatchId() != 5 {
		t.Errorf("after the delete: %v, want the batch applied", d)
	}
	c.closeAndEnd()
}

// TestMaxConcurrentStreams: a connection carries at most
// MaxConcurrentStreams calls at once; one more waits (here until its
// deadline) while other connections are served, and goes through once a
// call ends.
func TestMaxConcurrentStreams(t *testing.T) {
	opts := quietOptions()
	opts.MaxConcurrentStreams = 2
	dial := serveTCP(t, NewGRPCServer(opts))
	conn := dial()
	first, second := started(t, conn), started(t, conn)

	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, err := tributaryv1.NewTranslationServiceClient(conn).Translate(ctx, &tributaryv1.TranslateRequest{})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("third call on the connection: %v, want DeadlineExceeded (waiting for a stream)", err)
	}
	if _, err := tributaryv1.NewTranslationServiceClient(dial()).Translate(t.Context(), &tributaryv1.TranslateRequest{}); err != nil {
		t.Errorf("call on another connection: %v", err)
	}

	first.closeAndEnd()
	if _, err := tributaryv1.NewTranslationServiceClient(conn).Translate(t.Context(), &tributaryv1.TranslateRequest{}); err != nil {
		t.Errorf("call after a stream ended: %v", err)
	}
	second.closeAndEnd()
}

// TestSyncMessageSizeLimit: a Sync message over MaxRecvMsgSize ends its
// stream with ResourceExhausted, and the call log says so; other sessions
// go on.
func TestSyncMessageSizeLimit(t *testing.T) {
	var log testproc.Buffer
	opts := Options{Logger: slog.New(slog.NewTextHandler(&log, nil)), MaxRecvMsgSize: 1024}
	conn := dialBufconn(t, NewGRPCServer(opts))
	bystander := started(t, conn)

	big := batch(1, slice("a", make([]string, 100)...))
	for i, e := range big.GetUpserts()[0].GetEndpointSlice().GetEndpoints() {
		e.Addresses = []string{fmt.Sprintf("10.0.0.%d", i+1)}
	}
	size := proto.Size(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: big}})
	want := fmt.Sprintf("grpc: received message larger than max (%d vs. 1024)", size)
	// gRPC ends the stream itself the moment Recv fails, racing the
	// handler's own end: repeat, on a few streams at once, to give a wrong
	// log line its chance, with the sender waiting for a batch (the first)
	// or taking a delta out (the second, after a batch that was answered).
	// No more calls than one client's burst of warnings (peerWarningBurst),
	// which are all logged.
	const calls, concurrently = peerWarningBurst, 5
	var wg sync.WaitGroup
	for g := range concurrently {
		wg.Go(func() {
			for i := g; i < calls; i += concurrently {
				c := openSync(t.Context(), t, conn, nil)
				if i%2 == 1 {
					c.send(batch(7, service("small")))
					c.delta()
				}
				c.send(big)
				if err := c.end(); status.Code(err) != codes.ResourceExhausted || status.Convert(err).Message() != want {
					t.Errorf("oversized batch: %v, want ResourceExhausted: %s", err, want)
				}
			}
		})
	}
	wg.Wait()
	logged := regexp.MustCompile(`level=WARN msg="finished call" .*grpc.method=Sync .*grpc.code=ResourceExhausted grpc.error="rpc error: code = ResourceExhausted desc = ` + regexp.QuoteMeta(want) + `"`)
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(log.String(), "finished call") < calls && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the handler ends after the client has its answer
	}
	if got := log.String(); len(logged.FindAllString(got, -1)) != calls {
		t.Errorf("want %d calls logged as ended by ResourceExhausted; log:\n%s", calls, got)
	}

	bystander.send(batch(2, service("b")))
	if d := bystander.delta(); d.GetBatchId() != 2 {
		t.Errorf("other session: %v", d)
	}
	bystander.closeAndEnd()
}

// TestSyncReplyOverSendLimit: an answer over MaxSendMsgSize ends the
// stream with gRPC's ResourceExhausted, and the call log says the same.
// Deltas never exceed the limit (a batch that would make them is
// rejected), so the answer here is that BatchRejected itself, over a limit
// of 300 bytes: the one answer whose size the session does not bound.
func TestSyncReplyOverSendLimit(t *testing.T) {
	var log testproc.Buffer
	conn := dialBufconn(t, NewGRPCServer(Options{Logger: slog.New(slog.NewTextHandler(&log, nil)), MaxSendMsgSize: 300}))
	c := openSync(t.Context(), t, conn, nil)
	var endpoints []string
	for i := range 50 {
		endpoints = append(endpoints, fmt.Sprintf("10.0.0.%d", i+1))
	}
	c.send(batch(1, plainES("h2c"), service("a"), slice("a", endpoints...)))
	err := c.end()
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "trying to send message larger than max") {
		t.Fatalf("answer over the send limit: %v, want ResourceExhausted: trying to send message larger than max", err)
	}
	logged := regexp.MustCompile(`msg="finished call" .*grpc.method=Sync .*grpc.code=ResourceExhausted .*trying to send message larger than max \(\d+ vs\. 300\)`)
	deadline := time.Now().Add(5 * time.Second)
	for !logged.MatchString(log.String()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the handler ends after the client has its answer
	}
	if !logged.MatchString(log.String()) {
		t.Errorf("the call was not logged as ResourceExhausted; log:\n%s", log.String())
	}
}
