package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/xds"
)

// TestXDSStatusErrors: every way of not getting a status says why, exits
// 1, and prints nothing on stdout; usage errors exit 2.
func TestXDSStatusErrors(t *testing.T) {
	// A port nothing listens on: one the kernel gave and took back.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := lis.Addr().String()
	_ = lis.Close()
	// Another program on the port: a real HTTP server that is not
	// Tributary's.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("answer") {
		case "object":
			_, _ = fmt.Fprintln(w, `{"status": "ok"}`)
		default:
			_, _ = fmt.Fprintln(w, "<html>hello</html>")
		}
	}))
	defer other.Close()
	otherAddress := strings.TrimPrefix(other.URL, "http://")
	// A server that never answers.
	silent := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer silent.Close()
	silentAddress := strings.TrimPrefix(silent.URL, "http://")
	// A Tributary without xDS: no /debug/xds.
	noXDS := startServe(t, "--metrics-address", "127.0.0.1:0")

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"unreachable", []string{"--metrics-address", closed}, 1,
			"error: cannot reach http://" + closed + "/debug/xds: dial tcp " + closed + ": connect: connection refused (is tributary serve running with --metrics-address there?)\n"},
		{"not JSON", []string{"--metrics-address", otherAddress}, 1,
			"error: http://" + otherAddress + "/debug/xds did not answer with JSON (is another program listening there?): invalid character '<' looking for beginning of value\n"},
		{"a URL for an address", []string{"--metrics-address", other.URL}, 2,
			"error: invalid --metrics-address \"" + other.URL + "\": want host:port\nRun 'tributary xds status --help' for usage.\n"},
		{"no xDS", []string{"--metrics-address", noXDS.metricsAddress}, 1,
			"error: http://" + noXDS.metricsAddress + "/debug/xds answered 404 Not Found: that server does not serve xDS (it needs --xds-address) or predates /debug/xds\n"},
		{"no answer", []string{"--metrics-address", silentAddress, "--timeout", "100ms"}, 1,
			"error: no answer from http://" + silentAddress + "/debug/xds: context deadline exceeded (waited --timeout 100ms)\n"},
		{"output format", []string{"-o", "yaml"}, 2, "error: invalid --output \"yaml\": want table or json\nRun 'tributary xds status --help' for usage.\n"},
		{"timeout", []string{"--timeout", "0s"}, 2, "error: --timeout must be positive, not 0s\nRun 'tributary xds status --help' for usage.\n"},
		{"argument", []string{"extra"}, 2, "error: \"tributary xds status\" takes no arguments, got \"extra\"\nRun 'tributary xds status --help' for usage.\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runCmd(t, "", append([]string{"xds", "status"}, tc.args...)...)
			if got.code != tc.wantCode || got.stdout != "" || got.stderr != tc.wantStderr {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d, stderr:\n%s", got.code, got.stdout, got.stderr, tc.wantCode, tc.wantStderr)
			}
		})
	}

	// The command's own limit and a JSON answer that is not a status are
	// checked on the fetch, with the limit lowered.
	_, _, err = fetchXDSStatus(t.Context(), other.URL+"/debug/xds", 10)
	if want := "the answer of " + other.URL + "/debug/xds is over 10 bytes, more than an xDS status takes: is another program listening there?"; err == nil || err.Error() != want {
		t.Errorf("an answer over the limit: %v; want %s", err, want)
	}
	_, _, err = fetchXDSStatus(t.Context(), other.URL+"/debug/xds?answer=object", maxXDSStatusBytes)
	if want := other.URL + `/debug/xds?answer=object answered JSON without "streams" and "groups": is another program listening there?`; err == nil || err.Error() != want {
		t.Errorf("JSON that is not a status: %v; want %s", err, want)
	}
}

// TestXDSUsage: `tributary xds` alone shows its help, and an unknown
// subcommand is a usage error with a suggestion.
func TestXDSUsage(t *testing.T) {
	got := runCmd(t, "", "xds")
	if got.code != 0 || !strings.Contains(got.stdout, "\nAvailable Commands:\n  status      Show the xDS clients of a running server") || got.stderr != "" {
		t.Errorf("xds: exit %d, stdout:\n%s\nstderr:\n%s", got.code, got.stdout, got.stderr)
	}
	got = runCmd(t, "", "xds", "stats")
	if want := "error: unknown command \"stats\" for \"tributary xds\"; did you mean \"status\"?\nRun 'tributary xds --help' for usage.\n"; got.code != 2 || got.stdout != "" || got.stderr != want {
		t.Errorf("xds stats: exit %d, stdout %q, stderr %q; want exit 2, stderr %q", got.code, got.stdout, got.stderr, want)
	}
	got = runCmd(t, "", "xds", "status", "-h")
	if got.code != 0 || !strings.Contains(got.stdout, "\n  tributary xds status [flags]\n") || got.stderr != "" {
		t.Errorf("xds status -h: exit %d, stdout:\n%s\nstderr:\n%s", got.code, got.stdout, got.stderr)
	}
}

// TestXDSVariantLabels: the metrics' variant labels are package xds's
// variants, which the metrics package cannot import.
func TestXDSVariantLabels(t *testing.T) {
	if want := []string{string(xds.SotW), string(xds.Delta)}; !slices.Equal(metrics.XDSVariants, want) {
		t.Errorf("metrics.XDSVariants = %q, want %q", metrics.XDSVariants, want)
	}
}
