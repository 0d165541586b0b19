package attack

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/grpctest"
	"github.com/tributary-dev/tributary/internal/testproc"
)

// shutdownTimeout is the --shutdown-timeout of the deadline scenario, and
// shutdownSlack what the server may take beyond it to exit: a bound on the
// test, not a measure of speed.
const (
	shutdownTimeout = 3 * time.Second
	shutdownSlack   = 5 * time.Second
)

// idleGuard bounds the wait for the server's CPU to go idle once every
// expensive call has ended. Uncancelled, the scenario's calls would keep
// both cores busy several times longer.
const idleGuard = 5 * time.Second

// endedTranslate matches the server's log line for the end of a Translate
// call, with its code: "finished call" for a call that reached the service,
// or "refused a call before it reached the service" for one whose deadline
// passed while gRPC was still reading it.
var endedTranslate = regexp.MustCompile(`msg="(finished call|refused a call before it reached the service)" .*grpc\.method=(?:Translate|/tributary\.v1\.TranslationService/Translate) .*grpc\.code=(\w+)`)

// concurrently runs call n times at once, each over a connection of its
// own, and returns their errors in order; see readyConns and callAll.
func concurrently(t *testing.T, srv *server, n int, call func(context.Context, *grpc.ClientConn) error) []error {
	t.Helper()
	return callAll(t.Context(), readyConns(t, srv, n), call)
}

// readyConns opens n connections to the server and waits until they are
// ready, so that calls made over them do not spend their deadlines on
// connecting.
func readyConns(t *testing.T, srv *server, n int) []*grpc.ClientConn {
	t.Helper()
	conns := make([]*grpc.ClientConn, n)
	for i := range conns {
		conns[i] = dial(t, srv.Address)
		waitReady(t, conns[i])
	}
	return conns
}

// callAll runs call over each of conns at once, closes them when every
// call has returned (the attackers leave: what their connections held on
// the server must go too) and returns the calls' errors in order. It may
// run on a goroutine of its own: it does not touch the test.
func callAll(ctx context.Context, conns []*grpc.ClientConn, call func(context.Context, *grpc.ClientConn) error) []error {
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, conn := range conns {
		wg.Go(func() { errs[i] = call(ctx, conn) })
	}
	wg.Wait()
	for _, conn := range conns {
		_ = conn.Close()
	}
	return errs
}

// waitReady connects conn and waits until it is ready.
func waitReady(t *testing.T, conn *grpc.ClientConn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	defer cancel()
	conn.Connect()
	for state := conn.GetState(); state != connectivity.Ready; state = conn.GetState() {
		if !conn.WaitForStateChange(ctx, state) {
			t.Fatalf("the connection to %s is %v, not ready, after %v", conn.Target(), state, guard)
		}
	}
}

// encoded is a request marshalled once, so that concurrent calls send it
// at once instead of each marshalling it first (slowly, under the race
// detector), and so that a call's deadline is spent on the server.
type encoded []byte

