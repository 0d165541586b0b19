package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc/grpclog"
)

// GRPCLog carries gRPC's own log into slog, so that one log says everything
// the process saw. gRPC logs little on a server: a few lines at start and
// stop (debug here), and connections it refuses before any call, such as a
// peer that sends bytes that are not HTTP/2 (info here, with gRPC's reason,
// since nothing else reports them). Its warnings and errors keep their level,
// but for one that is a client's normal going away (see clientGone).
//
// Install it once per process, before any gRPC call, with
// grpclog.SetLoggerV2; Use switches where it writes, at any time.
type GRPCLog struct {
	logger atomic.Pointer[slog.Logger]
}

var _ grpclog.LoggerV2 = (*GRPCLog)(nil)

// Use makes l the logger gRPC's messages go to.
func (g *GRPCLog) Use(l *slog.Logger) { g.logger.Store(l) }

func (g *GRPCLog) log(level slog.Level, text string) {
	l := orDefaultLogger(g.logger.Load())
	// gRPC's reasons may quote what a peer sent (a bogus greeting).
	text = clipError(strings.TrimSpace(text))
	if level == slog.LevelInfo {
		level = slog.LevelDebug
		if strings.Contains(text, "failed to create ServerTransport") {
			l.Info("refused a connection before any call", "grpc.log", text)
			return
		}
	}
	if level == slog.LevelWarn && clientGone(text) {
		level = slog.LevelDebug
	}
	l.Log(context.Background(), level, "grpc", "grpc.log", text)
}

// statusToClosedConnection ends the warning gRPC logs when a call's handler
// returns after its connection closed, so there is no one left to send the
// call's status to: that is how every call still open ends when a client
// closes its connection (grpcurl's reflection stream, a Sync client that
// exits), and when the server stops. The call log has already reported the
// call's end and the code it ended with (CANCELLED), at that code's level.
const statusToClosedConnection = `failed to write status: connection error: desc = "transport is closing"`

// clientGone reports whether gRPC's warning text is statusToClosedConnection:
// routine, so it is logged at debug. Any other failure to write a status
// stays a warning. A test with a real client pins gRPC's wording.
func clientGone(text string) bool {
	return strings.HasSuffix(text, statusToClosedConnection)
}

// Info logs at debug level (see GRPCLog).
func (g *GRPCLog) Info(args ...any) { g.log(slog.LevelInfo, fmt.Sprint(args...)) }

// Infoln logs at debug level (see GRPCLog).
func (g *GRPCLog) Infoln(args ...any) { g.log(slog.LevelInfo, fmt.Sprintln(args...)) }

// Infof logs at debug level (see GRPCLog).
func (g *GRPCLog) Infof(format string, args ...any) {
	g.log(slog.LevelInfo, fmt.Sprintf(format, args...))
}

// Warning logs at warning level.
func (g *GRPCLog) Warning(args ...any) { g.log(slog.LevelWarn, fmt.Sprint(args...)) }

// Warningln logs at warning level.
func (g *GRPCLog) Warningln(args ...any) { g.log(slog.LevelWarn, fmt.Sprintln(args...)) }

// Warningf logs at warning level.
func (g *GRPCLog) Warningf(format string, args ...any) {
	g.log(slog.LevelWarn, fmt.Sprintf(format, args...))
}

// Error logs at error level.
func (g *GRPCLog) Error(args ...any) { g.log(slog.LevelError, fmt.Sprint(args...)) }

// Errorln logs at error level.
func (g *GRPCLog) Errorln(args ...any) { g.log(slog.LevelError, fmt.Sprintln(args...)) }

// Errorf logs at error level.
func (g *GRPCLog) Errorf(format string, args ...any) {
	g.log(slog.LevelError, fmt.Sprintf(format, args...))
}

// Fatal logs at error level and exits, as gRPC expects.
func (g *GRPCLog) Fatal(args ...any) { g.log(slog.LevelError, fmt.Sprint(args...)); os.Exit(1) }

// Fatalln logs at error level and exits, as gRPC expects.
func (g *GRPCLog) Fatalln(args ...any) { g.log(slog.LevelError, fmt.Sprintln(args...)); os.Exit(1) }

// Fatalf logs at error level and exits, as gRPC expects.
func (g *GRPCLog) Fatalf(format string, args ...any) {
	g.log(slog.LevelError, fmt.Sprintf(format, args...))
	os.Exit(1)
}

// V reports whether gRPC's verbose logging is on; it never is.
func (g *GRPCLog) V(int) bool { return false }
