package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
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
	const wantStart = `{
  "configDump": {
    "configs": [
      {
        "@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump",
        "dynamicActiveClusters": [
          {
            "versionInfo": "`
	if !strings.HasPrefix(first.stdout, wantStart) {
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

// TestTranslateExamplesDirectory: the repository's examples directory,
// read as kubectl reads one (not recursively), translates to what its one
// manifest file does.
func TestTranslateExamplesDirectory(t *testing.T) {
	dir := runCmd(t, "", "translate", "-f", filepath.Dir(example))
	file := runCmd(t, "", "translate", "-f", example)
	if dir.code != 0 || dir.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", dir.code, dir.stderr)
	}
	if dir.stdout != file.stdout {
		t.Errorf("-f examples/ differs from -f %s (-file +directory):\n%s", example, cmp.Diff(file.stdout, dir.stdout))
	}
}

func TestTranslateEmpty(t *testing.T) {
	got := runCmd(t, "# nothing to translate\n", "translate", "-f", "-")
	const want = `{
  "configDump": {
    "configs": [
      {
        "@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump"
      },
      {
        "@type": "type.googleapis.com/envoy.admin.v3.EndpointsConfigDump"
      }
    ]
  },
  "statuses": {
    "apiVersion": "v1",
    "kind": "List",
    "items": []
  }
}
`
	if got.code != 0 || got.stdout != want {
		t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", got.code, got.stdout, want)
	}
}

// TestTranslateTypes: --type cluster and endpoint print the configDump of
// --type all with only their section, --type status its statuses, each
// under its singular and its plural; --type availability the targets'
// availability, which --type all leaves out; any other value is a usage
// error.
func TestTranslateTypes(t *testing.T) {
	all := runCmd(t, "", "translate", "-f", example)
	if all.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", all.code, all.stderr)
	}
	var parts struct {
		ConfigDump struct {
			Configs []json.RawMessage `json:"configs"`
		} `json:"configDump"`
		Statuses json.RawMessage `json:"statuses"`
	}
	if err := json.Unmarshal([]byte(all.stdout), &parts); err != nil || len(parts.ConfigDump.Configs) != 2 {
		t.Fatalf("--type all: %v, %d configs:\n%s", err, len(parts.ConfigDump.Configs), all.stdout)
	}
	configDumpOf := func(section json.RawMessage) string {
		out, err := indentedJSON(map[string][]json.RawMessage{"configs": {section}})
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	statuses, err := indentedJSON(parts.Statuses)
	if err != nil {
		t.Fatal(err)
	}
	const wantStatuses = `{
  "apiVersion": "v1",
  "kind": "List",
  "items": [
    {
      "apiVersion": "projectcontour.io/v1alpha1",
      "kind": "ExtensionService",
      "metadata": {
        "name": "ext-authz",
        "namespace": "auth"
      },
      "status": {
        "conditions": [
          {
            "type": "Valid",
            "status": "True",
            "observedGeneration": 0,
            "reason": "Valid",
            "message": "Valid ExtensionService"
          }
        ]
      }
    }
  ]
}
`
	// The example's two Services, both ready and weighted: no reason.
	const wantAvailability = `[
  {
    "namespace": "auth",
    "name": "ext-authz",
    "services": [
      {
        "service": "authz-stable",
        "port": 9001,
        "readyEndpoints": 3,
        "weight": 80
      },
      {
        "service": "authz-canary",
        "port": 9001,
        "readyEndpoints": 1,
        "weight": 20
      }
    ]
  }
]
`
	if string(statuses) != wantStatuses {
		t.Errorf("statuses of --type all (-want +got):\n%s", cmp.Diff(wantStatuses, string(statuses)))
	}
	for _, tc := range []struct {
		types []string
		want  string
		what  outputType
	}{
		{[]string{"all"}, all.stdout, outputAll},
		{[]string{"cluster", "clusters"}, configDumpOf(parts.ConfigDump.Configs[0]), outputCluster},
		{[]string{"endpoint", "endpoints"}, configDumpOf(parts.ConfigDump.Configs[1]), outputEndpoint},
		{[]string{"status", "statuses"}, wantStatuses, outputStatus},
		{[]string{"availability"}, wantAvailability, outputAvailability},
	} {
		for _, typ := range tc.types {
			got := runCmd(t, "", "translate", "-f", example, "--type", typ)
			if got.code != 0 || got.stderr != "" || got.stdout != tc.want {
				t.Errorf("--type %s: exit %d, stderr %q, stdout (-want +got):\n%s", typ, got.code, got.stderr, cmp.Diff(tc.want, got.stdout))
			}
			if tc.what == outputCluster || tc.what == outputEndpoint {
				dump := decodeConfigDump(t, []byte(got.stdout), tc.what)
				if len(dump.clusters)+len(dump.loadAssignments) != 1 {
					t.Errorf("--type %s: %d Clusters and %d ClusterLoadAssignments, want one of the type", typ, len(dump.clusters), len(dump.loadAssignments))
				}
			}
		}
	}

	bad := runCmd(t, "", "translate", "-f", example, "--type", "listeners")
	const wantBad = "error: invalid --type \"listeners\": want all, cluster, endpoint, status or availability\nRun 'tributary translate --help' for usage.\n"
	if bad.code != 2 || bad.stdout != "" || bad.stderr != wantBad {
		t.Errorf("--type listeners: exit %d, stdout %q, stderr %q; want exit 2, stderr %q", bad.code, bad.stdout, bad.stderr, wantBad)
	}
}

