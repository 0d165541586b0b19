package attack

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/testproc"
)

// guard bounds every wait, so that a hung server fails the scenario with
// its log instead of stalling until the global timeout. It is not a
// performance expectation.
const guard = testproc.Guard

// Tolerances of "back to its level": generous, since a server's heap
// between two collections and its goroutines between two connections move
// by themselves; a leak of what an attack sent is far larger.
const (
	goroutineSlack = 10
	heapSlack      = 48 << 20
)

// peakRSSBound is the most resident memory a server may ever reach in a
// scenario: the deployment's pod limit (1 GiB) at the sizes, and a
// quarter of it at the CI scale, whose inputs are a tenth or less.
var peakRSSBound = sized[int64](256<<20, 1<<30)

// server is a fresh `tributary serve` for one scenario. The binary is
// built without -race: it is the system under test, run as in
// production.
type server struct {
	*testproc.Process
	row *row
	// legitConn is the legitimate client's connection, open for the
	// server's life so that the goroutine level counts it.
	legitConn *grpc.ClientConn
	// legitAnswer is the server's answer to legitRequest before any
	// attack: later answers must equal it.
	legitAnswer *tributaryv1.TranslateResponse
	// ballast is a legitimate request that makes the server allocate (see
	// backToLevel).
	ballast *tributaryv1.TranslateRequest
	base    level
}

// startServer runs `tributary serve` on free loopback ports with
// --metrics-address and args, checks that it answers the legitimate
// request exactly, and records its goroutine and heap level. It is stopped
// (SIGTERM, then SIGKILL) when the test ends, after its peak RSS has been
// put in r.
func startServer(t *testing.T, r *row, ballastBytes int, args ...string) *server {
	t.Helper()
	argv := append([]string{"serve", "--address", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0"}, args...)
	s := &server{Process: testproc.Start(t, testproc.Build(t), argv...), row: r, ballast: ballastRequest(ballastBytes)}
	// Registered after Start's cleanup, so it runs first, while the
	// process still exists.
	t.Cleanup(s.notePeak)
	s.legitConn = dial(t, s.Address)
	s.legitAnswer = s.translateLegit(t, s.legitConn)
	checkLegitAnswer(t, s.legitAnswer)
	// Warm up as backToLevel will: the level is that of a server that has
	// served the ballast.
	for range 3 {
		s.sendBallast(t)
	}
	s.base = s.level(t)
	return s
}

// dial opens a plaintext client connection to address, closed when the
// test ends.
func dial(t *testing.T, address string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(address, append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// The attacks send and receive more than gRPC's 4 MiB default: the
		// server's limits are what is under test, not the client's.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30), grpc.MaxCallSendMsgSize(1<<30)),
	}, opts...)...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// translateLegit makes the legitimate Translate call over conn and returns
// the answer; any error fails the test.
func (s *server) translateLegit(t *testing.T, conn *grpc.ClientConn) *tributaryv1.TranslateResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	defer cancel()
	resp, err := tributaryv1.NewTranslationServiceClient(conn).Translate(ctx, legitRequest())
	if err != nil {
		t.Fatalf("the legitimate Translate failed: %v", err)
	}
	return resp
}

// checkLegitStillServed makes the legitimate Translate on a new connection,
// as a second client would, and fails the test unless the answer is
// exactly the one the server gave before the attack.
func (s *server) checkLegitStillServed(t *testing.T) {
	t.Helper()
	conn := dial(t, s.Address)
	got := s.translateLegit(t, conn)
	_ = conn.Close()
	if !proto.Equal(got, s.legitAnswer) {
		t.Fatalf("after the attack the legitimate Translate got\n%v\nwant what it got before\n%v", got, s.legitAnswer)
	}
}

// level is a server's goroutine count and heap in use.
type level struct {
	goroutines, heapInuse float64
}

func (l level) String() string {
	return fmt.Sprintf("%.0f goroutines, %.1f MiB heap in use", l.goroutines, l.heapInuse/(1<<20))
}

// level reads the server's current level from /metrics.
func (s *server) level(t *testing.T) level {
	t.Helper()
	page := s.scrape(t)
	g, okG := testproc.Metric(page, "go_goroutines")
	h, okH := testproc.Metric(page, "go_memstats_heap_inuse_bytes")
	if !okG || !okH {
		t.Fatalf("/metrics has no go_goroutines or go_memstats_heap_inuse_bytes:\n%s", page)
	}
	return level{goroutines: g, heapInuse: h}
}

// backToLevel waits until the server's goroutines and heap in use are back
// within the tolerances of their level before the attack. An idle Go
// program collects garbage only every two minutes, so each poll first
// sends the ballast: the allocations it causes trigger collections, which
// free what the attack left behind unless something still holds it.
func (s *server) backToLevel(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		s.sendBallast(t)
		now := s.level(t)
		if now.goroutines <= s.base.goroutines+goroutineSlack && now.heapInuse <= s.base.heapInuse+heapSlack {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not come back to its level within %v: %v now, %v before the attack", guard, now, s.base)
		}
	}
}

