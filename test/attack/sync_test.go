package attack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/internal/tlsfiles/testcerts"
)

// syncStream is a raw Sync stream, so that the scenarios see exactly what
// the server answers to each batch.
type syncStream struct {
	tributaryv1.TranslationService_SyncClient
	cancel context.CancelFunc
	nextID uint64
}

// openSync opens a Sync stream over conn and sends its SyncStart (unless
// start is false). The stream is cancelled when the test ends.
func openSync(t *testing.T, conn *grpc.ClientConn, start bool) *syncStream {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	stream, err := tributaryv1.NewTranslationServiceClient(conn).Sync(ctx)
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	s := &syncStream{TranslationService_SyncClient: stream, cancel: cancel, nextID: 1}
	if start {
		if err := s.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}}); err != nil {
			t.Fatalf("sending SyncStart: %v", err)
		}
	}
	return s
}

// batch sends a batch of upserts and returns the server's answer to it.
func (s *syncStream) batch(t *testing.T, upserts ...*tributaryv1.KubernetesObject) *tributaryv1.SyncResponse {
	t.Helper()
	id := s.nextID
	s.nextID++
	if err := s.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: &tributaryv1.SyncBatch{Id: id, Upserts: upserts}}}); err != nil {
		// The server ended the stream: Recv says how.
		_, err = s.Recv()
		t.Fatalf("sending batch %d: the stream ended: %v", id, err)
	}
	resp, err := s.Recv()
	if err != nil {
		t.Fatalf("batch %d: the stream ended: %v", id, err)
	}
	return resp
}

// wantDelta fails the test unless resp is the delta of the batch just
// sent.
func (s *syncStream) wantDelta(t *testing.T, resp *tributaryv1.SyncResponse) *tributaryv1.SyncDelta {
	t.Helper()
	d := resp.GetDelta()
	if d == nil || d.GetBatchId() != s.nextID-1 {
		t.Fatalf("batch %d was answered with %v, want its delta", s.nextID-1, resp)
	}
	return d
}

// checkLegitDelta fails the test unless d adds exactly the legitimate
// objects' Cluster and ClusterLoadAssignment, as the server translated them
// before the attack.
func (srv *server) checkLegitDelta(t *testing.T, d *tributaryv1.SyncDelta) {
	t.Helper()
	want := srv.legitAnswer
	if len(d.GetClusters()) != 1 || !proto.Equal(d.GetClusters()[0], want.GetClusters()[0]) ||
		len(d.GetClusterLoadAssignments()) != 1 || !proto.Equal(d.GetClusterLoadAssignments()[0], want.GetClusterLoadAssignments()[0]) {
		t.Fatalf("the legitimate batch's delta is\n%v\nwant the legitimate Cluster and ClusterLoadAssignment\n%v\n%v",
			d, want.GetClusters()[0], want.GetClusterLoadAssignments()[0])
	}
}

// end half-closes the stream and waits until the server ends it, which
// must be without an error.
func (s *syncStream) end(t *testing.T) {
	t.Helper()
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("the stream ended with %v after the client closed it, want OK", err)
		}
		t.Fatalf("after the client closed the stream the server sent %v", resp)
	}
}

