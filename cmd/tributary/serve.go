package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/health"

	"github.com/tributary-dev/tributary/internal/server"
)

// defaultAddress is loopback on purpose: without the TLS flags (see
// serve_tls.go) the service has no authentication, so exposing it beyond the
// host (or the pod) must be a deliberate --address choice, such as
// 0.0.0.0:8081 with mutual TLS or behind a NetworkPolicy.
const defaultAddress = "127.0.0.1:8081"

const serveExample = `  # The API on loopback, plaintext (the default)
  tributary serve

  # xDS for Envoy and proxyless gRPC clients beside the API, metrics on 9090
  tributary serve --xds-address 127.0.0.1:18000 --metrics-address 127.0.0.1:9090

  # Every interface, with mutual TLS, JSON logs
  tributary serve --address 0.0.0.0:8081 --tls-cert-file tls.crt --tls-key-file tls.key \
    --tls-client-ca-file ca.crt --log-format json`

// serveFlags are serve's own flags; the flags of its parts (metrics, xDS,
// TLS, limits) live beside the parts.
type serveFlags struct {
	address, logLevel, logFormat string
	shutdownTimeout              time.Duration
	metrics                      *metricsFlags
	xds                          *xdsFlags
	tls                          *tlsFlags
	limits                       *limitFlags
}

func newServeCommand(std stdio) *cobra.Command {
	f := &serveFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the gRPC API (and, with flags, xDS and metrics)",
		Long: `Serve TranslationService (Translate and Sync), gRPC health and reflection
until SIGTERM or SIGINT, then drain: open Sync calls end at once with
UNAVAILABLE so their clients reconnect elsewhere, other calls get
--shutdown-timeout to finish. A second signal ends the process at once.

Sizes are Kubernetes quantities: 64Mi, 1Gi, or a number of bytes.`,
		Example: serveExample,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), f, std)
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringVar(&f.address, "address", defaultAddress,
		"`host:port` to listen on; the loopback default keeps the unauthenticated service private to the host, use 0.0.0.0:8081 to serve every interface")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log `format`: text (logfmt-style key=value) or json (one object a line, for log collectors)")
	completeWords(cmd, "log-level", "debug", "info", "warn", "error")
	completeWords(cmd, "log-format", "text", "json")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long in-flight calls may run after SIGTERM before connections are closed")
	f.metrics = registerMetricsFlags(fs)
	f.xds = registerXDSFlags(fs)
	f.tls = registerTLSFlags(fs)
	f.limits = registerLimitFlags(fs)
	return cmd
}

// newLogger builds serve's logger from --log-level and --log-format with
// slog's own handlers.
func newLogger(w io.Writer, levelName, format string) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(levelName)); err != nil {
		return nil, usageErrorf("invalid --log-level %q: want debug, info, warn or error", levelName)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		// Durations as the text handler and the flags write them ("10s"),
		// not slog's JSON default of nanoseconds.
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.StringValue(a.Value.Duration().String())
			}
			return a
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, usageErrorf("invalid --log-format %q: want text or json", format)
	}
}

