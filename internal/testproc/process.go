package testproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Guard bounds every wait of this package (a build, a log line, an exit),
// so that a hung program fails the test with its log instead of stalling
// it until the global timeout. It is not a performance expectation.
const Guard = time.Minute

// buildGuard bounds a build, which on a cold cache compiles every Envoy
// type.
const buildGuard = 10 * time.Minute

// stopGrace is how long the cleanup's SIGTERM has before SIGKILL.
const stopGrace = 5 * time.Second

// logTail is how many log lines a failure message quotes.
const logTail = 40

var (
	buildMu sync.Mutex
	// builds maps a package to its build, made once per test binary.
	builds   = map[string]*build{}
	buildDir string
)

type build struct {
	once sync.Once
	path string
	err  error
}

// Build returns the path of the tributary binary (./cmd/tributary), built
// the first time it is called in this test binary. See BuildPackage.
func Build(tb testing.TB) string {
	tb.Helper()
	return BuildPackage(tb, "./cmd/tributary")
}

// BuildPackage returns the path of the program built from pkg, a path
// relative to the module root such as "./cmd/tributary", building it the
// first time it is asked for in this test binary. The build is a plain one
// (no -race, CGO_ENABLED=0) with the go command running the test: the
// program is the system under test, run as in production. It goes into a
// temporary directory that RemoveBuilds deletes.
func BuildPackage(tb testing.TB, pkg string) string {
	tb.Helper()
	buildMu.Lock()
	b := builds[pkg]
	if b == nil {
		b = &build{}
		builds[pkg] = b
	}
	buildMu.Unlock()
	b.once.Do(func() { b.path, b.err = goBuild(pkg) })
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

func goBuild(pkg string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	buildMu.Lock()
	if buildDir == "" {
		buildDir, err = os.MkdirTemp("", "tributary-testproc-")
	}
	dir := buildDir
	buildMu.Unlock()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, filepath.Base(pkg))
	ctx, cancel := context.WithTimeout(context.Background(), buildGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool(), "build", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	return out, nil
}

// RemoveBuilds deletes what Build and BuildPackage built. TestMain calls
// it once the tests have run; a later Build builds again.
func RemoveBuilds() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	buildDir = ""
	builds = map[string]*build{}
}

