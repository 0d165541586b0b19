package server

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"

	"github.com/tributary-dev/tributary/internal/testproc"
)

// TestPeerWarnings: warnings about one client (by IP, whatever its port)
// pass in a burst of peerWarningBurst, then one per peerWarningEvery, the
// first after a silence counting those dropped; other clients keep their
// own burst, and lines below warning level are never dropped. Logged
// errors are cut to maxLoggedErrorBytes.
func TestPeerWarnings(t *testing.T) {
	var log testproc.Buffer
	warnings := newPeerWarnings()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	warnings.now = func() time.Time { return now }
	logger := callLogger(slog.New(slog.NewTextHandler(&log, nil)), warnings)
	warn := func(address string) {
		logger.Log(context.Background(), logging.LevelWarn, "finished call", "peer.address", address, "grpc.error", strings.Repeat("e", 2000))
	}

	for i := range peerWarningBurst + 5 {
		warn("10.0.0.1:" + string(rune('1'+i%9)) + "000")
	}
	warn("10.0.0.2:4000") // another client
	logger.Log(context.Background(), logging.LevelInfo, "finished call", "peer.address", "10.0.0.1:1")
	now = now.Add(peerWarningEvery)
	warn("10.0.0.1:1")
	warn("10.0.0.1:1") // the bucket is empty again

	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	count := func(re string) int {
		n := 0
		for _, l := range lines {
			if regexp.MustCompile(re).MatchString(l) {
				n++
			}
		}
		return n
	}
	if n := count(`level=WARN .*peer.address=10\.0\.0\.1:`); n != peerWarningBurst+1 {
		t.Errorf("%d warnings about 10.0.0.1, want %d; log:\n%s", n, peerWarningBurst+1, log.String())
	}
	if n := count(`level=WARN .*peer.address=10\.0\.0\.1:1 .*warnings.suppressed=5$`); n != 1 {
		t.Errorf("%d lines counting the 5 warnings dropped, want 1; log:\n%s", n, log.String())
	}
	if n := count(`level=WARN .*peer.address=10\.0\.0\.2:4000`); n != 1 {
		t.Errorf("%d warnings about 10.0.0.2, want 1", n)
	}
	if n := count(`level=INFO`); n != 1 {
		t.Errorf("%d info lines, want 1", n)
	}
	if n := count(`grpc.error=` + strings.Repeat("e", maxLoggedErrorBytes) + `\.\.\.( |$)`); n != len(lines)-1 {
		t.Errorf("%d of %d lines with the error cut to 1024 bytes; log:\n%.500s", n, len(lines)-1, log.String())
	}
}
