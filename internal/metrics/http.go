package metrics

import (
	"net/http"
	"net/http/pprof"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// probes holds what /readyz reports.
type probes struct {
	ready atomic.Bool
}

// SetReady sets what /readyz answers: true once the gRPC listeners serve,
// false again when the server starts draining, so a load balancer stops
// sending new calls before connections close.
func (m *Metrics) SetReady(ready bool) {
	if m == nil {
		return
	}
	m.probes.ready.Store(ready)
}

// Ready reports what /readyz answers.
func (m *Metrics) Ready() bool {
	return m != nil && m.probes.ready.Load()
}

// Handler serves
//   - /metrics: every metric in the registry, in the Prometheus text format
//     (or OpenMetrics, when the scraper asks for it);
//   - /healthz: 200 while the process can answer HTTP at all (liveness:
//     nothing else is checked, so a busy translation never gets the process
//     restarted);
//   - /readyz: 200 while ready (see SetReady), else 503;
//   - every route of extra.
//
// Any other path is 404.
func (m *Metrics) Handler(extra ...Route) http.Handler {
	mux := http.NewServeMux()
	for _, r := range extra {
		mux.Handle(r.Pattern, r.Handler)
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		Registry:          m.registry, // counts failed scrapes in promhttp_metric_handler_errors_total
		EnableOpenMetrics: true,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeProbe(w, http.StatusOK, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if m.Ready() {
			writeProbe(w, http.StatusOK, "ready\n")
			return
		}
		writeProbe(w, http.StatusServiceUnavailable, "not ready\n")
	})
	return mux
}

// Route is an endpoint that another package serves on the metrics
// listener, beside the metrics and probes: debugging endpoints such as the
// xDS server's status, which belong on this private, plain-HTTP port rather
// than on the gRPC ports clients reach. This package knows nothing of what
// they serve.
type Route struct {
	// Pattern is an http.ServeMux pattern, such as "GET /debug/xds".
	Pattern string
	Handler http.Handler
}

// PprofRoutes are Go's profiling endpoints (net/http/pprof) under
// /debug/pprof/, for Handler's extra routes: the index at /debug/pprof/,
// every runtime profile by name below it (heap, goroutine, allocs, block,
// mutex, threadcreate; ?debug=1 for text), and cmdline, profile (CPU, for
// ?seconds=N), symbol and trace. They are off unless a caller passes them
// (the command's --enable-pprof): a CPU profile or trace costs the process
// while it runs, and the command line and profiles tell whoever can reach
// the port a lot about it.
//
// Importing net/http/pprof also registers these on http.DefaultServeMux,
// which nothing in Tributary serves.
func PprofRoutes() []Route {
	return []Route{
		// The index also serves each named profile: /debug/pprof/heap.
		{Pattern: "GET /debug/pprof/", Handler: http.HandlerFunc(pprof.Index)},
		{Pattern: "GET /debug/pprof/cmdline", Handler: http.HandlerFunc(pprof.Cmdline)},
		{Pattern: "GET /debug/pprof/profile", Handler: http.HandlerFunc(pprof.Profile)},
		// go tool pprof looks symbols up with POST as well as GET.
		{Pattern: "GET /debug/pprof/symbol", Handler: http.HandlerFunc(pprof.Symbol)},
		{Pattern: "POST /debug/pprof/symbol", Handler: http.HandlerFunc(pprof.Symbol)},
		{Pattern: "GET /debug/pprof/trace", Handler: http.HandlerFunc(pprof.Trace)},
	}
}

func writeProbe(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	// A failed write means the prober left; there is no one to tell.
	_, _ = w.Write([]byte(body))
}
