// Package cli_test runs the built tributary binary as a user's shell
// would: help and errors on the right stream, the documented exit codes,
// shell completion, and the log formats. The commands' own behaviour is
// tested in process in cmd/tributary; this is what only the process shows.
package cli_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/tributary-dev/tributary/internal/testproc"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testproc.RemoveBuilds()
	os.Exit(code)
}

// result is one run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

func runBinary(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(testproc.Build(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return result{code, stdout.String(), stderr.String()}
}

// TestHelpOnStdout: every command's help goes to standard output (so it
// can be paged), opens with its usage and shows examples, and leaves
// standard error empty.
func TestHelpOnStdout(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"help"}, {"serve", "--help"}, {"serve", "-h"}, {"translate", "--help"},
		{"xds", "status", "--help"}, {"help", "translate"},
	} {
		got := runBinary(t, args...)
		if got.code != 0 || got.stderr != "" || !strings.Contains(got.stdout, "\nUsage:\n  tributary ") || !strings.Contains(got.stdout, "\nExamples:\n  ") {
			t.Errorf("tributary %s: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0, usage and examples on stdout only",
				strings.Join(args, " "), got.code, got.stdout, got.stderr)
		}
	}
	if got := runBinary(t, "--help"); !strings.Contains(got.stdout, "Exit codes: 0 success, 1 failure, 2 usage error") {
		t.Errorf("the root help does not document the exit codes:\n%s", got.stdout)
	}
}

// TestExitCodes: 0 for success, 1 for a failure, 2 for a command line
// that makes no sense; every error on stderr behind "error: ".
func TestExitCodes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for _, tc := range []struct {
		args       []string
		wantCode   int
		wantStderr string
	}{
		{[]string{"version"}, 0, ""},
		{[]string{"--bogus"}, 2, "error: unknown flag: --bogus\nRun 'tributary --help' for usage.\n"},
		{[]string{"serve", "--bogus"}, 2, "error: unknown flag: --bogus\nRun 'tributary serve --help' for usage.\n"},
		{[]string{"version", "extra"}, 2, "error: \"tributary version\" takes no arguments, got \"extra\"\nRun 'tributary version --help' for usage.\n"},
		// cobra's own commands follow the same rules.
		{[]string{"help", "bogus"}, 2, "error: unknown help topic \"bogus\"\nRun 'tributary help --help' for usage.\n"},
		{[]string{"completion", "bogus"}, 2, "error: unknown command \"bogus\" for \"tributary completion\"\nRun 'tributary completion --help' for usage.\n"},
		{[]string{"completion", "bash", "extra"}, 2,
			"error: \"tributary completion bash\" takes no arguments, got \"extra\"\nRun 'tributary completion bash --help' for usage.\n"},
		{[]string{"serve", "--max-message-size", "many"}, 2,
			"error: invalid argument \"many\" for \"--max-message-size\" flag: \"many\" is not a quantity (a number of bytes, or with a suffix such as Ki, Mi or Gi: 64Mi)\nRun 'tributary serve --help' for usage.\n"},
		{[]string{"translate", "-f", missing}, 1, "error: stat " + missing + ": no such file or directory\n"},
		{[]string{"serve", "--address", "127.0.0.1:99999"}, 1, ""}, // logged, see below
	} {
		got := runBinary(t, tc.args...)
		stderr := got.stderr
		if tc.args[0] == "serve" && tc.wantCode == 1 {
			// serve reports failures in its log, not with the prefix.
			if !strings.Contains(stderr, `level=ERROR msg="cannot listen" address=127.0.0.1:99999`) {
				t.Errorf("serve on a bad address logged:\n%s", stderr)
			}
			stderr = ""
		}
		if got.code != tc.wantCode || stderr != tc.wantStderr {
			t.Errorf("tributary %s: exit %d, stderr %q; want exit %d, stderr %q",
				strings.Join(tc.args, " "), got.code, got.stderr, tc.wantCode, tc.wantStderr)
		}
	}
}

