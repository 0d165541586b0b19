package loadtest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/tributary-dev/tributary/client"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/testproc"
)

// The soak's size: soakSessions Sync sessions, each holding the standard
// workload of soakExtensionServices ExtensionServices with two Services of
// soakEndpoints endpoints (500 objects and 400 endpoints per session; 100,000
// objects and 80,000 endpoints in the server), churned for soakChurn.
const (
	soakSessions          = 200
	soakExtensionServices = 100
	soakEndpoints         = 2
	soakChurn             = 8 * time.Second
	// sessionsPerConnection keeps each connection under the server's
	// default of 16 calls in flight per connection.
	sessionsPerConnection = 10
	// soakContentSample: every soakContentSample-th session has its
	// resources unpacked and compared field by field, not only by version
	// (see viewMismatch).
	soakContentSample = 10
)

// TestSoak holds 200 Sync sessions open at once against one tributary serve
// process, each loading 100 ExtensionServices and then churning their
// endpoints (pods replaced, turning ready and unready, scaling up and down to
// zero) in small batches as fast as the server answers, for a bounded time.
// It proves that under that load
//   - no call fails: every Flush succeeds, no stream breaks (the client
//     logs no reconnect) and the server logs no warning or error;
//   - nothing is lost or stale: each session's accumulated output (the
//     client's View, built from the deltas alone) equals a fresh
//     translate.Translate of that session's final objects, resource by
//     resource, version by version, status by status;
//   - memory is bounded: see checkSoakMemory.
func TestSoak(t *testing.T) {
	srv := startServer(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 5*hangGuard)
	defer cancel()

	clientLog := &warnings{}
	logger := slog.New(clientLog)
	conns := make([]*grpc.ClientConn, (soakSessions+sessionsPerConnection-1)/sessionsPerConnection)
	for i := range conns {
		conns[i] = dial(t, srv.Address)
	}
	tenants := make([]*tenant, soakSessions)
	sessions := make([]*client.SyncSession, soakSessions)
	var stateBytes int64
	for i := range sessions {
		tenants[i] = newTenant(i, soakExtensionServices, soakEndpoints)
		stateBytes += session.ObjectsSize(tenants[i].objs)
		sessions[i] = client.New(conns[i/sessionsPerConnection]).Sync(ctx, nil, client.WithLogger(logger))
	}
	defer func() {
		for _, s := range sessions {
			s.Close()
		}
	}()

	// Load: every session sends its whole workload at once.
	loadStart := time.Now()
	forEach(t, sessions, func(i int, s *client.SyncSession) error {
		s.Upsert(tenants[i].all()...)
		return s.Flush(ctx)
	})
	t.Logf("loaded %d sessions × %d ExtensionServices in %v", soakSessions, soakExtensionServices, time.Since(loadStart).Round(time.Millisecond))
	afterLoad := srv.scrape(t)
	if active, _ := testproc.Metric(afterLoad, "tributary_sync_sessions_active"); active != soakSessions {
		t.Errorf("tributary_sync_sessions_active = %v after loading, want %d", active, soakSessions)
	}

	// Churn: each session upserts one to three changed EndpointSlices per
	// batch until the time is up. Tenants are only touched by their own
	// goroutine.
	var batches atomic.Int64
	deadline := time.Now().Add(soakChurn)
	forEach(t, sessions, func(i int, s *client.SyncSession) error {
		w := tenants[i]
		for time.Now().Before(deadline) {
			for range 1 + w.rnd.IntN(3) {
				s.Upsert(w.churn())
			}
			if err := s.Flush(ctx); err != nil {
				return err
			}
			batches.Add(1)
		}
		return nil
	})
	t.Logf("churned for %v: %d batches answered (%.0f/s)", soakChurn, batches.Load(), float64(batches.Load())/soakChurn.Seconds())
	afterChurn := srv.scrape(t)
	verifyStart := time.Now()
	forEach(t, sessions, func(i int, s *client.SyncSession) error {
		if err := s.Err(); err != nil {
			return fmt.Errorf("ended: %w", err)
		}
		if diff := viewMismatch(s.View(), tenants[i].objs, i%soakContentSample == 0); diff != "" {
			return fmt.Errorf("the output is not the translation of its objects:\n%s", diff)
		}
		return nil
	})
	t.Logf("verified every session's output in %v", time.Since(verifyStart).Round(time.Millisecond))
	if w := clientLog.String(); w != "" {
		t.Errorf("the clients logged warnings (a stream broke or a batch was rejected):\n%s", w)
	}
	if lines := append(srv.linesAt("WARN"), srv.linesAt("ERROR")...); len(lines) > 0 {
		t.Errorf("the server logged %d warnings and errors, the first:\n%s", len(lines), strings.Join(lines[:min(5, len(lines))], "\n"))
	}
	checkSoakMemory(t, afterLoad, afterChurn, stateBytes)
}

