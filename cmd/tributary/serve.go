package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc/health"

	"github.com/tributary-dev/tributary/internal/server"
)

// defaultAddress is loopback on purpose: without the TLS flags (see
// serve_tls.go) the service has no authentication, so exposing it beyond the
// host (or the pod) must be a deliberate --address choice, such as
// 0.0.0.0:8081 with mutual TLS or behind a NetworkPolicy.
const defaultAddress = "127.0.0.1:8081"

const serveSynopsis = "tributary serve [--address 127.0.0.1:8081] [--max-message-size SIZE] [--max-response-size 64MiB] [--max-inflight-bytes SIZE] [--log-level info] [--shutdown-timeout 10s] [--metrics-address host:port] [--xds-address host:port] [--xds-withdraw-grace 30s] [--xds-max-streams 4096] [--xds-max-names-per-stream 50000] [--xds-max-names 1000000] [--xds-max-node-length 1024] [--xds-max-streams-per-connection 100] [--xds-max-request-bytes 4MiB] [--tls-cert-file FILE --tls-key-file FILE [--tls-client-ca-file FILE [--tls-allowed-client-sans SAN,...] [--xds-tls-allowed-client-sans SAN,...]]] [--max-sessions 1000] [--max-batch-objects 100000] [--max-session-bytes 512MiB] [--max-concurrent-streams 16] [--sync-start-timeout 10s] [--max-connection-age 1h] [--max-connection-age-grace 15m]"

// runServe serves TranslationService (with health and reflection) until
// SIGTERM or SIGINT, then drains: open Sync calls end at once with
// Unavailable, and other calls in flight get --shutdown-timeout to finish
// before connections are closed. The first log line names the
// address actually listened on, so --address 127.0.0.1:0 picks a free port
// that callers can read back. A second signal during the drain ends the
// process at once.
func runServe(ctx context.Context, args []string, std stdio) int {
	fs := newFlagSet("serve", serveSynopsis, std.err)
	address := fs.String("address", defaultAddress,
		"`host:port` to listen on; the loopback default keeps the unauthenticated service private to the host, use 0.0.0.0:8081 to serve every interface")
	logLevel := fs.String("log-level", "info", "log `level`: debug, info, warn or error")
	shutdownTimeout := fs.Duration("shutdown-timeout", 10*time.Second, "how long in-flight calls may run after SIGTERM before connections are closed")
	metricsFlags := registerMetricsFlags(fs)
	xdsFlags := registerXDSFlags(fs)
	tlsFlags := registerTLSFlags(fs)
	limits := registerLimitFlags(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		std.errorf("tributary serve: invalid --log-level %q: want debug, info, warn or error\n", *logLevel)
		return 2
	}
	if err := limits.check(); err != nil {
		std.errorf("tributary serve: %v\n", err)
		return 2
	}
	if err := limits.resolve(memoryLimit()); err != nil {
		std.errorf("tributary serve: %v\n", err)
		return 2
	}
	if err := xdsFlags.check(); err != nil {
		std.errorf("tributary serve: %v\n", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(std.err, &slog.HandlerOptions{Level: level}))
	grpcLog.Use(logger)
	security, err := tlsFlags.start(logger, xdsFlags.address != "")
	if err != nil {
		return tlsFailure(err, logger, std)
	}
	defer security.close()

	lis, err := net.Listen("tcp", *address)
	if err != nil {
		logger.Error("cannot listen", "address", *address, "error", err)
		return 1
	}
	metricsEndpoint, err := metricsFlags.listen()
	if err != nil {
		_ = lis.Close()
		logger.Error("cannot listen", "address", metricsFlags.address, "error", err)
		return 1
	}
	defer metricsEndpoint.stop(logger) // last, so /readyz says 503 throughout the drain
	xdsFlags.credentials = security.xds
	xdsEndpoint, err := xdsFlags.listen(logger, metricsEndpoint.Metrics())
	if err != nil {
		_ = lis.Close()
		logger.Error("cannot listen", "address", xdsFlags.address, "error", err)
		return 1
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
		return 1
	case err := <-metricsEndpoint.failures():
		logger.Error("serving metrics failed", "error", err)
		srv.Stop()
		return 1
	case err := <-xdsEndpoint.failures():
		logger.Error("serving xDS failed", "error", err)
		srv.Stop()
		return 1
	case <-ctx.Done():
	}
	// Restore default signal handling: a second signal kills the process.
	stopSignals()
	// Not ready from now on: health checks and /readyz turn away new calls
	// while the calls in flight finish.
	healthServer.Shutdown()
	metricsEndpoint.setReady(false)
	logger.Info("shutting down", "timeout", *shutdownTimeout)
	close(draining)

	stopWithin(srv, *shutdownTimeout, logger, "in-flight calls did not finish in time; closing connections")
	select {
	case err := <-served:
		if err != nil {
			logger.Error("serving failed", "error", err)
			return 1
		}
	case <-time.After(handlerStopGrace):
		// stopWithin gave up on handlers that ignore their context; Serve
		// waits for them, the process does not.
	}
	logger.Info("stopped")
	return 0
}
