package loadtest

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/grpctest"
)

// TestJunkAndOversized: random bytes on the gRPC port (before and after a
// valid HTTP/2 preface), a Sync message of random bytes, and messages over
// --max-message-size, one unary and one on a Sync stream, each refused
// while the other sessions go on being served and a Translate succeeds
// right after. Each refusal has its reason in the server's own log at the
// default level: why a connection was dropped (gRPC's reason, carried into
// it), why a Sync stream ended, and which call gRPC refused before the
// service saw it.
func TestJunkAndOversized(t *testing.T) {
	srv := startServer(t, nil, "--max-message-size", "1Mi")
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
			tributaryv1.TranslationService_Sync_FullMethodName, grpc.ForceCodecV2(grpctest.RawCodec{}))
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
		if code := status.Code(err); code != codes.InvalidArgument {
			t.Errorf("a Sync message of random bytes ended the stream with %v, want InvalidArgument", err)
		}
		srv.waitLog(t, regexp.MustCompile(`level=WARN msg="finished call" .*grpc.method=Sync .*grpc.code=InvalidArgument .*grpc.error=".*unmarshal`))
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
