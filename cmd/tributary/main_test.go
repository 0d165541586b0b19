package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/yaml"

	"github.com/tributary-dev/tributary/internal/manifest"
)

const example = "../../examples/extauth.yaml"

// result is one in-process run of the command.
type result struct {
	code           int
	stdout, stderr string
}

func runCmd(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, stdio{in: strings.NewReader(stdin), out: &stdout, err: &stderr})
	return result{code, stdout.String(), stderr.String()}
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUsage(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string // substring
		wantStderr string // substring
	}{
		{"no command", nil, 2, "", "Usage:\n  tributary serve"},
		{"unknown command", []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"help", []string{"help"}, 0, "tributary translate [flags]", ""},
		{"version", []string{"version"}, 0, "tributary ", ""},
		{"version takes no arguments", []string{"version", "extra"}, 2, "", `unexpected argument "extra"`},
		{"translate -h", []string{"translate", "-h"}, 0, "", "Usage: " + translateSynopsis},
		{"translate needs -f", []string{"translate"}, 2, "", "at least one -f PATH is required"},
		{"translate output format", []string{"translate", "-f", example, "-o", "xml"}, 2, "", `invalid -o "xml": want json or yaml`},
		{"translate positional argument", []string{"translate", "-f", example, "more.yaml"}, 2, "", `unexpected argument "more.yaml"`},
		{"translate unknown flag", []string{"translate", "--bogus"}, 2, "", "flag provided but not defined: -bogus"},
		{"serve log level", []string{"serve", "--log-level", "loud"}, 2, "", `invalid --log-level "loud"`},
		{"serve message size", []string{"serve", "--max-message-size", "lots"}, 2, "", `"lots" is not a size`},
		{"serve bad address", []string{"serve", "--address", "127.0.0.1:99999"}, 1, "", "cannot listen"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runCmd(t, "", tc.args...)
			if got.code != tc.wantCode || !strings.Contains(got.stdout, tc.wantStdout) || !strings.Contains(got.stderr, tc.wantStderr) {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout containing %q, stderr containing %q",
					got.code, got.stdout, got.stderr, tc.wantCode, tc.wantStdout, tc.wantStderr)
			}
		})
	}
}

// TestTranslateOutput checks what the golden cases take for granted: the
// JSON is stable and indented, YAML is the same document, stdin reads like a
// file, and settings reach the service.
func TestTranslateOutput(t *testing.T) {
	first := runCmd(t, "", "translate", "-f", example)
	if first.code != 0 || first.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", first.code, first.stderr)
	}
	if !strings.HasPrefix(first.stdout, "{\n  \"clusters\": [\n    {\n      \"name\": \"extension/auth/ext-authz\",") {
		t.Errorf("JSON is not indented as expected:\n%s", first.stdout)
	}
	for range 3 {
		if again := runCmd(t, "", "translate", "-f", example); again.stdout != first.stdout {
			t.Fatalf("output changed between runs:\n%s", cmp.Diff(first.stdout, again.stdout))
		}
	}

	asYAML := runCmd(t, "", "translate", "-f", example, "-o", "yaml")
	want, err := yaml.JSONToYAML([]byte(first.stdout))
	if err != nil {
		t.Fatal(err)
	}
	if asYAML.code != 0 || asYAML.stdout != string(want) {
		t.Errorf("-o yaml is not the JSON output as YAML (-want +got):\n%s", cmp.Diff(string(want), asYAML.stdout))
	}

	input, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	fromStdin := runCmd(t, string(input), "translate", "-f", manifest.Stdin)
	if fromStdin.code != 0 || fromStdin.stdout != first.stdout {
		t.Errorf("-f - differs from -f FILE (-file +stdin):\n%s", cmp.Diff(first.stdout, fromStdin.stdout))
	}

	settings := writeTemp(t, "settings.yaml", "connectTimeout: 250ms\nxdsClusterName: xds\n")
	withSettings := runCmd(t, "", "translate", "-f", example, "--settings", settings)
	for _, want := range []string{`"connectTimeout": "0.250s"`, `"clusterName": "xds"`} {
		if !strings.Contains(withSettings.stdout, want) {
			t.Errorf("with settings, output lacks %s:\n%s", want, withSettings.stdout)
		}
	}
}

