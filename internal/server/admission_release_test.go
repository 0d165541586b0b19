package server

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// callEvents is a stats handler that runs after the server's own: it
// reports each message gRPC decoded and each call's end, by which time the
// server has given back what the call held.
type callEvents struct {
	decoded, ended chan struct{}
}

func newCallEvents() callEvents {
	return callEvents{decoded: make(chan struct{}, 64), ended: make(chan struct{}, 64)}
}

func (e callEvents) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (e callEvents) HandleRPC(_ context.Context, s stats.RPCStats) {
	switch s.(type) {
	case *stats.InPayload:
		e.decoded <- struct{}{}
	case *stats.End:
		e.ended <- struct{}{}
	}
}

func (callEvents) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (callEvents) HandleConn(context.Context, stats.ConnStats) {}

// observedOptions are quietOptions with a budget of maxInflight bytes that
// the test can look at, and events.
func observedOptions(maxInflight int64) (Options, *admissionCodec, callEvents) {
	opts := quietOptions()
	codec := &admissionCodec{budget: &inflightBudget{max: maxInflight}}
	events := newCallEvents()
	opts.admission, opts.statsHandlers = codec, []stats.Handler{events}
	return opts, codec, events
}

// assertNothingHeld checks that no byte of the budget is held and no
// verdict waits in the codec.
func assertNothingHeld(t *testing.T, codec *admissionCodec) {
	t.Helper()
	if used := codec.budget.used.Load(); used != 0 {
		t.Errorf("the budget has %d bytes in use with no call open, want 0", used)
	}
	waiting := 0
	codec.decoded.Range(func(any, any) bool { waiting++; return true })
	if waiting != 0 {
		t.Errorf("the codec keeps %d verdicts with no call open, want 0", waiting)
	}
}

// rawCall opens method as a bidi stream, whatever its real shape, so a
// test can send what the method's own client never would.
func rawCall(ctx context.Context, t *testing.T, conn *grpc.ClientConn, method string) grpc.ClientStream {
	t.Helper()
	stream, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method)
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

// TestBudgetGivenBackWhenCallsEnd: whichever way a call ends, what it held
// of the in-flight budget is given back and the codec keeps nothing of it.
// The abusive paths never reach the interceptors that see the request
// (gRPC fails the call while reading on to the request's end), so only the
// call's End can give their bytes back: before it did, each such call kept
// its request's share for good, and a few of them refused every call until
// a restart.
func TestBudgetGivenBackWhenCallsEnd(t *testing.T) {
	const budget = DecodeAmplification * 3000
	cardinality := "cardinality violation: received multiple request messages for non-client-streaming RPC"
	for _, tc := range []struct {
		name string
		call func(t *testing.T, conn *grpc.ClientConn, events callEvents)
	}{{
		name: "a Translate answered",
		call: func(t *testing.T, conn *grpc.ClientConn, _ callEvents) {
			if _, err := tributaryv1.NewTranslationServiceClient(conn).Translate(t.Context(), paddedRequest(t, "other", 1400)); err != nil {
				t.Fatal(err)
			}
		},
	}, {
		name: "a Translate refused for the budget",
		call: func(t *testing.T, conn *grpc.ClientConn, _ callEvents) {
			_, err := tributaryv1.NewTranslationServiceClient(conn).Translate(t.Context(), paddedRequest(t, "other", 3001))
			if status.Code(err) != codes.ResourceExhausted {
				t.Fatalf("Translate over the budget: %v, want ResourceExhausted", err)
			}
		},
	}, {
		name: "a Translate whose client resets the stream before the request's end",
		call: func(t *testing.T, conn *grpc.ClientConn, events callEvents) {
			ctx, cancel := context.WithCancel(t.Context())
			stream := rawCall(ctx, t, conn, tributaryv1.TranslationService_Translate_FullMethodName)
			if err := stream.SendMsg(paddedRequest(t, "other", 1400)); err != nil {
				t.Fatal(err)
			}
			<-events.decoded // the server holds the request's share now
			cancel()
		},
	}, {
		name: "a Translate sent two requests",
		call: func(t *testing.T, conn *grpc.ClientConn, _ callEvents) {
			stream := rawCall(t.Context(), t, conn, tributaryv1.TranslationService_Translate_FullMethodName)
			_ = stream.SendMsg(paddedRequest(t, "other", 100))
			_ = stream.SendMsg(paddedRequest(t, "other", 1400))
			_ = stream.CloseSend()
			err := stream.RecvMsg(new(tributaryv1.TranslateResponse))
			if status.Code(err) != codes.Internal || status.Convert(err).Message() != cardinality {
				t.Fatalf("two requests on Translate: %v, want Internal %q", err, cardinality)
			}
		},
	}, {
		name: "a health Watch sent two requests",
		call: func(t *testing.T, conn *grpc.ClientConn, _ callEvents) {
			stream := rawCall(t.Context(), t, conn, healthpb.Health_Watch_FullMethodName)
			_ = stream.SendMsg(&healthpb.HealthCheckRequest{})
			_ = stream.SendMsg(&healthpb.HealthCheckRequest{Service: strings.Repeat("a", 1400)})
			_ = stream.CloseSend()
			err := stream.RecvMsg(new(healthpb.HealthCheckResponse))
			if status.Code(err) != codes.Internal || status.Convert(err).Message() != cardinality {
				t.Fatalf("two requests on health Watch: %v, want Internal %q", err, cardinality)
			}
		},
	}, {
		name: "a Sync call",
		call: func(t *testing.T, conn *grpc.ClientConn, _ callEvents) {
			c := openSync(t.Context(), t, conn, nil)
			c.send(batch(1, plainES("h2c"), service("a"), slice("a", "10.0.0.1")))
			c.delta()
			c.closeAndEnd()
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			opts, codec, events := observedOptions(budget)
			conn := dialBufconn(t, NewGRPCServer(opts))
			// Twice: the second call would be refused if the first
			// had kept its share.
			for range 2 {
				tc.call(t, conn, events)
				<-events.ended
				assertNothingHeld(t, codec)
			}
		})
	}
}

