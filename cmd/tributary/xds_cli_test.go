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
			"tributary xds status: cannot reach http://" + closed + "/debug/xds: dial tcp " + closed + ": connect: connection refused (is tributary serve running with --metrics-address there?)\n"},
		{"not JSON", []string{"--metrics-address", otherAddress}, 1,
			"tributary xds status: http://" + otherAddress + "/debug/xds did not answer with JSON (is another program listening there?): invalid character '<' looking for beginning of value\n"},
		{"a URL for an address", []string{"--metrics-address", other.URL}, 2,
			"tributary xds status: invalid --metrics-address \"" + other.URL + "\": want host:port\n"},
		{"no xDS", []string{"--metrics-address", noXDS.metricsAddress}, 1,
			"tributary xds status: http://" + noXDS.metricsAddress + "/debug/xds answered 404 Not Found: that server does not serve xDS (it needs --xds-address) or predates /debug/xds\n"},
		{"no answer", []string{"--metrics-address", silentAddress, "--timeout", "100ms"}, 1,
			"tributary xds status: no answer from http://" + silentAddress + "/debug/xds: context deadline exceeded (waited --timeout 100ms)\n"},
		{"output format", []string{"-o", "yaml"}, 2, "tributary xds status: invalid -o \"yaml\": want table or json\n"},
		{"timeout", []string{"--timeout", "0s"}, 2, "tributary xds status: --timeout must be positive, not 0s\n"},
		// The usage follows.
		{"argument", []string{"extra"}, 2, "unexpected argument \"extra\"\nUsage: " + xdsStatusSynopsis + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runCmd(t, "", append([]string{"xds", "status"}, tc.args...)...)
			stderr := got.stderr
			if tc.name == "argument" {
				stderr = stderr[:min(len(stderr), len(tc.wantStderr))]
			}
			if got.code != tc.wantCode || got.stdout != "" || stderr != tc.wantStderr {
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

// TestXDSUsage: `tributary xds` and its help.
func TestXDSUsage(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{[]string{"xds"}, 2, "", xdsUsage},
		{[]string{"xds", "help"}, 0, xdsUsage, ""},
		{[]string{"xds", "frobnicate"}, 2, "", "tributary xds: unknown command \"frobnicate\"\n\n" + xdsUsage},
	} {
		got := runCmd(t, "", tc.args...)
		if got.code != tc.wantCode || got.stdout != tc.wantStdout || got.stderr != tc.wantStderr {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr %q", tc.args, got.code, got.stdout, got.stderr, tc.wantCode, tc.wantStdout, tc.wantStderr)
		}
	}
	got := runCmd(t, "", "xds", "status", "-h")
	if got.code != 0 || !strings.HasPrefix(got.stderr, "Usage: "+xdsStatusSynopsis+"\n") {
		t.Errorf("xds status -h: exit %d, stderr:\n%s", got.code, got.stderr)
	}
	if got := runCmd(t, "", "help"); !strings.Contains(got.stdout, "\n  tributary xds status [flags]") {
		t.Errorf("tributary help does not list xds status:\n%s", got.stdout)
	}
}

// TestXDSVariantLabels: the metrics' variant labels are package xds's
// variants, which the metrics package cannot import.
func TestXDSVariantLabels(t *testing.T) {
	if want := []string{string(xds.SotW), string(xds.Delta)}; !slices.Equal(metrics.XDSVariants, want) {
		t.Errorf("metrics.XDSVariants = %q, want %q", metrics.XDSVariants, want)
	}
}
