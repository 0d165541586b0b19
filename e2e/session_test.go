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

// dialSync connects to a Tributary Sync address. Every Sync stream on the
// connection publishes to pub: a stream interceptor fills in the SyncStart
// fields client.Sync has no option for, and takes the XdsNack messages out
// of the stream into the returned log (client.SyncSession would take them
// for a malformed answer).
func dialSync(tb testing.TB, address string, pub publication) (*grpc.ClientConn, *nackLog) {
	tb.Helper()
	nacks := &nackLog{}
	intercept := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil || method != tributaryv1.TranslationService_Sync_FullMethodName {
			return cs, err
		}
		return &publishingStream{ClientStream: cs, pub: pub, nacks: nacks}, nil
	}
	conn, err := grpc.NewClient(address,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStreamInterceptor(intercept),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(client.DefaultMaxMsgSize), grpc.MaxCallSendMsgSize(client.DefaultMaxMsgSize)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return conn, nacks
}

// publishingStream is a Sync stream whose SyncStart publishes to pub and
// whose XdsNack answers go to nacks.
type publishingStream struct {
	grpc.ClientStream
	pub   publication
	nacks *nackLog
}

func (s *publishingStream) SendMsg(m any) error {
	if req, ok := m.(*tributaryv1.SyncRequest); ok && req.GetStart() != nil {
		req = proto.CloneOf(req)
		req.GetStart().XdsNodeGroup = s.pub.nodeGroup
		req.GetStart().PublishListeners = s.pub.publishListeners
		m = req
	}
	return s.ClientStream.SendMsg(m)
}

func (s *publishingStream) RecvMsg(m any) error {
	for {
		if err := s.ClientStream.RecvMsg(m); err != nil {
			return err
		}
		resp, ok := m.(*tributaryv1.SyncResponse)
		if !ok || resp.GetXdsNack() == nil {
			return nil
		}
		s.nacks.add(resp.GetXdsNack())
	}
}

// openSync opens a Sync session on conn that retries quickly, so a
// restarted server is found again within a second.
func openSync(tb testing.TB, conn *grpc.ClientConn) *client.SyncSession {
	tb.Helper()
	logger := slog.New(slog.NewTextHandler(testWriter{tb}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := client.New(conn).Sync(context.Background(), &tributaryv1.Settings{},
		client.WithBackoff(50*time.Millisecond, 500*time.Millisecond), client.WithLogger(logger))
	tb.Cleanup(s.Close)
	return s
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
