package server

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// TestSyncDrainReadsNothingMore: once the server drains, a Sync call
// answers the batches it applied and ends; a batch the client sends after
// the drain began is neither applied nor answered. The client here stops
// reading, so the server's answers wait, sends a malformed batch (whose
// rejection waits behind them, if it is read before the drain) and then,
// after the drain began, a valid one. The old handler asked for that valid
// batch as soon as the rejection was handed on, and applied it.
func TestSyncDrainReadsNothingMore(t *testing.T) {
	const batches = 300
	draining := make(chan struct{})
	opts := quietOptions()
	opts.Draining = draining
	// Recv calls: the start, every batch, the malformed one.
	svc := &countingService{
		TranslationServiceServer: translationService{logger: opts.Logger, limits: newSyncLimits(opts), draining: draining},
		reachedAt:                batches + 2,
		reached:                  make(chan struct{}),
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, newGRPCServer(opts, svc), lis)
	// A fixed, small window (no BDP growth) makes the server's answers
	// wait for the reader after a few of them.
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })

	c := openSync(t.Context(), t, conn, nil)
	c.send(batch(1, plainES("h2c"), service("a"), slice("a", churnAddresses(0)...)))
	for i := 2; i <= batches; i++ {
		c.send(batch(uint64(i), slice("a", churnAddresses(i)...)))
	}
	const rejected, late = batches + 1, batches + 2
	c.send(batch(rejected, serviceObject(meta("ns", ""))))
	<-svc.reached // the malformed batch is being read
	close(draining)
	c.send(batch(late, slice("a", churnAddresses(late)...)))

	var answered []uint64
	for {
		resp, err := c.stream.Recv()
		if err != nil {
			if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "shutting down") {
				t.Errorf("the call ended with %v, want Unavailable saying the server is shutting down", err)
			}
			break
		}
		switch {
		case resp.GetDelta() != nil:
			answered = append(answered, resp.GetDelta().GetBatchId())
		case resp.GetRejected() != nil:
			answered = append(answered, resp.GetRejected().GetBatchId())
		}
	}
	// The malformed batch may have been read before the loop saw the
	// drain, or not: its rejection may come, after every delta. The batch
	// sent after the drain began must never be answered.
	if n := len(answered); n > 0 && answered[n-1] == rejected {
		answered = answered[:n-1]
	}
	if n := len(answered); n == 0 || answered[n-1] != batches {
		t.Errorf("answers to batches %v; want them to end with the delta of batch %d (and maybe the rejection of batch %d), and nothing for batch %d, sent after the drain began",
			answered, batches, rejected, late)
	}
}

// panickingStream panics in its RecvMsg number panicAt (the server
// receives with RecvMsg, into a message type of its own).
type panickingStream struct {
	grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]
	recvs   *int
	panicAt int
}

func (s panickingStream) RecvMsg(m any) error {
	*s.recvs++
	if *s.recvs == s.panicAt {
		panic("a stream wrapper broke")
	}
	return s.BidiStreamingServer.RecvMsg(m)
}

// panickingService breaks the stream of its first Sync call only.
type panickingService struct {
	tributaryv1.TranslationServiceServer
	panicAt int
	calls   *atomic.Int64
}

func (s panickingService) Sync(stream grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) error {
	if s.calls.Add(1) > 1 {
		return s.TranslationServiceServer.Sync(stream)
	}
	recvs := 0 // Recv runs on one goroutine at a time
	return s.TranslationServiceServer.Sync(panickingStream{stream, &recvs, s.panicAt})
}

// TestSyncRecvPanic: a panic in Recv, which runs on a goroutine of its
// own, ends the call with Internal after the answers owed, as a panic of
// the handler would, and the server goes on serving.
func TestSyncRecvPanic(t *testing.T) {
	opts := quietOptions()
	conn := dialBufconn(t, newGRPCServer(opts, panickingService{NewTranslationService(), 3, new(atomic.Int64)}))
	c := openSync(t.Context(), t, conn, nil)
	c.send(batch(1, service("a")))
	if got := c.delta().GetBatchId(); got != 1 {
		t.Errorf("answer to batch %d, want 1", got)
	}
	if err := c.end(); status.Code(err) != codes.Internal {
		t.Errorf("the call ended with %v, want Internal", err)
	}
	next := openSync(t.Context(), t, conn, nil)
	next.send(batch(1, service("a")))
	next.delta()
	next.closeAndEnd()
}