// TestCompletion: the scripts cobra writes for each shell, and the
// completions they ask the binary for.
func TestCompletion(t *testing.T) {
	for shell, firstLine := range map[string]string{
		"bash": "# bash completion V2 for tributary",
		"zsh":  "#compdef tributary",
		"fish": "# fish completion for tributary",
	} {
		got := runBinary(t, "completion", shell)
		if got.code != 0 || got.stderr != "" || !strings.HasPrefix(got.stdout, firstLine) {
			t.Errorf("completion %s: exit %d, stderr %q, script starts %q; want %q",
				shell, got.code, got.stderr, got.stdout[:min(len(got.stdout), 60)], firstLine)
		}
		if shell == "bash" {
			script := filepath.Join(t.TempDir(), "tributary.bash")
			if err := os.WriteFile(script, []byte(got.stdout), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
				t.Errorf("bash -n on the bash completion: %v\n%s", err, out)
			}
		}
	}
	// The scripts call the binary's hidden __complete command; it answers
	// candidates, then a directive line.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "tr"}, "translate\tTranslate manifests once and print the result\n:4\n"},
		{[]string{"__complete", "help", "tr"}, "translate\tTranslate manifests once and print the result\n:4\n"},
		{[]string{"__complete", "serve", "--log-format", ""}, "text\njson\n:4\n"},
		{[]string{"__complete", "xds", "status", "-o", ""}, "table\njson\n:4\n"},
		// 8 asks the shell for files with these extensions (and directories).
		{[]string{"__complete", "translate", "-f", ""}, "json\nyaml\nyml\n:8\n"},
	} {
		got := runBinary(t, tc.args...)
		if got.code != 0 || got.stdout != tc.want {
			t.Errorf("tributary %q: exit %d, stdout %q; want %q", tc.args, got.code, got.stdout, tc.want)
		}
	}
}

// TestServeJSONLogs: with --log-format json every line serve writes is one
// JSON object, from the first (the address) to the last (stopped), gRPC's
// own lines among them: a connection that does not speak HTTP/2 is one
// that only gRPC sees, and its line must go through serve's logger.
func TestServeJSONLogs(t *testing.T) {
	p := testproc.Start(t, testproc.Build(t), "serve", "--address", "127.0.0.1:0", "--log-format", "json")
	conn, err := net.Dial("tcp", p.Address)
	if err != nil {
		t.Fatal(err)
	}
	// At least the 24 bytes of HTTP/2's preface, so that gRPC reads them
	// all and refuses the connection for what they say.
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\nHost: tributary\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	p.WaitLog(t, regexp.MustCompile(`"msg":"refused a connection before any call","grpc.log":".*received bogus greeting from client`), testproc.Guard)
	_ = conn.Close()
	p.Signal(t, syscall.SIGTERM)
	if code := p.Wait(t, testproc.Guard); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	var msgs []string
	for line := range strings.Lines(p.Log()) {
		var record struct {
			Level, Msg string
			// Set on "shutting down": a duration, written as the flag is.
			Timeout any
		}
		if err := json.Unmarshal([]byte(line), &record); err != nil || record.Level == "" {
			t.Fatalf("not a JSON log record: %q (%v)", line, err)
		}
		msgs = append(msgs, record.Level+" "+record.Msg)
		if record.Msg == "shutting down" && record.Timeout != "10s" {
			t.Errorf("shutting down with timeout %#v, want \"10s\" (--shutdown-timeout's default)", record.Timeout)
		}
	}
	if want := []string{"INFO serving gRPC", "INFO refused a connection before any call", "INFO shutting down", "INFO stopped"}; strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Errorf("log records:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
}

// TestMakeRunStopsOnSignal: `make run` leaves no server behind when make
// itself is stopped, as a developer's kill of its PID or an IDE's stop
// button does: the server drains and the port is free again.
func TestMakeRunStopsOnSignal(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// make run builds first; on a fresh machine that compile can outlast
	// the wait for the server's first log line, so build before.
	if out, err := exec.Command("make", "--no-print-directory", "-C", root, "build").CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	p := testproc.Start(t, "make", "--no-print-directory", "-C", root, "run", "RUN_ARGS=", "ARGS=--address 127.0.0.1:0")
	address := p.WaitLog(t, regexp.MustCompile(`msg="serving gRPC" address=(\S+)`), testproc.Guard)[1]
	p.Signal(t, syscall.SIGTERM)
	p.Wait(t, testproc.Guard)
	if !strings.Contains(p.Log(), "msg=stopped") {
		t.Errorf("the server did not drain and stop; its log:\n%s", p.Log())
	}
	if conn, err := net.Dial("tcp", address); err == nil {
		_ = conn.Close()
		t.Errorf("%s still accepts connections after make was stopped", address)
	}
}