// TestSilentSyncClientHoldsNoBudget: a Sync client that stops reading
// leaves its last batch rejected, the rejection waiting to be sent, and
// nothing more is read from it. The batch is handled, so its share of the
// in-flight budget goes back then, not at the next read, which never
// comes: before, such a client kept its last batch's share (up to
// DecodeAmplification times the message size limit) for as long as it
// kept the stream open.
func TestSilentSyncClientHoldsNoBudget(t *testing.T) {
	opts, codec, events := observedOptions(DecodeAmplification * 500_000)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, NewGRPCServer(opts), lis)
	dial := func(o ...grpc.DialOption) *grpc.ClientConn {
		conn, err := grpc.NewClient(lis.Addr().String(), append(o, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	// A small fixed window (no growth), as any client that does not read
	// has: the answers to the first batches fill it, and the rejection of
	// the last waits behind them.
	silent := openSync(t.Context(), t, dial(grpc.WithInitialWindowSize(65535), grpc.WithInitialConnWindowSize(65535)), nil)
	silent.send(batch(1, plainES("h2c"), service("a"), slice("a", addresses(10000, 1)...)))
	silent.send(batch(3, slice("a", addresses(10000, 3)...)))
	silent.send(batch(4, slice("a", addresses(10000, 4)...)))
	silent.send(batch(2, service(strings.Repeat("x", 300)), slice("b", addresses(15000, 2)...)))
	for range 5 { // the start and four batches
		<-events.decoded
	}
	waitUntil(t, "the silent client's batches to be given back", func() bool { return codec.budget.used.Load() == 0 })

	other := tributaryv1.NewTranslationServiceClient(dial())
	if _, err := other.Translate(t.Context(), paddedRequest(t, "other", 300_000)); err != nil {
		t.Errorf("a Translate of 300 KB beside the silent client: %v, want OK", err)
	}
}

// addresses are n distinct IPv4 addresses in 10.base.0.0/16.
func addresses(n, base int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.%d.%d.%d", base, i/250, i%250+1)
	}
	return out
}

// waitUntil polls cond until it holds, failing after a minute: what it
// waits for follows from events already seen, without one to wait on.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(time.Minute)
	for !cond() {
		select {
		case <-deadline:
			t.Fatalf("gave up waiting for %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}
