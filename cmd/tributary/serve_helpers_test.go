package main

import (
	"bufio"
	"context"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tributary-dev/tributary/internal/testproc"
)

// The log lines naming the addresses serve listens on, which callers that
// ask for port 0 read back.
var (
	grpcAddressLine    = regexp.MustCompile(`msg="serving gRPC" address=(\S+)`)
	xdsAddressLine     = regexp.MustCompile(`msg="serving xDS" address=(\S+)`)
	metricsAddressLine = regexp.MustCompile(`msg="serving metrics" address=(\S+)`)
)

// runningServe is `tributary serve` running in process.
type runningServe struct {
	grpcAddress, xdsAddress, metricsAddress string
	logs                                    *testproc.Buffer

	cancel context.CancelFunc
	done   chan int
	once   sync.Once
	code   int
}

// startServe runs `serve --address 127.0.0.1:0 args...` until stop or the
// end of the test, when it must have exited 0. It returns once serve has
// logged the address of every listener args ask for (gRPC, and xDS and
// metrics with --xds-address and --metrics-address), and fails the test
// unless those are serve's first log lines, as runServe promises.
func startServe(t *testing.T, args ...string) *runningServe {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningServe{logs: &testproc.Buffer{}, cancel: cancel, done: make(chan int, 1)}
	pr, pw := io.Pipe()
	go func() {
		r.done <- run(ctx, append([]string{"serve", "--address", "127.0.0.1:0"}, args...), stdio{in: strings.NewReader(""), out: io.Discard, err: io.MultiWriter(r.logs, pw)})
		_ = pw.Close()
	}()
	t.Cleanup(func() {
		if code := r.stop(); code != 0 {
			t.Errorf("serve exited %d; log:\n%s", code, r.logs.String())
		}
	})

	type addressLine struct {
		line    *regexp.Regexp
		address *string
	}
	wanted := []addressLine{{grpcAddressLine, &r.grpcAddress}}
	if slices.Contains(args, "--xds-address") {
		wanted = append(wanted, addressLine{xdsAddressLine, &r.xdsAddress})
	}
	if slices.Contains(args, "--metrics-address") {
		wanted = append(wanted, addressLine{metricsAddressLine, &r.metricsAddress})
	}
	lines := bufio.NewScanner(pr)
	for range wanted {
		if !lines.Scan() {
			t.Fatalf("serve ended before logging its addresses:\n%s", r.logs.String())
		}
		found := false
		for _, w := range wanted {
			if m := w.line.FindStringSubmatch(lines.Text()); m != nil {
				*w.address, found = m[1], true
			}
		}
		if !found {
			t.Fatalf("serve logged %q before the addresses it listens on:\n%s", lines.Text(), r.logs.String())
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	for _, w := range wanted {
		if *w.address == "" {
			t.Fatalf("serve did not log every address it listens on:\n%s", r.logs.String())
		}
	}
	return r
}

// stop ends serve as SIGTERM does (cancel alone starts that without
// waiting), and returns its exit code.
func (r *runningServe) stop() int {
	r.once.Do(func() {
		r.cancel()
		r.code = <-r.done
	})
	return r.code
}
