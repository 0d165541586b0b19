package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/internal/tlsfiles/testcerts"
)

// TestServeMetricsAndDrain serves with --metrics-address, scrapes it, then
// starts draining (as on SIGTERM) while a Sync session and a health Watch
// are open: the Sync session ends at once with Unavailable, the health
// service turns NOT_SERVING and /readyz 503 while /healthz stays 200, and
// once the Watch ends (the one call that keeps the drain going) the process
// exits 0 and the HTTP server is gone.
func TestServeMetricsAndDrain(t *testing.T) {
	s := startServe(t, "--metrics-address", "127.0.0.1:0", "--shutdown-timeout", "10m")
	base := "http://" + s.metricsAddress

	conn, err := grpc.NewClient(s.grpcAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	translation := tributaryv1.NewTranslationServiceClient(conn)
	if _, err := translation.Translate(t.Context(), &tributaryv1.TranslateRequest{}); err != nil {
		t.Fatal(err)
	}
	// The first answer of the session means Serve has started: ready.
	if code, body := testproc.Get(t, base+"/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz while serving: %d %q", code, body)
	}
	if _, body := testproc.Get(t, base+"/metrics"); !strings.Contains(body,
		`grpc_server_handled_total{grpc_code="OK",grpc_method="Translate",grpc_service="tributary.v1.TranslationService",grpc_type="unary"} 1`) {
		t.Errorf("/metrics does not count the Translate call:\n%s", body)
	}

	syncCtx, endSync := context.WithCancel(t.Context())
	defer endSync()
	session, err := translation.Sync(syncCtx)
	if err != nil {
		t.Fatal(err)
	}
	if err := session.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}}); err != nil {
		t.Fatal(err)
	}
	if err := session.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: &tributaryv1.SyncBatch{Id: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := session.Recv(); err != nil {
		t.Fatal(err)
	}
	watchCtx, endWatch := context.WithCancel(t.Context())
	defer endWatch()
	watch, err := healthpb.NewHealthClient(conn).Watch(watchCtx, &healthpb.HealthCheckRequest{Service: "tributary.v1.TranslationService"})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := watch.Recv(); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health before draining: %v, %v", resp, err)
	}

	s.cancel() // as SIGTERM does
	if resp, err := watch.Recv(); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health once draining: %v, %v", resp, err)
	}
	if _, err := session.Recv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("the Sync session ended with %v, want Unavailable", err)
	}
	// /readyz turns right after the health service; the drain waits for
	// the Watch, so the HTTP server is still there.
	for {
		code, _ := testproc.Get(t, base+"/readyz")
		if code == http.StatusServiceUnavailable {
			break
		}
		if code != http.StatusOK {
			t.Fatalf("/readyz while draining: %d", code)
		}
		time.Sleep(time.Millisecond)
	}
	if code, _ := testproc.Get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while draining: %d, want 200", code)
	}

	endWatch()
	if code := s.stop(); code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, s.logs.String())
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/healthz", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_ = resp.Body.Close()
		t.Error("the metrics server still answers after serve returned")
	}
}

// TestServeBuildInfoCertificateExpiryAndPprof: /metrics says which build
// runs and when the certificate each port serves expires; --enable-pprof
// adds Go's profiles, which are otherwise not served.
func TestServeBuildInfoCertificateExpiryAndPprof(t *testing.T) {
	dir := t.TempDir()
	server := testcerts.NewCA(t, "test CA").Server(t)
	certFile, keyFile := server.Write(t, dir)
	s := startServe(t, "--metrics-address", "127.0.0.1:0", "--xds-address", "127.0.0.1:0",
		"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--enable-pprof")
	base := "http://" + s.metricsAddress
	_, page := testproc.Get(t, base+"/metrics")

	v, revision := buildVersion()
	wantBuild := fmt.Sprintf("tributary_build_info{go_version=%q,revision=%q,version=%q} 1\n", runtime.Version(), revision, v)
	if !strings.Contains(page, wantBuild) {
		t.Errorf("/metrics lacks %q:\n%s", wantBuild, page)
	}
	for _, listener := range []string{"grpc", "xds"} {
		got, ok := testproc.Metric(page, "tributary_tls_certificate_expiry_timestamp_seconds", `listener="`+listener+`"`)
		if want := float64(server.Cert.NotAfter.Unix()); !ok || got != want {
			t.Errorf("certificate expiry of %s = %v (found %v), want %v", listener, got, ok, want)
		}
	}
	// In process, the command line is the test binary's.
	if code, body := testproc.Get(t, base+"/debug/pprof/cmdline"); code != http.StatusOK || body != strings.Join(os.Args, "\x00") {
		t.Errorf("/debug/pprof/cmdline with --enable-pprof: %d %q", code, body)
	}

	if got := runCmd(t, "", "serve", "--enable-pprof"); got.code != 2 || got.stderr != "error: --enable-pprof needs --metrics-address: the profiles are served there\n"+serveUsageHint {
		t.Errorf("--enable-pprof alone: exit %d, stderr %q", got.code, got.stderr)
	}
	plain := startServe(t, "--metrics-address", "127.0.0.1:0")
	if code, _ := testproc.Get(t, "http://"+plain.metricsAddress+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ without --enable-pprof: %d, want 404", code)
	}
	if _, page := testproc.Get(t, "http://"+plain.metricsAddress+"/metrics"); strings.Contains(page, "tributary_tls_certificate_expiry_timestamp_seconds{") {
		t.Errorf("a plaintext server exports a certificate expiry:\n%s", page)
	}
}
