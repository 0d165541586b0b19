package server

import (
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// TestSyncAnswersInOrder: batches sent without reading in between are
// answered in order, a rejection after the delta of the batch before it
// and before the delta of the batch after it.
func TestSyncAnswersInOrder(t *testing.T) {
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	s := newSyncSession(openSync(t.Context(), t, conn, nil), nil, map[string]bool{})
	first := batch(1, fixture(t)...)
	bad := batch(2, serviceObject(meta("", "x")))
	// Two endpoints move, two stay ready: the CLA changes, not the status.
	last := batch(3, slice("a", "10.0.0.5", "10.0.0.6"))
	for _, b := range []*tributaryv1.SyncBatch{first, bad, last} {
		s.send(b)
	}
	s.world.apply(first)
	o := s.world.translate(t)
	s.expect(&tributaryv1.SyncDelta{BatchId: 1, FullState: true, Clusters: o.Clusters, ClusterLoadAssignments: o.ClusterLoadAssignments, Statuses: o.Statuses})
	if got := s.recv(); got.GetRejected().GetBatchId() != 2 {
		t.Fatalf("second answer: got %v, want the rejection of batch 2", got)
	}
	s.world.apply(last)
	o = s.world.translate(t)
	s.expect(&tributaryv1.SyncDelta{BatchId: 3, ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, plainCluster)})
	s.closeAndEnd()
}

// countingService counts the Recv calls its Sync streams make, so a test can
// tell when the server has applied every batch sent: the server calls Recv
// again only after applying the last batch it received.
type countingService struct {
	tributaryv1.TranslationServiceServer
	recvs     atomic.Int64
	reachedAt int64
	reached   chan struct{}
}

func (s *countingService) Sync(stream grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) error {
	return s.TranslationServiceServer.Sync(countingStream{stream, s})
}

type countingStream struct {
	grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]
	service *countingService
}

func (s countingStream) RecvMsg(m any) error {
	if s.service.recvs.Add(1) == s.service.reachedAt {
		close(s.service.reached)
	}
	return s.BidiStreamingServer.RecvMsg(m)
}

// TestSyncSlowReader: a client sends a thousand batches of endpoint churn
// without reading, then reads. The server merges what waits, so far fewer
// answers come than batches, the last covers the last batch, and together
// they give exactly the final state.
func TestSyncSlowReader(t *testing.T) {
	const batches = 1000
	// Recv calls: the start, every batch, and the one that waits for more.
	svc := &countingService{TranslationServiceServer: NewTranslationService(), reachedAt: batches + 2, reached: make(chan struct{})}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, newGRPCServer(quietOptions(), svc), lis)
	// A fixed, small window (no BDP growth) keeps the server from sending
	// far ahead of the reader.
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })

	s := newSyncSession(openSync(t.Context(), t, conn, nil), nil, map[string]bool{})
	s.send(batch(1, plainES("h2c"), service("a"), slice("a", churnAddresses(0)...)))
	s.world.apply(batch(1, plainES("h2c"), service("a"), slice("a", churnAddresses(0)...)))
	for i := 2; i <= batches; i++ {
		b := batch(uint64(i), slice("a", churnAddresses(i)...))
		s.send(b)
		s.world.apply(b)
	}
	<-svc.reached

	var responses int
	for {
		got := s.delta()
		responses++
		s.view.apply(got)
		if got.GetBatchId() == batches {
			break
		}
	}
	if diff := gocmp.Diff(s.world.translate(t), s.view.response(), sortedLists); diff != "" {
		t.Errorf("the deltas add up to (-Translate +deltas):\n%s", diff)
	}
	t.Logf("%d batches, %d answers", batches, responses)
	if responses > batches/10 {
		t.Errorf("%d batches got %d answers: pending deltas were not merged", batches, responses)
	}
	s.closeAndEnd()
}

// TestSyncConcurrentReader: a client that reads while it writes, as a
// controller does, gets every batch answered and the right final state,
// however the server's two goroutines interleave.
func TestSyncConcurrentReader(t *testing.T) {
	const batches = 3000
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	s := newSyncSession(openSync(t.Context(), t, conn, nil), nil, map[string]bool{})
	w := newWorld(nil)
	read := make(chan error, 1)
	go func() {
		for responses := 0; ; responses++ {
			resp, err := s.stream.Recv()
			if err != nil {
				read <- fmt.Errorf("after %d responses: %w", responses, err)
				return
			}
			s.view.apply(resp.GetDelta())
			if resp.GetDelta().GetBatchId() == batches {
				read <- nil
				return
			}
		}
	}()
	for i := 1; i <= batches; i++ {
		b := batch(uint64(i), slice("a", fmt.Sprintf("10.4.%d.%d", i/250, i%250+1)))
		if i == 1 {
			b.Upserts = append(b.Upserts, plainES("h2c"), service("a"))
		}
		s.send(b)
		w.apply(b)
	}
	if err := <-read; err != nil {
		t.Fatalf("reading: %v", err)
	}
	if diff := gocmp.Diff(w.translate(t), s.view.response(), sortedLists); diff != "" {
		t.Errorf("the deltas add up to (-Translate +deltas):\n%s", diff)
	}
	s.closeAndEnd()
}
