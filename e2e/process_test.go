package e2e

import (
	"bufio"
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

// binDir holds the programs the tests run, built once per test binary by
// buildPrograms; TestMain creates and removes it.
var binDir string

// The programs the tests run, built from these packages into binDir.
var programs = map[string]string{
	"tributary":    "./cmd/tributary",
	"authzbackend": "./e2e/cmd/authzbackend",
	"xdscaller":    "./e2e/cmd/xdscaller",
}

var (
	buildOnce sync.Once
	buildErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tributary-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// program returns the path of a built program, building every program the
// first time. The build is a plain one (no -race): the programs are the
// system under test, run as they would be in production.
func program(tb testing.TB, name string) string {
	tb.Helper()
	buildOnce.Do(func() {
		args := []string{"build", "-o", binDir + string(filepath.Separator)}
		for _, pkg := range programs {
			args = append(args, pkg)
		}
		cmd := exec.Command(goTool(), args...)
		cmd.Dir = ".." // the module root: this package is e2e/
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return filepath.Join(binDir, name)
}

// goTool is the go command that runs this test, so the programs are built
// with the same toolchain.
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

// process is a running program. Its stdout and stderr are kept (stdout
// also line by line, for programs that answer commands), and it is stopped
// when the test ends; if the test failed, the end of its stderr is logged.
type process struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// lines receives stdout line by line; it is closed at EOF.
	lines  chan string
	stderr *logBuffer
	exited chan struct{}
	// exitErr is cmd.Wait's result, valid once exited is closed.
	exitErr error
	stopped sync.Once
}

// start runs a built program with args and extra environment variables.
// Its stdin stays open for the life of the process: the helpers exit when
// it closes, so they do not outlive a test binary that was killed.
func start(tb testing.TB, name string, env []string, args ...string) *process {
	tb.Helper()
	cmd := exec.Command(program(tb, name), args...)
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	p := &process{name: name, cmd: cmd, stdin: stdin, lines: make(chan string, 64), stderr: newLogBuffer(), exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
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
		p.stop(5 * time.Second)
		if tb.Failed() && p.stderr.String() != "" {
			tb.Logf("%s (pid %d) stderr, last lines:\n%s", name, cmd.Process.Pid, p.stderr.tail(40))
		}
	})
	return p
}

// stop asks the process to end (SIGTERM, and its stdin closed) and kills it
// if it has not ended within grace. It returns once the process is gone.
func (p *process) stop(grace time.Duration) {
	p.stopped.Do(func() {
		_ = p.stdin.Close()
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
			return
		case <-time.After(grace):
		}
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
}

// kill ends the process at once, as a crash would, and waits for it.
func (p *process) kill() {
	p.stopped.Do(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		_ = p.stdin.Close()
	})
}

// readLine returns the next stdout line, failing the test if none comes
// within timeout or the process ends first.
func (p *process) readLine(tb testing.TB, timeout time.Duration) string {
	tb.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			<-p.exited
			tb.Fatalf("%s ended (%v) before printing a line; stderr:\n%s", p.name, p.exitErr, p.stderr.tail(40))
		}
		return line
	case <-time.After(timeout):
		tb.Fatalf("%s printed nothing within %v; stderr:\n%s", p.name, timeout, p.stderr.tail(40))
	}
	return ""
}

// waitStderr waits until a stderr line matches re and returns the match's
// submatches.
func (p *process) waitStderr(tb testing.TB, re *regexp.Regexp, timeout time.Duration) []string {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if m := re.FindStringSubmatch(p.stderr.String()); m != nil {
			return m
		}
		select {
		case <-p.exited:
			tb.Fatalf("%s ended (%v) before logging %q; stderr:\n%s", p.name, p.exitErr, re, p.stderr.tail(40))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%s did not log %q within %v; stderr:\n%s", p.name, re, timeout, p.stderr.tail(40))
		}
	}
}

// logBuffer is an io.Writer safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func newLogBuffer() *logBuffer { return &logBuffer{} }

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
