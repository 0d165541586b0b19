package loadtest

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tributary-dev/tributary/internal/testproc"
)

// hangGuard bounds each wait, so that a hung server fails the test with its
// log instead of stalling until the global timeout. It is not a
// performance expectation.
const hangGuard = testproc.Guard

func TestMain(m *testing.M) {
	code := m.Run()
	testproc.RemoveBuilds()
	if code == 0 {
		// Every client, stream and connection a test opens must be closed.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// server is a running `tributary serve` process. The binary is built
// without -race: it is the system under test, run as in production, and
// the race detector would only slow the load (the test process, which
// holds the clients, is race-checked).
type server struct {
	*testproc.Process
}

// startServer runs `tributary serve` with --metrics-address on a free
// loopback port, --address 127.0.0.1:0 unless args name another, the extra
// environment env and args, and waits until it serves. It is stopped
// (SIGTERM, then SIGKILL) when the test ends.
func startServer(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	full := []string{"serve", "--metrics-address", "127.0.0.1:0"}
	if !containsFlag(args, "--address") {
		full = append(full, "--address", "127.0.0.1:0")
	}
	return &server{testproc.StartEnv(t, testproc.Build(t), env, append(full, args...)...)}
}

func containsFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// waitLog waits until a log line matches re and returns its submatches.
func (s *server) waitLog(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	return s.WaitLog(t, re, hangGuard)
}

// linesAt returns the log lines at level (INFO, WARN, ERROR).
func (s *server) linesAt(level string) []string {
	var out []string
	for line := range strings.Lines(s.Log()) {
		if strings.Contains(line, " level="+level+" ") {
			out = append(out, strings.TrimSuffix(line, "\n"))
		}
	}
	return out
}

// waitListenable waits until address can be listened on again (a stopping
// server has closed its listener).
func waitListenable(t *testing.T, address string) {
	t.Helper()
	waitFor(t, address+" to be free", func() bool {
		lis, err := net.Listen("tcp", address)
		if err != nil {
			return false
		}
		_ = lis.Close()
		return true
	})
}

// scrape returns the server's /metrics page.
func (s *server) scrape(t *testing.T) string {
	t.Helper()
	_, body := testproc.Get(t, "http://"+s.MetricsAddress+"/metrics")
	return body
}

// waitMetric waits until an unlabelled metric has value want.
func waitMetric(t *testing.T, srv *server, name string, want float64) {
	t.Helper()
	waitFor(t, name+" to be "+strconv.FormatFloat(want, 'g', -1, 64), func() bool {
		v, _ := testproc.Metric(srv.scrape(t), name)
		return v == want
	})
}

// waitFor polls cond until it holds, failing the test after hangGuard.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