// sendBallast makes the ballast call, which must succeed.
func (s *server) sendBallast(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	defer cancel()
	if _, err := tributaryv1.NewTranslationServiceClient(s.legitConn).Translate(ctx, s.ballast); err != nil {
		t.Fatalf("the ballast Translate failed: %v", err)
	}
}

// scrape returns the server's /metrics page.
func (s *server) scrape(t *testing.T) string {
	t.Helper()
	status, body := testproc.Get(t, "http://"+s.MetricsAddress+"/metrics")
	if status != 200 {
		t.Fatalf("GET /metrics: status %d", status)
	}
	return body
}

// waitMetric waits until the metric name summed over the series carrying
// labels reaches at least want, and returns its value.
func (s *server) waitMetric(t *testing.T, want float64, name string, labels ...string) float64 {
	t.Helper()
	var v float64
	testproc.WaitFor(t, fmt.Sprintf("%s%v to reach %v", name, labels, want), func() bool {
		v, _ = testproc.Metric(s.scrape(t), name, labels...)
		return v >= want
	})
	return v
}

// procStatus reads a field of /proc/<pid>/status in kB, as bytes.
func (s *server) procStatus(field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.Cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if value, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", s.Cmd.Process.Pid, field)
}

// notePeak puts the server's peak RSS (VmHWM) so far in its row; once the
// process is gone there is nothing to read and the row keeps the last one.
func (s *server) notePeak() {
	if hwm, err := s.procStatus("VmHWM"); err == nil {
		s.row.peakRSS = max(s.row.peakRSS, hwm)
	}
}

// checkHeld is what every scenario asserts after its attack: the peak
// RSS stayed under the scale's bound, a legitimate client is still
// answered exactly, and goroutines and heap came back to their level.
func (s *server) checkHeld(t *testing.T) {
	t.Helper()
	s.checkPeakRSS(t)
	s.checkLegitStillServed(t)
	s.backToLevel(t)
}

// checkPeakRSS fails the test if the server's peak RSS went over
// peakRSSBound.
func (s *server) checkPeakRSS(t *testing.T) {
	t.Helper()
	s.notePeak()
	if s.row.peakRSS > peakRSSBound {
		t.Errorf("the server's peak RSS was %s, over the bound of %s", mebibytes(s.row.peakRSS), mebibytes(peakRSSBound))
	}
}

// cpuTicks is the CPU time the server has used (user and system), in
// clock ticks.
func (s *server) cpuTicks(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.Cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: the fields that
	// count start after its closing parenthesis, with field 3 (state).
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", s.Cmd.Process.Pid, b)
	}
	return utime + stime
}

// longestLogLine returns the length of the longest line the server logged.
func (s *server) longestLogLine() int {
	longest := 0
	for line := range strings.Lines(s.Log()) {
		longest = max(longest, len(line))
	}
	return longest
}
