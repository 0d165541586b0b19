package metrics_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/testproc"
)

// TestHandler scrapes /metrics over real HTTP after a real call, and
// checks the probes.
func TestHandler(t *testing.T) {
	m := metrics.New()
	client := serveTranslation(t, m)
	if _, err := client.Translate(t.Context(), example(t)); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	base := "http://" + lis.Addr().String()

	code, body := testproc.Get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`grpc_server_handled_total{grpc_code="OK",grpc_method="Translate",grpc_service="tributary.v1.TranslationService",grpc_type="unary"} 1`,
		// Every method's series exists before its first call.
		`grpc_server_handled_total{grpc_code="OK",grpc_method="Sync",grpc_service="tributary.v1.TranslationService",grpc_type="bidi_stream"} 0`,
		`tributary_resources_sent_total{rpc="translate",type="envoy.config.cluster.v3.Cluster"} 1`,
		`tributary_translation_duration_seconds_count{rpc="translate"} 1`,
		"tributary_sync_sessions_active 0",
		"tributary_xds_nacks_total",
		"go_goroutines ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	for _, step := range []struct {
		ready    bool
		readyz   int
		readyMsg string
	}{
		{false, http.StatusServiceUnavailable, "not ready\n"}, // New starts not ready
		{true, http.StatusOK, "ready\n"},
		{false, http.StatusServiceUnavailable, "not ready\n"}, // draining
	} {
		m.SetReady(step.ready)
		if code, body := testproc.Get(t, base+"/readyz"); code != step.readyz || body != step.readyMsg {
			t.Errorf("ready %v: /readyz = %d %q, want %d %q", step.ready, code, body, step.readyz, step.readyMsg)
		}
		if code, body := testproc.Get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
			t.Errorf("ready %v: /healthz = %d %q, want 200 \"ok\\n\"", step.ready, code, body)
		}
	}
	if code, _ := testproc.Get(t, base+"/other"); code != http.StatusNotFound {
		t.Errorf("/other: %d, want 404", code)
	}
}

// TestHandlerExtraRoutes serves a route of another package beside the
// metrics, over real HTTP: it answers on its pattern only, and the
// built-in endpoints are unchanged.
func TestHandlerExtraRoutes(t *testing.T) {
	m := metrics.New()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	debug := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "debug "+r.URL.RawQuery+"\n")
	})
	srv := &http.Server{Handler: m.Handler(metrics.Route{Pattern: "GET /debug/thing", Handler: debug}), ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	base := "http://" + lis.Addr().String()

	for _, tc := range []struct {
		path     string
		wantCode int
		wantBody string
	}{
		{"/debug/thing?x=1", http.StatusOK, "debug x=1\n"},
		{"/debug/thing/more", http.StatusNotFound, "404 page not found\n"},
		{"/debug/other", http.StatusNotFound, "404 page not found\n"},
		{"/healthz", http.StatusOK, "ok\n"},
	} {
		if code, body := testproc.Get(t, base+tc.path); code != tc.wantCode || body != tc.wantBody {
			t.Errorf("%s: %d %q, want %d %q", tc.path, code, body, tc.wantCode, tc.wantBody)
		}
	}
}

// serveHandler serves h on a loopback port until the test ends and returns
// its base URL.
func serveHandler(t *testing.T, h http.Handler) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + lis.Addr().String()
}

// TestPprofRoutes: without PprofRoutes the metrics port serves no
// profiling endpoint; with them it serves the index, the command line and
// each named profile.
func TestPprofRoutes(t *testing.T) {
	m := metrics.New()
	off := serveHandler(t, m.Handler())
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap", "/debug/pprof/symbol"} {
		if code, body := testproc.Get(t, off+path); code != http.StatusNotFound || body != "404 page not found\n" {
			t.Errorf("off: %s: %d %q, want 404", path, code, body)
		}
	}

	on := serveHandler(t, m.Handler(metrics.PprofRoutes()...))
	code, index := testproc.Get(t, on+"/debug/pprof/")
	if code != http.StatusOK {
		t.Errorf("on: /debug/pprof/: %d, want 200", code)
	}
	for _, want := range []string{"<title>/debug/pprof/</title>", "<a href='cmdline?debug=1'>cmdline</a>", "<a href='goroutine?debug=1'>goroutine</a>"} {
		if !strings.Contains(index, want) {
			t.Errorf("on: /debug/pprof/ lacks %s:\n%s", want, index)
		}
	}
	if code, body := testproc.Get(t, on+"/debug/pprof/cmdline"); code != http.StatusOK || body != strings.Join(os.Args, "\x00") {
		t.Errorf("on: /debug/pprof/cmdline: %d %q, want 200 %q", code, body, strings.Join(os.Args, "\x00"))
	}
	if code, body := testproc.Get(t, on+"/debug/pprof/goroutine?debug=1"); code != http.StatusOK || !strings.HasPrefix(body, "goroutine profile: total ") {
		t.Errorf("on: /debug/pprof/goroutine?debug=1: %d %.40q, want 200 and a goroutine profile", code, body)
	}
	if code, body := testproc.Get(t, on+"/debug/pprof/symbol"); code != http.StatusOK || body != "num_symbols: 1\n" {
		t.Errorf("on: /debug/pprof/symbol: %d %q, want 200 \"num_symbols: 1\\n\"", code, body)
	}
	// go tool pprof asks for symbols with POST.
	resp, err := http.Post(on+"/debug/pprof/symbol", "text/plain", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	posted, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || string(posted) != "num_symbols: 1\n" {
		t.Errorf("on: POST /debug/pprof/symbol: %d %q %v, want 200 \"num_symbols: 1\\n\"", resp.StatusCode, posted, err)
	}
	// The metrics and probes are where they were.
	if code, body := testproc.Get(t, on+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("on: /healthz: %d %q", code, body)
	}
}