// runServe serves TranslationService (with health and reflection) until
// SIGTERM or SIGINT, then drains: open Sync calls end at once with
// Unavailable, and other calls in flight get --shutdown-timeout to finish
// before connections are closed. The first log line names the
// address actually listened on, so --address 127.0.0.1:0 picks a free port
// that callers can read back. A second signal during the drain ends the
// process at once. Failures once the logger exists are logged, and end
// the command with exitError.
func runServe(ctx context.Context, f *serveFlags, std stdio) error {
	limits, xdsFlags, metricsFlags, tlsFlags := f.limits, f.xds, f.metrics, f.tls
	logger, err := newLogger(std.err, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	if err := limits.check(); err != nil {
		return usageError{err}
	}
	if err := limits.resolve(memoryLimit()); err != nil {
		return usageError{err}
	}
	if err := xdsFlags.check(); err != nil {
		return usageError{err}
	}
	if err := metricsFlags.check(); err != nil {
		return usageError{err}
	}
	grpcLog.Use(logger)
	recorder := metricsFlags.newMetrics()
	security, err := tlsFlags.start(logger, xdsFlags.address != "", recorder)
	if err != nil {
		return tlsFailure(err, logger)
	}
	defer security.close()

	lis, err := net.Listen("tcp", f.address)
	if err != nil {
		logger.Error("cannot listen", "address", f.address, "error", err)
		return exitError{exitFailure}
	}
	metricsEndpoint, err := metricsFlags.listen(recorder)
	if err != nil {
		_ = lis.Close()
		logger.Error("cannot listen", "address", metricsFlags.address, "error", err)
		return exitError{exitFailure}
	}
	defer metricsEndpoint.stop(logger) // last, so /readyz says 503 throughout the drain
	xdsFlags.credentials = security.xds
	xdsEndpoint, err := xdsFlags.listen(logger, metricsEndpoint.Metrics())
	if err != nil {
		_ = lis.Close()
		logger.Error("cannot listen", "address", xdsFlags.address, "error", err)
		return exitError{exitFailure}
	}
	defer xdsEndpoint.stop(logger) // after the drain, so xDS clients are served throughout
	// healthServer reports NOT_SERVING once draining starts.
	healthServer := health.NewServer()
	// Closed when shutdown starts: open Sync calls then end at once with
	// Unavailable, and their clients reconnect, rather than waiting out
	// --shutdown-timeout.
	draining := make(chan struct{})
	srv := server.NewGRPCServer(server.Options{
		MaxRecvMsgSize: int(limits.messageSize),
		MaxSendMsgSize: int(limits.responseSize),
		Logger:         logger,
		Metrics:        metricsEndpoint.Metrics(),
		Health:         healthServer,
		XDS:            xdsEndpoint.Publisher(),
		Credentials:    security.grpc,
		// Limits against abuse (serve_limits.go).
		MaxConcurrentStreams:  limits.concurrentStreams,
		MaxSessions:           limits.sessions,
		MaxBatchObjects:       limits.batchObjects,
		MaxSessionBytes:       int64(limits.sessionBytes),
		MaxInflightBytes:      int64(limits.inflightBytes),
		SyncStartTimeout:      limits.syncStartTimeout,
		MaxConnectionAge:      limits.connectionAge,
		MaxConnectionAgeGrace: limits.ageGrace,
		Draining:              draining,
	})

	ctx, stopSignals := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stopSignals()
	// Logged before Serve so that it is the first line: the kernel already
	// queues connections on lis, and nothing else can log before a call.
	logger.Info("serving gRPC", "address", lis.Addr().String(),
		"max_message_size", limits.messageSize.String(), "max_inflight_bytes", limits.inflightBytes.String())
	metricsEndpoint.serve(logger, xdsEndpoint.debugRoutes()...)
	xdsEndpoint.serve(logger)
	// Ready as Serve starts: the listener already queues connections, and a
	// call answered thus always finds /readyz ready.
	metricsEndpoint.setReady(true)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()

	select {
	case err := <-served:
		logger.Error("serving failed", "error", err)
		return exitError{exitFailure}
	case err := <-metricsEndpoint.failures():
		logger.Error("serving metrics failed", "error", err)
		srv.Stop()
		return exitError{exitFailure}
	case err := <-xdsEndpoint.failures():
		logger.Error("serving xDS failed", "error", err)
		srv.Stop()
		return exitError{exitFailure}
	case <-ctx.Done():
	}
	// Restore default signal handling: a second signal kills the process.
	stopSignals()
	// Not ready from now on: health checks and /readyz turn away new calls
	// while the calls in flight finish.
	healthServer.Shutdown()
	metricsEndpoint.setReady(false)
	logger.Info("shutting down", "timeout", f.shutdownTimeout)
	close(draining)

	stopWithin(srv, f.shutdownTimeout, logger, "in-flight calls did not finish in time; closing connections")
	select {
	case err := <-served:
		if err != nil {
			logger.Error("serving failed", "error", err)
			return exitError{exitFailure}
		}
	case <-time.After(handlerStopGrace):
		// stopWithin gave up on handlers that ignore their context; Serve
		// waits for them, the process does not.
	}
	logger.Info("stopped")
	return nil
}
