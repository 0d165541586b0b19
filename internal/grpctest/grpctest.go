// Package grpctest serves gRPC servers in process for tests: on an
// in-memory listener, with the client connection and the server both
// stopped when the test ends. It is imported by tests only.
package grpctest

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/test/bufconn"
)

// Serve runs s on lis until the test ends, then stops it and reports a
// Serve error as a test failure.
func Serve(tb testing.TB, s *grpc.Server, lis net.Listener) {
	tb.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	tb.Cleanup(func() {
		s.Stop()
		if err := <-done; err != nil {
			tb.Errorf("Serve: %v", err)
		}
	})
}

// Bufconn serves s over an in-memory listener and returns a plaintext
// client connection to it; both are closed when the test ends.
func Bufconn(tb testing.TB, s *grpc.Server) *grpc.ClientConn {
	tb.Helper()
	lis := bufconn.Listen(1 << 20)
	Serve(tb, s, lis)
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	)
	if err != nil {
		tb.Fatalf("NewClient: %v", err)
	}
	tb.Cleanup(func() { conn.Close() })
	return conn
}

// RawCodec sends a []byte message as it is and receives one as it is, so a
// test can put bytes on the wire that no generated type would encode
// (grpc.ForceCodecV2(RawCodec{})). It takes the name "proto", the codec the
// server expects.
type RawCodec struct{}

// Marshal sends v, a []byte, unchanged.
func (RawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}

// Unmarshal stores the received bytes in v, a *[]byte.
func (RawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*(v.(*[]byte)) = data.Materialize()
	return nil
}

// Name is "proto".
func (RawCodec) Name() string { return "proto" }
