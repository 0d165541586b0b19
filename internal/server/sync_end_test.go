package server

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/testproc"
)

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
		checkInvalidArgument(t, c.end(), `start.settings.connectTimeout "-1s" is negative (and 1 more problem)`, []violation{
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
