// Package testserver runs the tributary server of this checkout for the
// client module's tests and examples. The client module may not import the
// server (it must need none of the server's requirements), so the server is
// built from the checkout and run as a separate process, as users run it.
//
// Only tests import this package.
package testserver

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Guards against a build or a server that hangs: a cold build compiles
// every Envoy type; the rest is a loopback listener opening and closing.
const (
	buildTimeout = 10 * time.Minute
	startTimeout = time.Minute
	stopGrace    = 5 * time.Second
)

// servingLine is what `tributary serve` logs once its gRPC listener is open.
var servingLine = regexp.MustCompile(`msg="serving gRPC" address=(\S+)`)

// Main builds and starts the server, runs the tests with the address it
// serves gRPC on, stops the server and returns the exit code for os.Exit.
// When the module is not inside the tributary checkout (it was fetched as
// a dependency) there is no server to build: Main says so and returns 0
// without running the tests.
func Main(m *testing.M, address *string) int {
	root, err := checkoutRoot()
	if err != nil {
		fmt.Printf("testserver: not running the tests: %v\n", err)
		return 0
	}
	dir, err := os.MkdirTemp("", "tributary-client-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	bin := filepath.Join(dir, "tributary")
	if err := build(root, bin); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		return 1
	}
	srv, err := start(bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		return 1
	}
	*address = srv.address
	code := m.Run()
	if err := srv.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testserver: %v; log:\n%s", err, srv.log.String())
		return max(code, 1)
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "testserver: the server's log:\n%s", srv.log.String())
	}
	return code
}

// checkoutRoot finds the checkout the client module lives in: the parent
// of the module's directory, when it holds the server's main package. Tests
// run in their package's directory, so the module's directory is the
// nearest one above it with a go.mod.
func checkoutRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for !fileExists(filepath.Join(dir, "go.mod")) {
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the tests do not run inside a Go module")
		}
		dir = parent
	}
	root := filepath.Dir(dir)
	main := filepath.Join(root, "cmd", "tributary", "main.go")
	if !fileExists(main) {
		return "", fmt.Errorf("the client module is not inside a tributary checkout (no %s), so there is no server to test against", main)
	}
	return root, nil
}

func build(root, bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool(), "build", "-C", root, "-o", bin, "./cmd/tributary")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -C %s ./cmd/tributary: %w\n%s", root, err, out)
	}
	return nil
}

// goTool is the go command of the toolchain running the tests.
func goTool() string {
	if goroot := os.Getenv("GOROOT"); goroot != "" {
		if p := filepath.Join(goroot, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

type server struct {
	cmd     *exec.Cmd
	address string
	log     *logBuffer
	exited  chan struct{}
	waitErr error
}

// start runs the server on a free loopback port and waits until it logs
// the address.
func start(bin string) (*server, error) {
	cmd := exec.Command(bin, "serve", "--address", "127.0.0.1:0", "--shutdown-timeout", "1s")
	endWithParent(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &server{cmd: cmd, log: &logBuffer{}, exited: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.log.writeLine(line)
			if m := servingLine.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		// The pipe must be drained before Wait, which closes it, even past a
		// line too long for the scanner.
		_, _ = io.Copy(io.Discard, stderr)
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	select {
	case s.address = <-found:
		return s, nil
	case <-s.exited:
		exit := cmp.Or(s.waitErr, errors.New("exit status 0"))
		return nil, fmt.Errorf("the server exited (%w) before serving; log:\n%s", exit, s.log.String())
	case <-time.After(startTimeout):
		_ = s.stop()
		return nil, fmt.Errorf("the server did not log its address within %v; log:\n%s", startTimeout, s.log.String())
	}
}

// stop asks the server to drain (SIGTERM) and kills it after stopGrace.
func (s *server) stop() error {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(stopGrace):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("the server did not stop within %v of SIGTERM", stopGrace)
	}
	var exitErr *exec.ExitError
	if s.waitErr != nil && !errors.As(s.waitErr, &exitErr) {
		return s.waitErr
	}
	return nil
}

// logBuffer keeps the server's log for failure messages.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) writeLine(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(line)
	b.buf.WriteByte('\n')
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
