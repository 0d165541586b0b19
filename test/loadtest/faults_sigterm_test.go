package loadtest

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-dev/tributary/client"
	"github.com/tributary-dev/tributary/internal/testproc"
)

// TestSIGTERMWithOpenStreams: SIGTERM reaches a server while 20 Sync
// sessions churn. It drains: /readyz and health turn away new calls, and
// every open Sync stream ends at once with Unavailable, so the server exits
// 0 without waiting out its --shutdown-timeout (ten minutes here, far
// beyond the test's guard). A new server is started on the same address;
// every session reconnects to it by itself, sends its objects again, and
// ends with exactly the translation of its objects, answered by the new
// process (its versions carry the new instance's id). Nothing fails but the
// reconnects the clients log.
func TestSIGTERMWithOpenStreams(t *testing.T) {
	first := startServer(t, nil, "--shutdown-timeout", "10m")
	ctx, cancel := context.WithTimeout(t.Context(), 3*hangGuard)
	defer cancel()
	clientLog := &warnings{}
	opts := []client.SyncOption{client.WithBackoff(20*time.Millisecond, 500*time.Millisecond), client.WithLogger(slog.New(clientLog))}
	sessions := startBystanders(ctx, t, dial(t, first.Address), 0, 10, opts...)
	more := startBystanders(ctx, t, dial(t, first.Address), 10, 10, opts...)
	sessions.waitServed(t, 20)
	firstInstance := instanceOf(sessions.sessions[0].View().Version)

	first.Signal(t, syscall.SIGTERM)
	first.waitLog(t, regexp.MustCompile(`msg="shutting down"`))
	if code := first.Wait(t, hangGuard); code != 0 {
		t.Errorf("the first server exited with %d after SIGTERM, want 0", code)
	}
	first.waitLog(t, regexp.MustCompile(`msg=stopped`))
	if lines := append(first.linesAt("WARN"), first.linesAt("ERROR")...); len(lines) > 0 {
		t.Errorf("the first server logged warnings or errors while draining:\n%s", strings.Join(lines, "\n"))
	}
	waitListenable(t, first.Address)
	second := startServer(t, nil, "--address", first.Address)

	// Served by the second server now.
	sessions.waitServed(t, 50)
	more.waitServed(t, 50)
	sessions.finish(ctx, t)
	more.finish(ctx, t)
	for i, s := range append(sessions.sessions, more.sessions...) {
		if got := instanceOf(s.View().Version); got == firstInstance {
			t.Errorf("session %d's output still has version %q, from the first server", i, s.View().Version)
		}
	}
	if active, _ := testproc.Metric(second.scrape(t), "tributary_sync_sessions_active"); active != 20 {
		t.Errorf("the second server holds %v sessions, want 20", active)
	}
	if !strings.Contains(clientLog.String(), "reconnecting") || !strings.Contains(clientLog.String(), "code = Unavailable desc = the server is shutting down") {
		t.Errorf("the clients logged no reconnect after the drain ended their streams:\n%s", clientLog.String())
	}
	if lines := append(second.linesAt("WARN"), second.linesAt("ERROR")...); len(lines) > 0 {
		t.Errorf("the second server logged warnings or errors:\n%s", strings.Join(lines, "\n"))
	}
}

// instanceOf returns the server instance part of a session output version
// ("<instance>-<counter>").
func instanceOf(version string) string {
	instance, _, _ := strings.Cut(version, "-")
	return instance
}
