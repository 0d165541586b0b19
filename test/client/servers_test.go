package client_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/server"
)

// switchboard serves one gRPC server at a time over in-memory listeners;
// its connection always dials the current one, so a test can stop a server
// mid-session and put another in its place, as a rolling restart does.
type switchboard struct {
	t    *testing.T
	mu   sync.Mutex
	lis  *bufconn.Listener
	stop func()
}

func newSwitchboard(t *testing.T) *switchboard {
	sb := &switchboard{t: t}
	t.Cleanup(sb.stopServer)
	return sb
}

// serve stops the current server, if any, and serves s on a new listener.
func (sb *switchboard) serve(s *grpc.Server) {
	sb.stopServer()
	lis := bufconn.Listen(1 << 20)
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	sb.mu.Lock()
	sb.lis = lis
	sb.stop = func() {
		s.Stop()
		if err := <-done; err != nil {
			sb.t.Errorf("Serve: %v", err)
		}
	}
	sb.mu.Unlock()
}

// serveReal serves a new real TranslationService.
func (sb *switchboard) serveReal() {
	sb.serve(server.NewGRPCServer(server.Options{Logger: quietLogger()}))
}

func (sb *switchboard) stopServer() {
	sb.mu.Lock()
	stop := sb.stop
	sb.stop = nil
	sb.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// conn returns a connection that reconnects quickly: gRPC's default
// reconnect backoff starts at a second.
func (sb *switchboard) conn() *grpc.ClientConn {
	conn, err := grpc.NewClient("passthrough:///switchboard",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			sb.mu.Lock()
			lis := sb.lis
			sb.mu.Unlock()
			return lis.DialContext(ctx)
		}),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 5 * time.Millisecond, Multiplier: 2, MaxDelay: 50 * time.Millisecond},
			MinConnectTimeout: 5 * time.Second,
		}),
	)
	if err != nil {
		sb.t.Fatalf("NewClient: %v", err)
	}
	sb.t.Cleanup(func() { conn.Close() })
	return conn
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// scripted is a TranslationService whose Sync streams follow a script, to
// make a server misbehave or change its mind in ways the real one never
// does.
type scripted struct {
	tributaryv1.UnimplementedTranslationServiceServer
	mu      sync.Mutex
	streams int
	starts  []*tributaryv1.SyncStart
	batches [][]*tributaryv1.SyncBatch
	script  func(n int, recv func() *tributaryv1.SyncBatch, send func(*tributaryv1.SyncResponse)) error
}

func (f *scripted) Sync(st grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) error {
	f.mu.Lock()
	f.streams++
	n := f.streams
	f.batches = append(f.batches, nil)
	f.mu.Unlock()
	start, err := st.Recv()
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.starts = append(f.starts, start.GetStart())
	f.mu.Unlock()
	var streamErr error
	recv := func() *tributaryv1.SyncBatch {
		req, err := st.Recv()
		if err != nil {
			streamErr = err
			return nil
		}
		f.mu.Lock()
		f.batches[n-1] = append(f.batches[n-1], req.GetBatch())
		f.mu.Unlock()
		return req.GetBatch()
	}
	send := func(r *tributaryv1.SyncResponse) {
		if err := st.Send(r); err != nil {
			streamErr = err
		}
	}
	if err := f.script(n, recv, send); err != nil {
		return err
	}
	if streamErr != nil {
		return streamErr
	}
	<-st.Context().Done()
	return nil
}

func delta(d *tributaryv1.SyncDelta) *tributaryv1.SyncResponse {
	return &tributaryv1.SyncResponse{Message: &tributaryv1.SyncResponse_Delta{Delta: d}}
}

func resource(t *testing.T, m proto.Message, name, version string) *tributaryv1.Resource {
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return &tributaryv1.Resource{Name: name, Version: version, Resource: a}
}