func encode(t *testing.T, req *tributaryv1.TranslateRequest) encoded {
	t.Helper()
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// translate calls Translate with the encoded request over conn; the
// answer is read but not decoded.
func (e encoded) translate(ctx context.Context, conn *grpc.ClientConn) error {
	var reply []byte
	return conn.Invoke(ctx, tributaryv1.TranslationService_Translate_FullMethodName, []byte(e), &reply, grpc.ForceCodecV2(grpctest.RawCodec{}))
}

// stall makes the call over a connection of its own, then never reads the
// answer: the server's send of anything over the first 64 KiB (the
// HTTP/2 stream's window, which grows only as the client reads) waits for
// the client. The connection is closed when the test ends.
func (e encoded) stall(t *testing.T, srv *server) {
	t.Helper()
	// A fixed window: gRPC's default, growing by itself, would let the
	// server send on.
	conn := dial(t, srv.Address, grpc.WithInitialWindowSize(1<<16), grpc.WithInitialConnWindowSize(1<<16))
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{}, tributaryv1.TranslationService_Translate_FullMethodName, grpc.ForceCodecV2(grpctest.RawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg([]byte(e)); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
}

// Row 7: four expensive Translate calls whose deadline passes while the
// server translates. The client gets DeadlineExceeded; so do the server's
// log line and grpc_server_handled_total; the server stops working on them
// (its CPU goes idle). Then four more calls of the kind (smaller), whose
// clients never read the answer, are in flight when SIGTERM comes: the
// server exits within --shutdown-timeout and a few seconds.
func deadlineAndShutdown(t *testing.T) {
	r := report(t)
	// The calls' output (85 and 102 MB) stays under the send limit, so
	// that without a deadline they would be translated, not refused. The
	// deadline is a small fraction of what four of them take together on
	// two cores (about 0.5 s each on the machine of BENCHMARKS.md), yet
	// ample for a request of a few hundred KB to be read: the server must
	// be caught translating, however fast it gets. What it holds when the
	// deadline passes grows with the deadline, not with the calls' size.
	srv := startServer(t, r, ballastBytes, "--shutdown-timeout", shutdownTimeout.String(), "--max-response-size", "128Mi")
	deadline := 150 * time.Millisecond
	fanOut := sized([3]int{400, 20, 400}, [3]int{480, 20, 400})
	req := encode(t, fanOutRequest(fanOut[0], fanOut[1], fanOut[2]))
	r.sent = fmt.Sprintf("4 concurrent Translate calls with a %v deadline (%s each, %d ExtensionServices of %d×%d endpoints), then 4 smaller and SIGTERM",
		deadline, kilobytes(len(req)), fanOut[0], fanOut[1], fanOut[2])
	endedBefore := len(endedTranslate.FindAllString(srv.Log(), -1))

	var errs []error
	r.timed(func() {
		errs = concurrently(t, srv, 4, func(ctx context.Context, conn *grpc.ClientConn) error {
			ctx, cancel := context.WithTimeout(ctx, deadline)
			defer cancel()
			return req.translate(ctx, conn)
		})
	})
	r.got = outcome(errs[0])
	for i, err := range errs {
		if status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("expensive call %d ended with %v, want DeadlineExceeded (make the request more expensive if it was OK)", i, err)
		}
	}

	srv.waitIdle(t)
	// A call whose deadline passed before gRPC had read it never reached
	// the service (which then did no work for it, as it should): on a
	// loaded machine that happens. The calls that did reach it are the
	// ones to check.
	var reached []string
	testproc.WaitFor(t, "the server to log the end of the four calls", func() bool {
		ended := endedTranslate.FindAllStringSubmatch(srv.Log(), -1)[endedBefore:]
		reached = reached[:0]
		for _, m := range ended {
			if m[1] == "finished call" {
				reached = append(reached, m[2])
			}
		}
		return len(ended) >= 4
	})
	if len(reached) == 0 {
		t.Fatalf("none of the four calls reached the service before its deadline: make the deadline longer")
	}
	for _, code := range reached {
		if code != "DeadlineExceeded" {
			t.Errorf("the server logged the %d calls that reached the service with codes %v, want DeadlineExceeded each", len(reached), reached)
			break
		}
	}
	if n, _ := testproc.Metric(srv.scrape(t), "grpc_server_handled_total", `grpc_method="Translate"`, `grpc_code="DeadlineExceeded"`); n != float64(len(reached)) {
		t.Errorf(`grpc_server_handled_total{grpc_method="Translate",grpc_code="DeadlineExceeded"} is %v, want %d (the calls that reached the service)`, n, len(reached))
	}
	srv.checkLegitStillServed(t)
	srv.backToLevel(t)
	srv.checkPeakRSS(t)

	// SIGTERM with four such calls in flight whose clients never read the
	// answer: without the timeout, a graceful stop would wait for them
	// forever.
	// Their answers need only be larger than the HTTP/2 window: a tenth
	// of the fan-out's (about 8 MB) keeps the server's memory down.
	stalled := encode(t, fanOutRequest(fanOut[0]/10, fanOut[1], fanOut[2]))
	started, _ := testproc.Metric(srv.scrape(t), "grpc_server_started_total", `grpc_method="Translate"`)
	for range 4 {
		stalled.stall(t, srv)
	}
	// The server counts a unary call as started once it has read its
	// request.
	srv.waitMetric(t, started+4, "grpc_server_started_total", `grpc_method="Translate"`)
	srv.notePeak()
	srv.Signal(t, syscall.SIGTERM)
	if code := srv.Wait(t, shutdownTimeout+shutdownSlack); code != 0 {
		t.Errorf("the server exited with %d after SIGTERM, want 0", code)
	}
}

// waitIdle waits until the server's CPU time stops growing: over a window
// of half a second it may use a tenth of one core (a scrape, a timer), not
// more. It fails the test after idleGuard.
func (srv *server) waitIdle(t *testing.T) {
	t.Helper()
	const window, ticks = 500 * time.Millisecond, 5 // at the usual 100 ticks per second
	deadline := time.Now().Add(idleGuard)
	last := srv.cpuTicks(t)
	for {
		time.Sleep(window)
		now := srv.cpuTicks(t)
		if now-last <= ticks {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's CPU did not go idle within %v of the calls' deadline: %d ticks in the last %v", idleGuard, now-last, window)
		}
		last = now
	}
}
