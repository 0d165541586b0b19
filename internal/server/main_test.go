package server

import (
	"io"
	"log/slog"
	"net"
	"os"
	"testing"

	"github.com/tributary-dev/tributary/internal/grpctest"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/grpclog"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// server and connection a test opens must be closed. gRPC's own log goes
// through grpcLog, as in the command, so a test can see what it logs (see
// captureGRPCLog); otherwise only its errors reach the test's output, as
// with gRPC's default logger.
func TestMain(m *testing.M) {
	grpcLog.Use(grpcErrorsOnly)
	grpclog.SetLoggerV2(&grpcLog)
	goleak.VerifyTestMain(m)
}

var (
	grpcLog        GRPCLog
	grpcErrorsOnly = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
)

// captureGRPCLog sends gRPC's own log to l until the test ends.
func captureGRPCLog(t *testing.T, l *slog.Logger) {
	grpcLog.Use(l)
	t.Cleanup(func() { grpcLog.Use(grpcErrorsOnly) })
}

// serve runs s on lis until the test ends.
func serve(t *testing.T, s *grpc.Server, lis net.Listener) { grpctest.Serve(t, s, lis) }

// dialBufconn serves s over an in-memory listener and returns a client
// connection to it; both are closed when the test ends.
func dialBufconn(t *testing.T, s *grpc.Server) *grpc.ClientConn { return grpctest.Bufconn(t, s) }

// dialTCP serves s on a loopback TCP port and returns a client connection.
func dialTCP(t *testing.T, s *grpc.Server) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	serve(t, s, lis)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// quietOptions keeps call logs out of the test output.
func quietOptions() Options {
	return Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}