// Row 4: a Sync session builds many h2 ExtensionServices in small batches,
// all validating against one CA Secret that holds one CA, then replaces the
// Secret with many copies of the CA. Every Cluster would inline the new
// bundle, so the next delta would be far over the send limit: the batch is
// rejected (BatchRejected, reason RESOURCE_EXHAUSTED) and changes nothing;
// the stream stays open and a later valid batch is answered.
func syncSharedCA(t *testing.T) {
	r := report(t)
	srv := startServer(t, r, ballastBytes, sized(smallMessages, []string{"--max-session-bytes", "128Mi"})...)
	copies, n := sized(100, 1000), sized(40, 801)
	ca := testcerts.NewCA(t, "attack-ca").PEM

	s := openSync(t, srv.legitConn, true)
	s.wantDelta(t, s.batch(t, append(backend(), secret(attackNamespace, "ca", "Opaque", ca, nil))...))
	// Batches of at most 4 KB.
	objs := validatingExtensionServices(n)
	batches := 0
	for len(objs) > 0 {
		k := 1
		for k < len(objs) && proto.Size(&tributaryv1.SyncBatch{Upserts: objs[:k+1]}) <= 4<<10 {
			k++
		}
		s.wantDelta(t, s.batch(t, objs[:k]...))
		objs = objs[k:]
		batches++
	}

	bundle := strings.Repeat(string(ca), copies)
	r.sent = fmt.Sprintf("Sync: %d h2 ExtensionServices in %d batches of at most 4 KB on one CA Secret, then that Secret with %d CAs (%s)",
		n, batches, copies, kilobytes(len(bundle)))
	var resp *tributaryv1.SyncResponse
	r.timed(func() { resp = s.batch(t, secret(attackNamespace, "ca", "Opaque", []byte(bundle), nil)) })
	rejected := resp.GetRejected()
	if rejected == nil {
		r.got = gotText(fmt.Sprintf("%v", resp))
		t.Fatalf("the change of the shared CA Secret was answered with %.500v, want a BatchRejected", resp)
	}
	var reasons []string
	for _, v := range rejected.GetViolations() {
		reasons = append(reasons, v.GetReason())
	}
	r.got = gotText(fmt.Sprintf("BatchRejected %v: %s", reasons, rejected.GetMessage()))
	if rejected.GetBatchId() != s.nextID-1 || len(reasons) == 0 || reasons[0] != "RESOURCE_EXHAUSTED" || !strings.Contains(rejected.GetMessage(), "attack/ca") {
		t.Errorf("the change of the shared CA Secret was rejected with %v, want batch %d, reason RESOURCE_EXHAUSTED, a message naming attack/ca", rejected, s.nextID-1)
	}
	if len(rejected.GetMessage()) > maxStatusMessage {
		t.Errorf("the BatchRejected message is %d bytes long, over %d", len(rejected.GetMessage()), maxStatusMessage)
	}

	// The session goes on, unchanged: the next delta holds only what the
	// next batch adds.
	srv.checkLegitDelta(t, s.wantDelta(t, s.batch(t, legitObjects()...)))
	s.end(t)
	srv.checkHeld(t)
}

// Row 8: as many Sync streams as --max-sessions that never send their
// SyncStart. They hold no session slot, so a legitimate session is
// admitted at once; after --sync-start-timeout each ends with
// DeadlineExceeded naming the SyncStart it lacked.
func silentSyncStreams(t *testing.T) {
	r := report(t)
	timeout := sized("3s", "10s")
	srv := startServer(t, r, ballastBytes, "--max-sessions", "6", "--sync-start-timeout", timeout)
	conn := dial(t, srv.Address)
	silent := make([]*syncStream, 6)
	for i := range silent {
		silent[i] = openSync(t, conn, false)
	}
	r.sent = "6 Sync streams that never send, with --max-sessions 6 --sync-start-timeout " + timeout
	// The server has seen them all once its handler has started for each.
	srv.waitMetric(t, 6, "grpc_server_started_total", `grpc_method="Sync"`)

	legit := openSync(t, srv.legitConn, true)
	srv.checkLegitDelta(t, legit.wantDelta(t, legit.batch(t, legitObjects()...)))
	if active, _ := testproc.Metric(srv.scrape(t), "tributary_sync_sessions_active"); active != 1 {
		t.Errorf("tributary_sync_sessions_active is %v with one session past its SyncStart, want 1", active)
	}
	legit.end(t)

	var errs []error
	r.timed(func() {
		for _, s := range silent {
			_, err := s.Recv()
			errs = append(errs, err)
		}
	})
	_ = conn.Close()
	r.got = "the silent streams: " + outcome(errs[0])
	for i, err := range errs {
		st := status.Convert(err)
		if st.Code() != codes.DeadlineExceeded || !strings.Contains(st.Message(), "SyncStart") {
			t.Errorf("silent stream %d ended with %v, want DeadlineExceeded naming the SyncStart it lacked", i, err)
		}
	}
	srv.checkHeld(t)
}
