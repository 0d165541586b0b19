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

// TestUsage: exit codes (0 ok, 1 failure, 2 usage), help on stdout, and
// every error on stderr behind one prefix, with a pointer to the help for
// a usage error.
func TestUsage(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string // substring
		wantStderr string // exact
	}{
		{"no command", nil, 0, "Usage:\n  tributary [flags]\n  tributary [command]\n", ""},
		{"unknown command", []string{"frobnicate"}, 2, "",
			"error: unknown command \"frobnicate\" for \"tributary\"\nRun 'tributary --help' for usage.\n"},
		{"a command misspelt", []string{"translat"}, 2, "",
			"error: unknown command \"translat\" for \"tributary\"; did you mean \"translate\"?\nRun 'tributary --help' for usage.\n"},
		{"help", []string{"help"}, 0, "\n  translate   Translate manifests once and print the result\n", ""},
		{"--help", []string{"--help"}, 0, "Exit codes: 0 success, 1 failure, 2 usage error", ""},
		{"version", []string{"version"}, 0, "tributary ", ""},
		{"version takes no arguments", []string{"version", "extra"}, 2, "",
			"error: \"tributary version\" takes no arguments, got \"extra\"\nRun 'tributary version --help' for usage.\n"},
		{"translate -h", []string{"translate", "-h"}, 0, "\n  tributary translate -f PATH [-f PATH...] [flags]\n", ""},
		{"translate needs -f", []string{"translate"}, 2, "",
			"error: at least one -f PATH is required\nRun 'tributary translate --help' for usage.\n"},
		{"translate positional argument", []string{"translate", "-f", example, "more.yaml"}, 2, "",
			"error: \"tributary translate\" takes no arguments, got \"more.yaml\"\nRun 'tributary translate --help' for usage.\n"},
		{"unknown flag", []string{"translate", "--bogus"}, 2, "",
			"error: unknown flag: --bogus\nRun 'tributary translate --help' for usage.\n"},
		{"serve -h", []string{"serve", "-h"}, 0, "      --max-session-bytes quantity ", ""},
		{"serve log level", []string{"serve", "--log-level", "loud"}, 2, "",
			"error: invalid --log-level \"loud\": want debug, info, warn or error\nRun 'tributary serve --help' for usage.\n"},
		{"serve log format", []string{"serve", "--log-format", "xml"}, 2, "",
			"error: invalid --log-format \"xml\": want text or json\nRun 'tributary serve --help' for usage.\n"},
		{"serve message size", []string{"serve", "--max-message-size", "64MiB"}, 2, "",
			"error: invalid argument \"64MiB\" for \"--max-message-size\" flag: \"64MiB\" is not a quantity (a number of bytes, or with a suffix such as Ki, Mi or Gi: 64Mi)\nRun 'tributary serve --help' for usage.\n"},
		{"serve key without certificate", []string{"serve", "--tls-key-file", "tls.key"}, 2, "",
			"error: --tls-key-file needs --tls-cert-file\nRun 'tributary serve --help' for usage.\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runCmd(t, "", tc.args...)
			if got.code != tc.wantCode || !strings.Contains(got.stdout, tc.wantStdout) || got.stderr != tc.wantStderr {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit %d, stdout containing %q, stderr %q",
					got.code, got.stdout, got.stderr, tc.wantCode, tc.wantStdout, tc.wantStderr)
			}
		})
	}
}

// TestServeHelpDefaults: each flag's default is printed once, by pflag,
// in the form the flag takes.
func TestServeHelpDefaults(t *testing.T) {
	help := runCmd(t, "", "serve", "--help").stdout
	for flag, wantDefault := range map[string]string{
		"--max-session-bytes": "512Mi", "--max-response-size": "64Mi", "--xds-max-request-bytes": "4Mi",
	} {
		line := helpLine(t, help, flag)
		if n := strings.Count(line, "default"); n != 1 || !strings.HasSuffix(line, "(default "+wantDefault+")") {
			t.Errorf("%s help says default %d times, want once, at the end, as %s:\n%s", flag, n, wantDefault, line)
		}
	}
}

// helpLine is the line of help that describes flag.
func helpLine(t *testing.T, help, flag string) string {
	t.Helper()
	for line := range strings.SplitSeq(help, "\n") {
		if strings.Contains(line, flag+" ") {
			return line
		}
	}
	t.Fatalf("help lists no %s:\n%s", flag, help)
	return ""
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
	for in, want := range map[string]byteSize{"0": 0, "1048576": 1 << 20, "64Mi": 64 << 20, "3Ki": 3 << 10, "1Gi": 1 << 30, "12": 12, "1k": 1000, "2M": 2_000_000} {
		var s byteSize
		if err := s.Set(in); err != nil || s != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, s, err, want)
		}
	}
	for in, wantErr := range map[string]string{
		"":      `"" is not a quantity (a number of bytes, or with a suffix such as Ki, Mi or Gi: 64Mi)`,
		"64MiB": `"64MiB" is not a quantity (a number of bytes, or with a suffix such as Ki, Mi or Gi: 64Mi)`,
		"-1":    `"-1" is not a whole, non-negative number of bytes`,
		"1.5":   `"1.5" is not a whole, non-negative number of bytes`,
		"2Gi":   `"2Gi" is too large (at most 2147483647 bytes, just under 2Gi)`,
	} {
		var s byteSize
		if err := s.Set(in); err == nil || err.Error() != wantErr {
			t.Errorf("Set(%q) = %d, %v; want error %s", in, s, err, wantErr)
		}
	}
	for size, want := range map[byteSize]string{64 << 20: "64Mi", 0: "0", 1000: "1k", 1500: "1500", 3 << 30 / 2: "1536Mi"} {
		if got := size.String(); got != want {
			t.Errorf("byteSize(%d).String() = %q, want %q", int(size), got, want)
		}
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