func TestTranslateEmpty(t *testing.T) {
	got := runCmd(t, "# nothing to translate\n", "translate", "-f", "-")
	want := "{\n  \"clusters\": [],\n  \"clusterLoadAssignments\": [],\n  \"statuses\": []\n}\n"
	if got.code != 0 || got.stdout != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", got.code, got.stdout, want)
	}
}

func TestTranslateErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	badSettings := writeTemp(t, "settings.yaml", "upstreamTLS:\n  minimumVersion: \"1.2\"\n")
	tests := map[string]struct {
		args       []string
		wantStderr string
	}{
		"missing input": {[]string{"-f", missing}, "tributary translate: stat " + missing + ": no such file or directory\n"},
		"missing settings": {[]string{"-f", example, "--settings", missing},
			"tributary translate: open " + missing + ": no such file or directory\n"},
		"unknown setting": {[]string{"-f", example, "--settings", badSettings},
			"tributary translate: " + badSettings + ": unknown field \"upstreamTLS.minimumVersion\"\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := runCmd(t, "", append([]string{"translate"}, tc.args...)...)
			if got.code != 1 || got.stderr != tc.wantStderr || got.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1, stderr:\n%s", got.code, got.stdout, got.stderr, tc.wantStderr)
			}
		})
	}
}

func TestDescribeServiceError(t *testing.T) {
	positions := []manifest.Position{{Path: "a.yaml", Document: 1, Item: -1}}
	tests := map[string]struct {
		err  error
		want string
	}{
		"not a status": {io.ErrUnexpectedEOF, "tributary translate: unexpected EOF\n"},
		"other code": {status.Error(codes.Internal, "internal error"),
			"tributary translate: translation failed (Internal): internal error\n"},
		"InvalidArgument without details": {status.Error(codes.InvalidArgument, "bad"),
			"tributary translate: invalid input: bad\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := describeServiceError(tc.err, positions, ""); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	for field, want := range map[string]string{
		"objects[0].service.metadata.name": "a.yaml: document 1: ",
		"objects[1].service.metadata.name": "",
		"settings.connectTimeout":          "s.yaml: ",
		"settingsX":                        "",
	} {
		if got := violationSource(field, positions, "s.yaml"); got != want {
			t.Errorf("violationSource(%q) = %q, want %q", field, got, want)
		}
	}
}

func TestByteSize(t *testing.T) {
	for in, want := range map[string]byteSize{"0": 0, "1048576": 1 << 20, "64MiB": 64 << 20, "3KiB": 3 << 10, "1GiB": 1 << 30, "12B": 12} {
		var s byteSize
		if err := s.Set(in); err != nil || s != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, s, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5MiB", "2GiB", "64MB", "MiB"} {
		var s byteSize
		if err := s.Set(in); err == nil {
			t.Errorf("Set(%q) = %d, want an error", in, s)
		}
	}
	if got := byteSize(64 << 20); got.String() != "64MiB" {
		t.Errorf("String() = %q, want 64MiB", got.String())
	}
}

// TestServeInProcess serves until its context ends (as on SIGTERM) and
// checks the server answered health checks and stopped cleanly.
func TestServeInProcess(t *testing.T) {
	s := startServe(t, "--log-level", "debug")
	conn, err := grpc.NewClient(s.grpcAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	resp, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{Service: "tributary.v1.TranslationService"})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health check: %v, %v", resp, err)
	}

	if code := s.stop(); code != 0 {
		t.Fatalf("exit %d after shutdown; log:\n%s", code, s.logs.String())
	}
	for _, want := range []string{"msg=\"shutting down\"", "msg=stopped"} {
		if !strings.Contains(s.logs.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, s.logs.String())
		}
	}
}