// checkSoakMemory checks the server's memory from its own metrics, once
// loaded and after the churn: the live heap, the resident set
// (process_resident_memory_bytes) and the goroutines (go_goroutines). The
// live heap is the heap marked by the last garbage collection, read from the
// collector's goal (go_memstats_next_gc_bytes = live × (1 + GOGC/100)):
// go_memstats_heap_inuse_bytes would count garbage not yet collected too,
// up to as much again.
//
// The bounds are generous on purpose, to catch what matters, not noise:
//   - loaded, the live heap stays under 4× the state's estimated size
//     (session.ObjectsSize, what --max-session-bytes counts, which a
//     session test keeps within 0.5–2× of a session's real heap) plus
//     64 MiB for the runtime, gRPC's buffers of 200 streams and the metrics
//     (measured: about 3.2× in all, 200 MiB for an estimate of 62 MiB);
//   - churn that replaces objects without adding any must not make the
//     server hold more: after tens of thousands of batches the live heap
//     stays under 1.5× the loaded one plus 16 MiB, the resident set under
//     2× plus 64 MiB, and the goroutines within 20 of the loaded count. A
//     leak per batch (a delta, an old version, an outbox entry, a goroutine
//     kept) would exceed them.
func checkSoakMemory(t *testing.T, afterLoad, afterChurn string, stateBytes int64) {
	t.Helper()
	const mib = 1 << 20
	read := func(page, name string) float64 {
		v, ok := testproc.Metric(page, name)
		if !ok {
			t.Fatalf("/metrics has no %s", name)
		}
		return v
	}
	live := func(page string) float64 {
		return read(page, "go_memstats_next_gc_bytes") / (1 + read(page, "go_gc_gogc_percent")/100)
	}
	liveLoaded, liveChurned := live(afterLoad), live(afterChurn)
	rssLoaded, rssChurned := read(afterLoad, "process_resident_memory_bytes"), read(afterChurn, "process_resident_memory_bytes")
	goLoaded, goChurned := read(afterLoad, "go_goroutines"), read(afterChurn, "go_goroutines")
	t.Logf("server: state estimate %.1f MiB; live heap %.1f MiB loaded, %.1f MiB after churn; resident %.1f MiB, %.1f MiB; goroutines %.0f, %.0f",
		float64(stateBytes)/mib, liveLoaded/mib, liveChurned/mib, rssLoaded/mib, rssChurned/mib, goLoaded, goChurned)
	if limit := 4*float64(stateBytes) + 64*mib; liveLoaded > limit {
		t.Errorf("loaded, the server's live heap is %.1f MiB, over 4× the state's estimated %.1f MiB + 64 MiB", liveLoaded/mib, float64(stateBytes)/mib)
	}
	if limit := 1.5*liveLoaded + 16*mib; liveChurned > limit {
		t.Errorf("after churn the server's live heap is %.1f MiB, over 1.5× the loaded %.1f MiB + 16 MiB: churn made it hold more", liveChurned/mib, liveLoaded/mib)
	}
	if limit := 2*rssLoaded + 64*mib; rssChurned > limit {
		t.Errorf("after churn the server's resident set is %.1f MiB, over 2× the loaded %.1f MiB + 64 MiB", rssChurned/mib, rssLoaded/mib)
	}
	if goChurned > goLoaded+20 {
		t.Errorf("after churn the server runs %.0f goroutines, %.0f loaded: churn left some behind", goChurned, goLoaded)
	}
}

// forEach runs f for every session at once and fails the test with the
// errors it returned.
func forEach(t *testing.T, sessions []*client.SyncSession, f func(i int, s *client.SyncSession) error) {
	t.Helper()
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() { errs[i] = f(i, s) })
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			if failed <= 5 {
				t.Errorf("session %d: %v", i, err)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d sessions failed", failed, len(sessions))
	}
}

// warnings is a slog.Handler that keeps the warnings and errors logged, one
// line each.
type warnings struct {
	mu    sync.Mutex
	lines strings.Builder
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Fprintf(&w.lines, "%s %s", r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&w.lines, " %s=%v", a.Key, a.Value)
		return true
	})
	w.lines.WriteByte('\n')
	return nil
}

func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lines.String()
}
