package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"time"

	"github.com/spf13/pflag"

	"github.com/tributary-dev/tributary/internal/metrics"
)

// metricsShutdownTimeout bounds how long a scrape or probe in progress may
// run once the gRPC server has stopped.
const metricsShutdownTimeout = 2 * time.Second

// metricsFlags are serve's observability flags.
type metricsFlags struct {
	address     string
	enablePprof bool
}

// registerMetricsFlags adds --metrics-address to fs. It is off by default:
// a fixed default port would collide wherever two servers share a host (or
// a test runs several), and turning it on is one flag in a deployment.
func registerMetricsFlags(fs *pflag.FlagSet) *metricsFlags {
	f := &metricsFlags{}
	fs.StringVar(&f.address, "metrics-address", "",
		"`host:port` serving Prometheus /metrics, /healthz, /readyz and (with --xds-address) /debug/xds over HTTP, such as 127.0.0.1:9090 or 0.0.0.0:9090 for a scraper in the cluster; empty (the default) serves none and records no metrics")
	fs.BoolVar(&f.enablePprof, "enable-pprof", false,
		"serve Go's profiles under /debug/pprof/ on --metrics-address, for a developer's go tool pprof; off by default, since a profile shows the process's inner workings and a CPU profile costs while it runs")
	return f
}

// check refuses --enable-pprof without a port to serve it on.
func (f *metricsFlags) check() error {
	if f.enablePprof && f.address == "" {
		return errors.New("--enable-pprof needs --metrics-address: the profiles are served there")
	}
	return nil
}

// newMetrics gives what the server records into, with the build's
// identity set: nil (nothing recorded) without --metrics-address. It comes
// before listen so that what starts earlier (TLS) can record too.
func (f *metricsFlags) newMetrics() *metrics.Metrics {
	if f.address == "" {
		return nil
	}
	m := metrics.New()
	v, revision := buildVersion()
	m.SetBuildInfo(v, revision, runtime.Version())
	return m
}

// metricsEndpoint is the HTTP server of --metrics-address and the Metrics
// it serves. Every method does nothing on a nil *metricsEndpoint, which is
// what listen returns when the flag is empty.
type metricsEndpoint struct {
	// pprof adds Go's profiles to the routes (--enable-pprof).
	pprof   bool
	metrics *metrics.Metrics
	lis     net.Listener
	server  *http.Server
	// failed receives the error of Serve, should it stop on its own.
	failed chan error
}

// listen opens the metrics listener for m (newMetrics), before anything
// is served, so a busy port fails serve at once.
func (f *metricsFlags) listen(m *metrics.Metrics) (*metricsEndpoint, error) {
	if f.address == "" {
		return nil, nil
	}
	lis, err := net.Listen("tcp", f.address)
	if err != nil {
		return nil, err
	}
	return &metricsEndpoint{
		pprof:   f.enablePprof,
		metrics: m,
		lis:     lis,
		// A scraper is on a trusted network but may still be slow or
		// broken: bound how long it may hold a connection. The handler is
		// set by serve, once the endpoints of other servers are known.
		server: &http.Server{ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute},
		failed: make(chan error, 1),
	}, nil
}

// Metrics is what the gRPC server records into: nil when metrics are off.
func (e *metricsEndpoint) Metrics() *metrics.Metrics {
	if e == nil {
		return nil
	}
	return e.metrics
}

// serve starts serving HTTP, the metrics and probes and the debugging
// endpoints of other servers (debug: the xDS status), after logging the
// address actually listened on (--metrics-address 127.0.0.1:0 picks a free
// port).
func (e *metricsEndpoint) serve(logger *slog.Logger, debug ...metrics.Route) {
	if e == nil {
		return
	}
	if e.pprof {
		debug = append(debug, metrics.PprofRoutes()...)
	}
	e.server.Handler = e.metrics.Handler(debug...)
	logger.Info("serving metrics", "address", e.lis.Addr().String())
	go func() {
		if err := e.server.Serve(e.lis); !errors.Is(err, http.ErrServerClosed) {
			e.failed <- err
		}
	}()
}

// failures receives the error that stopped the HTTP server; with metrics
// off it is nil, so it never receives.
func (e *metricsEndpoint) failures() <-chan error {
	if e == nil {
		return nil
	}
	return e.failed
}

// setReady sets what /readyz answers.
func (e *metricsEndpoint) setReady(ready bool) {
	e.Metrics().SetReady(ready)
}

// stop stops the HTTP server, letting requests in progress finish for a
// moment. It comes last, so /readyz answers 503 throughout the drain.
func (e *metricsEndpoint) stop(logger *slog.Logger) {
	if e == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), metricsShutdownTimeout)
	defer cancel()
	if err := e.server.Shutdown(ctx); err != nil {
		logger.Warn("metrics requests did not finish in time; closing their connections", "error", err)
		_ = e.server.Close() // its error would only repeat Shutdown's
	}
}
