package loadtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// hangGuard bounds each wait on a process, so that a hung server fails the
// test with its log instead of stalling until the global timeout. It is not
// a performance expectation.
const hangGuard = time.Minute

// tributaryBin is the tributary binary under test, built once by TestMain
// without -race: it is the system under test, run as in production, and the
// race detector would only make the load slower (the test process, which
// holds the clients, is race-checked).
var tributaryBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tributary-loadtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tributaryBin = filepath.Join(dir, "tributary")
	build := exec.Command(goTool(), "build", "-o", tributaryBin, "./cmd/tributary")
	build.Dir = ".." // the module root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/tributary: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		// Every client, stream and connection a test opens must be closed.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// goTool is the go command running this test, so the binary is built with
// the same toolchain.
func goTool() string {
	if goroot := os.Getenv("GOROOT"); goroot != "" {
		if p := filepath.Join(goroot, "bin", "go"); fileExists(p) {
			return p
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// server is a running `tributary serve` process with its log.
type server struct {
	cmd                  *exec.Cmd
	log                  *logBuffer
	address, metricsAddr string
	exited               chan struct{}
	// exitErr is cmd.Wait's result, valid once exited is closed.
	exitErr error
	stopped sync.Once
}

// startServer runs `tributary serve` with --metrics-address on a free
// loopback port, --address 127.0.0.1:0 unless args name another, and args,
// and waits until it logs both addresses. It is stopped (SIGTERM, then
// SIGKILL) when the test ends, and its log's end is shown if the test
// failed.
func startServer(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	s, err := launch(t, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// launch is startServer, returning an error when the server ends before
// logging its addresses (as when its address is taken).
func launch(t *testing.T, env []string, args ...string) (*server, error) {
	t.Helper()
	full := []string{"serve", "--metrics-address", "127.0.0.1:0"}
	if !containsFlag(args, "--address") {
		full = append(full, "--address", "127.0.0.1:0")
	}
	cmd := exec.Command(tributaryBin, append(full, args...)...)
	cmd.Env = append(os.Environ(), env...)
	s := &server{cmd: cmd, log: &logBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = s.log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start tributary: %w", err)
	}
	go func() {
		s.exitErr = cmd.Wait()
		close(s.exited)
	}()
	addresses := regexp.MustCompile(`(?s)msg="serving gRPC" address=(\S+).*msg="serving metrics" address=(\S+)`)
	deadline := time.After(hangGuard)
	for {
		if m := addresses.FindStringSubmatch(s.log.String()); m != nil {
			s.address, s.metricsAddr = m[1], m[2]
			break
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("tributary serve %s ended (%w) before logging its addresses; log:\n%s", strings.Join(args, " "), s.exitErr, s.log.tail(20))
		case <-deadline:
			s.stop()
			return nil, fmt.Errorf("tributary serve %s did not log its addresses within %v; log:\n%s", strings.Join(args, " "), hangGuard, s.log.tail(20))
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("tributary serve %s (pid %d), last lines of its log:\n%s", strings.Join(args, " "), cmd.Process.Pid, s.log.tail(40))
		}
	})
	return s, nil
}

func containsFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// stop sends SIGTERM and waits for the exit, killing the process if it
// outlives hangGuard.
func (s *server) stop() {
	s.stopped.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(hangGuard):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
}

// waitExit waits until the process has exited and returns its exit code.
func (s *server) waitExit(t *testing.T) int {
	t.Helper()
	select {
	case <-s.exited:
	case <-time.After(hangGuard):
		t.Fatalf("tributary did not exit within %v; log:\n%s", hangGuard, s.log.tail(40))
	}
	return s.cmd.ProcessState.ExitCode()
}

// waitLog waits until a log line matches re and returns its submatches.
func (s *server) waitLog(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		if m := re.FindStringSubmatch(s.log.String()); m != nil {
			return m
		}
		select {
		case <-s.exited:
			if m := re.FindStringSubmatch(s.log.String()); m != nil {
				return m
			}
			t.Fatalf("tributary exited (%v) before logging %q; log:\n%s", s.exitErr, re, s.log.tail(40))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("tributary did not log %q within %v; log:\n%s", re, hangGuard, s.log.tail(40))
		}
	}
}

// linesAt returns the log lines at level (INFO, WARN, ERROR).
func (s *server) linesAt(level string) []string {
	var out []string
	for line := range strings.Lines(s.log.String()) {
		if strings.Contains(line, " level="+level+" ") {
			out = append(out, strings.TrimSuffix(line, "\n"))
		}
	}
	return out
}

// scrape returns the server's /metrics page.
func (s *server) scrape(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.metricsAddr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	return string(body)
}

// metric sums the samples of the metric name on a /metrics page whose
// series carry every one of labels (such as `grpc_method="Sync"`), and
// reports whether there was any.
func metric(page, name string, labels ...string) (float64, bool) {
	sum, found := 0.0, false
next:
	for line := range strings.Lines(page) {
		series, value, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if series != name && !strings.HasPrefix(series, name+"{") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(series, l) {
				continue next
			}
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

// dial opens a plaintext client connection to the server at address; it is
// closed when the test ends.
func dial(t *testing.T, address string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(address, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// logBuffer is an io.Writer safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tail returns the last n lines.
func (b *logBuffer) tail(n int) string {
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
