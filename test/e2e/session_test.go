package e2e

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// publication says where a Sync session publishes over xDS: the fields of
// SyncStart that client.Sync does not set itself.
type publication struct {
	nodeGroup        string
	publishListeners bool
}

// nackLog collects the XdsNack messages of the sessions on one connection.
type nackLog struct {
	mu    sync.Mutex
	nacks []*tributaryv1.XdsNack
}

func (l *nackLog) add(n *tributaryv1.XdsNack) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nacks = append(l.nacks, proto.CloneOf(n))
}

func (l *nackLog) all() []*tributaryv1.XdsNack {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*tributaryv1.XdsNack(nil), l.nacks...)
}

// dialSync connects to a Tributary Sync address.
func dialSync(tb testing.TB, address string) *grpc.ClientConn {
	tb.Helper()
	conn, err := grpc.NewClient(address,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(client.DefaultMaxMsgSize), grpc.MaxCallSendMsgSize(client.DefaultMaxMsgSize)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return conn
}

// openSync opens a Sync session on conn that publishes to pub and records
// the NACKs of its xDS clients in the returned log. It retries quickly, so
// a restarted server is found again within a second.
func openSync(tb testing.TB, conn *grpc.ClientConn, pub publication) (*client.SyncSession, *nackLog) {
	tb.Helper()
	nacks := &nackLog{}
	logger := slog.New(slog.NewTextHandler(testWriter{tb}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := client.New(conn).Sync(context.Background(), &tributaryv1.Settings{},
		client.WithBackoff(50*time.Millisecond, 500*time.Millisecond), client.WithLogger(logger),
		client.WithXDSPublishing(pub.nodeGroup, pub.publishListeners), client.WithXDSNackHandler(nacks.add))
	tb.Cleanup(s.Close)
	return s, nacks
}

// flush sends the session's pending changes and waits for their answer.
func flush(tb testing.TB, s *client.SyncSession) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		tb.Fatalf("Flush: %v", err)
	}
}

// testWriter sends log lines to the test log.
type testWriter struct{ tb testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.tb.Helper()
	w.tb.Log(string(p))
	return len(p), nil
}
