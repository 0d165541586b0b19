package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// grpcurlPath is where `make tools` installs grpcurl.
const grpcurlPath = "../../bin/grpcurl"

// hangGuard bounds each external step so that a hung process fails the test
// with a message instead of stalling it until the global timeout. It is not
// a performance expectation.
const hangGuard = 2 * time.Minute

// TestGRPCurl runs the real binary and talks to it with the real grpcurl,
// exactly as the README tells users to: reflection lists and describes our
// API, Translate answers examples/translate-request.json with every Envoy
// resource expanded from its Any, and SIGTERM ends the server cleanly.
func TestGRPCurl(t *testing.T) {
	grpcurl, err := filepath.Abs(grpcurlPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(grpcurl); err != nil {
		t.Fatalf("grpcurl is not installed at %s: run `make tools` first (%v)", grpcurl, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	defer cancel()

	bin := filepath.Join(t.TempDir(), "tributary")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	srv := startServer(t, bin)

	grpcurlRun := func(stdin io.Reader, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, hangGuard)
		defer cancel()
		cmd := exec.CommandContext(ctx, grpcurl, append([]string{"-plaintext"}, args...)...)
		cmd.Stdin = stdin
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("grpcurl %s: %v\nstdout:\n%s\nstderr:\n%s\nserver log:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String(), srv.log())
		}
		return stdout.String()
	}

	t.Run("list", func(t *testing.T) {
		services := strings.Fields(grpcurlRun(nil, srv.address, "list"))
		for _, want := range []string{"tributary.v1.TranslationService", "grpc.health.v1.Health"} {
			if !slices.Contains(services, want) {
				t.Errorf("grpcurl list = %q, want it to include %s", services, want)
			}
		}
	})

	t.Run("describe", func(t *testing.T) {
		// grpcurl cannot know this type on its own: describing it proves
		// the server's reflection.
		out := grpcurlRun(nil, srv.address, "describe", "tributary.v1.TranslateRequest")
		for _, want := range []string{
			"tributary.v1.TranslateRequest is a message:",
			"message TranslateRequest {",
			".tributary.v1.Settings settings = 1;",
			"repeated .tributary.v1.KubernetesObject objects = 2;",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("describe output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("Translate", func(t *testing.T) {
		req, err := os.Open("../../examples/translate-request.json")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = req.Close() }()
		out := grpcurlRun(req, "-d", "@", srv.address, "tributary.v1.TranslationService/Translate")
		// grpcurl exits 0 even when it cannot resolve an Any; it prints
		// "@error" in its place.
		if strings.Contains(out, "@error") {
			t.Fatalf("an Any was not expanded:\n%s", out)
		}
		checkExampleTranslation(t, out)
	})

	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, err := srv.wait(hangGuard)
	if err != nil {
		t.Fatalf("after SIGTERM: %v\nserver log:\n%s", err, srv.log())
	}
	if code != 0 {
		t.Fatalf("after SIGTERM the server exited with %d, want 0\nserver log:\n%s", code, srv.log())
	}
	if log := srv.log(); !strings.Contains(log, `msg=stopped`) {
		t.Errorf("server log does not end with a clean stop:\n%s", log)
	}
}

// checkExampleTranslation checks grpcurl's JSON for the example: the exact
// resource names, each Any expanded, and the 80/20 split over the ready
// endpoints only.
func checkExampleTranslation(t *testing.T, out string) {
	t.Helper()
	type resource struct {
		Name     string         `json:"name"`
		Version  string         `json:"version"`
		Resource map[string]any `json:"resource"`
	}
	var resp struct {
		Clusters               []resource `json:"clusters"`
		ClusterLoadAssignments []resource `json:"clusterLoadAssignments"`
		Statuses               []struct {
			Namespace, Name, ClusterName, ResponseTimeout string
			Conditions                                    []struct{ Type, Status, Reason string }
		} `json:"statuses"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("grpcurl output is not JSON: %v\n%s", err, out)
	}
	const name = "extension/auth/ext-authz"
	checkResource := func(kind string, rs []resource, typeURL, nameField string) {
		t.Helper()
		if len(rs) != 1 {
			t.Fatalf("%d %s, want 1:\n%s", len(rs), kind, out)
		}
		r := rs[0]
		if r.Name != name || r.Version == "" {
			t.Errorf("%s name %q version %q, want name %q and a version", kind, r.Name, r.Version, name)
		}
		if got := r.Resource["@type"]; got != typeURL {
			t.Errorf("%s @type = %v, want %s", kind, got, typeURL)
		}
		if got := r.Resource[nameField]; got != name {
			t.Errorf("%s %s = %v, want %s (the Any was not expanded?)", kind, nameField, got, name)
		}
	}
	checkResource("clusters", resp.Clusters, "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name")
	checkResource("clusterLoadAssignments", resp.ClusterLoadAssignments, "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment", "clusterName")

	if len(resp.Statuses) != 1 || len(resp.Statuses[0].Conditions) != 1 {
		t.Fatalf("want one status with one condition:\n%s", out)
	}
	st := resp.Statuses[0]
	if st.ClusterName != name || st.Conditions[0].Status != "True" || st.ResponseTimeout != "500ms" {
		t.Errorf("status = %+v, want valid, clusterName %s, responseTimeout 500ms", st, name)
	}

	// The localities, re-encoded to keep only what the split depends on.
	type locality struct {
		Weight    float64
		Endpoints []string
	}
	var got []locality
	cla := resp.ClusterLoadAssignments[0].Resource
	for _, l := range asSlice(cla["endpoints"]) {
		lm := asMap(l)
		loc := locality{}
		if w, ok := lm["loadBalancingWeight"].(float64); ok {
			loc.Weight = w
		}
		for _, e := range asSlice(lm["lbEndpoints"]) {
			sa := asMap(asMap(asMap(asMap(e)["endpoint"])["address"])["socketAddress"])
			addr, _ := sa["address"].(string)
			port, _ := sa["portValue"].(float64)
			loc.Endpoints = append(loc.Endpoints, addr+":"+jsonNumber(port))
		}
		got = append(got, loc)
	}
	want := []locality{
		{Weight: 80, Endpoints: []string{"10.244.1.17:9000", "10.244.2.9:9000", "10.244.3.21:9000"}},
		{Weight: 20, Endpoints: []string{"10.244.2.30:9000"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("localities (-want +got):\n%s\nfull output:\n%s", d, out)
	}
}

func asSlice(v any) []any         { s, _ := v.([]any); return s }
func asMap(v any) map[string]any  { m, _ := v.(map[string]any); return m }
func jsonNumber(f float64) string { b, _ := json.Marshal(f); return string(b) }

// serverProcess is a running `tributary serve`.
type serverProcess struct {
	cmd     *exec.Cmd
	address string
	exited  chan struct{}
	waitErr error

	mu     sync.Mutex
	stderr bytes.Buffer
}

var listenAddress = regexp.MustCompile(`msg="serving gRPC" address=(\S+)`)

// startServer starts bin serve on a free loopback port and reads the port
// back from its first log line.
func startServer(t *testing.T, bin string) *serverProcess {
	t.Helper()
	s := &serverProcess{cmd: exec.Command(bin, "serve", "--address", "127.0.0.1:0"), exited: make(chan struct{})}
	pipe, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})

	lines := bufio.NewReader(pipe)
	first, err := lines.ReadString('\n')
	s.appendLog(first)
	// Keep draining, so the server never blocks on a full pipe, and keep
	// the log for failure messages.
	go func() {
		_, _ = io.Copy(logWriter{s}, lines)
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	if err != nil {
		t.Fatalf("reading the first log line: %v", err)
	}
	m := listenAddress.FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("first log line does not name the address:\n%s", first)
	}
	s.address = m[1]
	return s
}

// wait waits for the server to exit and returns its exit code.
func (s *serverProcess) wait(guard time.Duration) (int, error) {
	select {
	case <-s.exited:
	case <-time.After(guard):
		return -1, errors.New("the server did not exit")
	}
	var exitErr *exec.ExitError
	if s.waitErr != nil && !errors.As(s.waitErr, &exitErr) {
		return -1, s.waitErr
	}
	return s.cmd.ProcessState.ExitCode(), nil
}

func (s *serverProcess) appendLog(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stderr.WriteString(line)
}

func (s *serverProcess) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

type logWriter struct{ s *serverProcess }

func (w logWriter) Write(p []byte) (int, error) {
	w.s.appendLog(string(p))
	return len(p), nil
}