// moduleRoot is the directory of the go.mod governing the test's working
// directory (its package directory).
func moduleRoot() (string, error) {
	out, err := exec.Command(goTool(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("the test does not run inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

// goTool is the go command running this test, so that programs are built
// with the same toolchain.
func goTool() string {
	if goroot := os.Getenv("GOROOT"); goroot != "" {
		p := filepath.Join(goroot, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

// Process is a running program. Its stderr is kept (Log), its stdout is
// handed out line by line (ReadLine), and its stdin stays open for its
// life, so that a helper that exits when stdin closes does not outlive a
// test binary that was killed. When the test ends it is stopped (SIGTERM,
// then SIGKILL), and if the test failed the end of its log is logged.
type Process struct {
	// Cmd is the running command.
	Cmd *exec.Cmd
	// Stdin is the program's standard input.
	Stdin io.WriteCloser
	// Address, XDSAddress and MetricsAddress are where `tributary serve`
	// serves gRPC, xDS and metrics; Start fills in those its flags enable.
	Address, XDSAddress, MetricsAddress string

	name string
	log  *Buffer
	// lines receives stdout line by line; it is closed at EOF.
	lines  chan string
	exited chan struct{}
	// exitErr is Cmd.Wait's result, valid once exited is closed.
	exitErr error
	stopped sync.Once
}

// servingLine is what `tributary serve` logs for each listener it opens,
// with --log-format text (the default) or json.
var servingLine = regexp.MustCompile(`msg="serving (gRPC|xDS|metrics)" address=(\S+)|"msg":"serving (gRPC|xDS|metrics)","address":"([^"]+)"`)

// Start runs bin with args; see StartEnv.
func Start(tb testing.TB, bin string, args ...string) *Process {
	tb.Helper()
	return StartEnv(tb, bin, nil, args...)
}

// StartEnv runs bin with args and the extra environment variables env
// ("NAME=value"). When args run `serve`, it waits until the log names the
// address of each listener the flags enable (gRPC always, xDS with
// --xds-address, metrics with --metrics-address) and fills in Address,
// XDSAddress and MetricsAddress; it fails the test if the program exits
// first or takes longer than Guard.
func StartEnv(tb testing.TB, bin string, env []string, args ...string) *Process {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	p := &Process{Cmd: cmd, name: filepath.Base(bin), log: &Buffer{}, lines: make(chan string, 64), exited: make(chan struct{})}
	var err error
	if p.Stdin, err = cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = p.log
	// A child the program leaves running (a server that outlives the make
	// that started it, say) would hold the output pipes open and Wait
	// with them: the test would hang rather than fail.
	cmd.WaitDelay = stopGrace
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", p.name, err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	go func() {
		p.exitErr = cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() {
		p.Stop(stopGrace)
		if tb.Failed() && p.log.String() != "" {
			tb.Logf("%s %s (pid %d), last lines of its log:\n%s", p.name, strings.Join(args, " "), cmd.Process.Pid, p.log.Tail(logTail))
		}
	})
	if len(args) > 0 && args[0] == "serve" {
		p.awaitAddresses(tb, hasFlag(args, "--xds-address"), hasFlag(args, "--metrics-address"))
	}
	return p
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

func (p *Process) awaitAddresses(tb testing.TB, xds, metrics bool) {
	tb.Helper()
	p.waitLog(tb, "the addresses it serves on", Guard, func(log string) bool {
		for _, m := range servingLine.FindAllStringSubmatch(log, -1) {
			// The text form fills the first two groups, JSON the last two.
			listener, address := m[1]+m[3], m[2]+m[4]
			switch listener {
			case "gRPC":
				p.Address = address
			case "xDS":
				p.XDSAddress = address
			case "metrics":
				p.MetricsAddress = address
			}
		}
		return p.Address != "" && (!xds || p.XDSAddress != "") && (!metrics || p.MetricsAddress != "")
	})
}

// Log returns everything the program wrote to stderr so far.
func (p *Process) Log() string { return p.log.String() }

// WaitLog waits until the log matches re and returns the submatches of the
// first match. It fails the test if the program exits first or the log
// does not match within timeout.
func (p *Process) WaitLog(tb testing.TB, re *regexp.Regexp, timeout time.Duration) []string {
	tb.Helper()
	var m []string
	p.waitLog(tb, fmt.Sprintf("%q", re), timeout, func(log string) bool {
		m = re.FindStringSubmatch(log)
		return m != nil
	})
	return m
}

func (p *Process) waitLog(tb testing.TB, what string, timeout time.Duration, found func(log string) bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !found(p.log.String()) {
		select {
		case <-p.exited:
			// The log is complete now: look once more.
			if found(p.log.String()) {
				return
			}
			tb.Fatalf("%s ended (%v) before logging %s; log:\n%s", p.name, p.exitErr, what, p.log.Tail(logTail))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s did not log %s within %v; log:\n%s", p.name, what, timeout, p.log.Tail(logTail))
		}
	}
}

// ReadLine returns the next stdout line, failing the test if none comes
// within timeout or the program ends first.
func (p *Process) ReadLine(tb testing.TB, timeout time.Duration) string {
	tb.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			<-p.exited
			tb.Fatalf("%s ended (%v) before printing a line; log:\n%s", p.name, p.exitErr, p.log.Tail(logTail))
		}
		return line
	case <-time.After(timeout):
		tb.Fatalf("%s printed nothing within %v; log:\n%s", p.name, timeout, p.log.Tail(logTail))
	}
	return ""
}

// Signal sends sig to the program.
func (p *Process) Signal(tb testing.TB, sig os.Signal) {
	tb.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("signal %v to %s: %v", sig, p.name, err)
	}
}

// Wait waits until the program exits and returns its exit code (-1 when a
// signal ended it). It fails the test if the program is still running
// after timeout.
func (p *Process) Wait(tb testing.TB, timeout time.Duration) int {
	tb.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		tb.Fatalf("%s did not exit within %v; log:\n%s", p.name, timeout, p.log.Tail(logTail))
	}
	var exitErr *exec.ExitError
	if p.exitErr != nil && !errors.As(p.exitErr, &exitErr) {
		tb.Fatalf("%s: %v; log:\n%s", p.name, p.exitErr, p.log.Tail(logTail))
	}
	return p.Cmd.ProcessState.ExitCode()
}

// Stop asks the program to end (SIGTERM, and its stdin closed) and kills
// it if it has not ended within grace. It returns once the program is
// gone; after the first Stop or Kill it does nothing.
func (p *Process) Stop(grace time.Duration) {
	p.stopped.Do(func() {
		_ = p.Stdin.Close()
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
			return
		case <-time.After(grace):
		}
		_ = p.Cmd.Process.Kill()
		<-p.exited
	})
}

// Kill ends the program at once, as a crash or a lost node would, and
// returns once it is gone.
func (p *Process) Kill() {
	p.stopped.Do(func() {
		_ = p.Cmd.Process.Kill()
		<-p.exited
		_ = p.Stdin.Close()
	})
}
