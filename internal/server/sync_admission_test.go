package server

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tributary-dev/tributary/internal/metrics"
)

// TestSyncStartTimeout: a Sync stream that sends nothing is ended with
// DeadlineExceeded once SyncStartTimeout passes, and the server goes on.
func TestSyncStartTimeout(t *testing.T) {
	opts := quietOptions()
	opts.SyncStartTimeout = 50 * time.Millisecond
	conn := dialBufconn(t, NewGRPCServer(opts))
	silent := openStream(t.Context(), t, conn)
	const want = "no SyncStart within 50ms: a Sync stream must send its start (SyncStart) first"
	if st := status.Convert(silent.end()); st.Code() != codes.DeadlineExceeded || st.Message() != want {
		t.Errorf("a silent stream ended with %v, want DeadlineExceeded %q", st.Err(), want)
	}
	c := started(t, conn)
	c.closeAndEnd()
}

// TestSilentStreamsHoldNoSlot: streams that have not sent their SyncStart
// hold no session slot, so as many of them as MaxSessions lock nobody
// out; tributary_sync_sessions_active counts exactly the sessions that
// hold a slot, from the same count.
func TestSilentStreamsHoldNoSlot(t *testing.T) {
	m := metrics.New()
	opts := quietOptions()
	opts.MaxSessions = 2
	opts.Metrics = m
	dial := serveTCP(t, NewGRPCServer(opts))
	silentConn := dial()
	var silent []*syncClient
	for range 2 * opts.MaxSessions {
		silent = append(silent, openStream(t.Context(), t, silentConn))
	}
	conn := dial()
	first, second := started(t, conn), started(t, conn)
	if got := sessionsActive(t, m); got != 2 {
		t.Errorf("tributary_sync_sessions_active = %v with two sessions and four silent streams, want 2", got)
	}
	refused := openUnwelcome(t, conn)
	if err := refused.end(); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a third session: %v, want ResourceExhausted", err)
	}
	first.closeAndEnd()
	second.closeAndEnd()
	for _, c := range silent {
		c.closeAndEnd() // a stream closed before its start ends OK
	}
	if got := sessionsActive(t, m); got != 0 {
		t.Errorf("tributary_sync_sessions_active = %v once every session ended, want 0", got)
	}
}

// sessionsActive reads tributary_sync_sessions_active.
func sessionsActive(t *testing.T, m *metrics.Metrics) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "tributary_sync_sessions_active" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no tributary_sync_sessions_active")
	return 0
}
