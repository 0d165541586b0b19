package loadtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/test/loadtest/ghzreport"
)

// TestGHZTranslate loads Translate with the real ghz for two seconds, four
// calls in flight, sending examples/grpc/translate-request.json as
// scripts/load-translate.sh does, and checks that every call succeeded and
// reached the server (its own count of successful Translate calls covers
// ghz's). The numbers are logged, not judged: BENCHMARKS.md records those
// of a longer `make load`.
func TestGHZTranslate(t *testing.T) {
	// bin/ghz, from `make tools`: without it the test skips, unless CI is
	// set.
	ghz := testproc.Tool(t, "ghz")
	srv := startServer(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
	defer cancel()

	report := filepath.Join(t.TempDir(), "ghz.json")
	cmd := exec.CommandContext(ctx, ghz, "--insecure",
		"--call", "tributary.v1.TranslationService/Translate",
		"--data-file", "../../examples/grpc/translate-request.json",
		"--duration", "2s", "--duration-stop", "wait",
		"--concurrency", "4", "--connections", "1",
		"--format", "json", "--output", report,
		srv.Address)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("ghz: %v\n%s", err, out.String())
	}
	f, err := os.Open(report)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := ghzreport.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Summary())
	if rep.Failed() > 0 {
		t.Errorf("%d of %d calls failed:\n%s", rep.Failed(), rep.Count, rep.Errors())
	}
	ok, _ := testproc.Metric(srv.scrape(t), "grpc_server_handled_total", `grpc_method="Translate"`, `grpc_code="OK"`)
	if int(ok) < rep.Count {
		t.Errorf("the server answered %v Translate calls with OK, ghz counted %d", ok, rep.Count)
	}
}