// TestTranslateFailOnInvalid: with --fail-on-invalid the output is printed
// all the same, then each invalid ExtensionService gets one line on stderr
// (several errors of one joined by "; ") and the exit code is 1; valid
// input exits 0 and prints nothing on stderr.
func TestTranslateFailOnInvalid(t *testing.T) {
	invalid := writeTemp(t, "invalid.yaml", `apiVersion: projectcontour.io/v1alpha1
kind: ExtensionService
metadata: {namespace: auth, name: missing-service}
spec:
  services:
  - {name: absent, port: 9001}
---
apiVersion: projectcontour.io/v1alpha1
kind: ExtensionService
metadata: {namespace: auth, name: two-errors}
spec:
  services:
  - {name: gone, port: 9001}
  timeoutPolicy: {response: soon}
`)
	args := []string{"translate", "-f", example, "-f", invalid}
	without := runCmd(t, "", args...)
	if without.code != 0 || without.stderr != "" {
		t.Fatalf("without --fail-on-invalid: exit %d, stderr:\n%s", without.code, without.stderr)
	}
	got := runCmd(t, "", append(args, "--fail-on-invalid")...)
	const wantStderr = `error: ExtensionService "auth/missing-service" is invalid: ServiceUnresolvedReference: unresolved service "auth/absent": service "auth/absent" not found
error: ExtensionService "auth/two-errors" is invalid: TimeoutPolicyNotValid: spec.timeoutPolicy failed to parse: error parsing response timeout: unable to parse timeout string "soon": time: invalid duration "soon"; ServiceUnresolvedReference: unresolved service "auth/gone": service "auth/gone" not found
`
	if got.code != 1 || got.stderr != wantStderr {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 1, stderr:\n%s", got.code, got.stderr, wantStderr)
	}
	if got.stdout != without.stdout {
		t.Errorf("--fail-on-invalid changed the output (-without +with):\n%s", cmp.Diff(without.stdout, got.stdout))
	}

	valid := runCmd(t, "", "translate", "-f", example, "--fail-on-invalid", "--type", "status")
	if valid.code != 0 || valid.stderr != "" || !strings.Contains(valid.stdout, `"status": "True"`) {
		t.Errorf("valid input: exit %d, stderr %q, stdout:\n%s", valid.code, valid.stderr, valid.stdout)
	}
}

func TestTranslateErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	badSettings := writeTemp(t, "settings.yaml", "upstreamTLS:\n  minimumVersion: \"1.2\"\n")
	tests := map[string]struct {
		args       []string
		wantStderr string
	}{
		"missing input": {[]string{"-f", missing}, "error: stat " + missing + ": no such file or directory\n"},
		"missing settings": {[]string{"-f", example, "--settings", missing},
			"error: open " + missing + ": no such file or directory\n"},
		"unknown setting": {[]string{"-f", example, "--settings", badSettings},
			"error: " + badSettings + ": unknown field \"upstreamTLS.minimumVersion\"\n"},
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

// TestDescribeServiceError: a service error reads in the user's terms:
// every objects[N], in the message, in a field or inside a description
// (as a duplicate names the first object), becomes the position object N
// was read from.
func TestDescribeServiceError(t *testing.T) {
	positions := []manifest.Position{
		{Path: "a.yaml", Document: 1, Item: -1},
		{Path: "a.yaml", Document: 2, Item: -1},
		{Path: "list.yaml", Document: 1, Item: 3},
	}
	badRequest := func(msg string, violations ...*errdetails.BadRequest_FieldViolation) error {
		st, err := status.New(codes.InvalidArgument, msg).WithDetails(&errdetails.BadRequest{FieldViolations: violations})
		if err != nil {
			t.Fatal(err)
		}
		return st.Err()
	}
	tests := map[string]struct {
		err  error
		want string
	}{
		"not a status": {io.ErrUnexpectedEOF, "unexpected EOF"},
		"other code": {status.Error(codes.Internal, "internal error"),
			"translation failed (Internal): internal error"},
		"InvalidArgument without details": {status.Error(codes.InvalidArgument, "objects[1] (Service): metadata.namespace is required"),
			"invalid input: a.yaml: document 2 (Service): metadata.namespace is required"},
		"violations": {
			badRequest(`objects[2] (ExtensionService "auth/x"): metadata.name duplicates objects[0]: two ExtensionServices have the same namespace and name (and 2 more problems)`,
				&errdetails.BadRequest_FieldViolation{
					Field:       "objects[2].extension_service.metadata.name",
					Description: `objects[2] (ExtensionService "auth/x"): metadata.name duplicates objects[0]: two ExtensionServices have the same namespace and name`,
				},
				&errdetails.BadRequest_FieldViolation{Field: "settings.connectTimeout", Description: `settings.connectTimeout: time: invalid duration "soon"`},
				&errdetails.BadRequest_FieldViolation{Field: "objects[1].service.spec", Description: "spec is required"},
			),
			`invalid input: list.yaml: document 1: items[3] (ExtensionService "auth/x"): metadata.name duplicates a.yaml: document 1: two ExtensionServices have the same namespace and name (and 2 more problems)
  list.yaml: document 1: items[3] (ExtensionService "auth/x"): metadata.name duplicates a.yaml: document 1: two ExtensionServices have the same namespace and name
  s.yaml: settings.connectTimeout: time: invalid duration "soon"
  a.yaml: document 2: spec is required`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := describeServiceError(tc.err, positions, "s.yaml"); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestViolationSource: a violation is led by the position of its object or
// by the settings file; a field of neither, or an index past the request's
// objects, gets no lead.
func TestViolationSource(t *testing.T) {
	positions := []manifest.Position{{Path: "a.yaml", Document: 1, Item: -1}}
	for field, want := range map[string]string{
		"objects[0].service.metadata.name": "a.yaml: document 1: ",
		"objects[1].service.metadata.name": "",
		"settings.connectTimeout":          "s.yaml: ",
		"settings":                         "s.yaml: ",
		"settingsX":                        "",
	} {
		if got := violationSource(field, positions, "s.yaml"); got != want {
			t.Errorf("violationSource(%q) = %q, want %q", field, got, want)
		}
	}
	if got := violationSource("settings.connectTimeout", positions, ""); got != "" {
		t.Errorf("without a settings file, violationSource = %q, want none", got)
	}
}

func TestByteSize(t *testing.T) {
	for in, want := range map[string]byteSize{"0": 0, "1048576": 1 << 20, "64Mi": 64 << 20, "3Ki": 3 << 10, "1Gi": 1 << 30, "12": 12, "1k": 1000, "2M": 2_000_000, "1.5Mi": 3 << 20 / 2, "1e3": 1000} {
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
		"0.1Ki": `"0.1Ki" is not a whole, non-negative number of bytes`,
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
