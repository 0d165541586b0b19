package server

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"

	"github.com/tributary-dev/tributary/internal/source"
)

// A client that sends malformed or oversized messages in a loop would write
// one warning per call, as fast as the server answers: a few megabytes of
// log a second, burying everything else. peerWarnings keeps a small token
// bucket per client address (its IP, since a client opens connections from
// any port): a burst of peerWarningBurst lines, then one every
// peerWarningEvery; the line that ends a silence says how many were
// dropped (warnings.suppressed).
const (
	peerWarningBurst = 10
	peerWarningEvery = 6 * time.Second
	// maxWarnedPeers bounds the buckets kept; when it is reached, the
	// buckets are dropped and every client starts again with a full
	// burst. A client that cycles through addresses to get around the
	// limit can at most reset it.
	maxWarnedPeers = 4096
	// maxLoggedErrorBytes bounds the error text a call's log line repeats:
	// an error may quote what the client sent.
	maxLoggedErrorBytes = 1024
)

type peerWarnings struct {
	mu      sync.Mutex
	buckets map[string]*warningBucket
	now     func() time.Time
}

type warningBucket struct {
	tokens     float64
	last       time.Time
	suppressed int
}

func newPeerWarnings() *peerWarnings {
	return &peerWarnings{buckets: map[string]*warningBucket{}, now: time.Now}
}

// allow reports whether a warning about the client at address may be
// logged, and how many were suppressed since the last one that was.
func (w *peerWarnings) allow(address string) (ok bool, suppressed int) {
	host := address
	if h, _, err := net.SplitHostPort(address); err == nil {
		host = h
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	b := w.buckets[host]
	if b == nil {
		if len(w.buckets) >= maxWarnedPeers {
			clear(w.buckets)
		}
		b = &warningBucket{tokens: peerWarningBurst, last: now}
		w.buckets[host] = b
	}
	b.tokens = min(peerWarningBurst, b.tokens+float64(now.Sub(b.last))/float64(peerWarningEvery))
	b.last = now
	if b.tokens < 1 {
		b.suppressed++
		return false, 0
	}
	b.tokens--
	suppressed, b.suppressed = b.suppressed, 0
	return true, suppressed
}

// callLogger lets the logging interceptors write to l: warnings about a
// client are rate limited per client (see peerWarnings), the error a line
// repeats is cut to maxLoggedErrorBytes, and the routine calls of the
// standard services go to debug (see standardService).
func callLogger(l *slog.Logger, warnings *peerWarnings) logging.Logger {
	return logging.LoggerFunc(func(ctx context.Context, level logging.Level, msg string, fields ...any) {
		var peerAddress, service string
		for i := 0; i+1 < len(fields); i += 2 {
			switch fields[i] {
			case "grpc.error":
				if text, ok := fields[i+1].(string); ok {
					fields[i+1] = clipError(text)
				}
			case "peer.address":
				peerAddress, _ = fields[i+1].(string)
			case "grpc.service":
				service, _ = fields[i+1].(string)
			}
		}
		if level == logging.LevelInfo && standardService(service) {
			level = logging.LevelDebug
		}
		if level == logging.LevelWarn && peerAddress != "" {
			ok, suppressed := warnings.allow(peerAddress)
			if !ok {
				return
			}
			if suppressed > 0 {
				fields = append(fields, "warnings.suppressed", suppressed)
			}
		}
		l.Log(ctx, slog.Level(level), msg, fields...)
	})
}

// clipError cuts an error's text for a log line, on a character boundary.
func clipError(text string) string {
	if len(text) <= maxLoggedErrorBytes {
		return text
	}
	return source.Prefix(text, maxLoggedErrorBytes) + "..."
}
