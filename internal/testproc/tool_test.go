package testproc

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// stopTB records how a test would have ended: Skipf and Fatalf end the
// goroutine, as the testing package's do.
type stopTB struct {
	testing.TB
	skipped, failed string
}

func (s *stopTB) Helper() {}
func (s *stopTB) Skipf(format string, args ...any) {
	s.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (s *stopTB) Fatalf(format string, args ...any) {
	s.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// runTool calls tool on a goroutine of its own, which Skipf and Fatalf end.
func runTool(root, name string, ci bool) (path string, tb *stopTB) {
	tb = &stopTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		path = tool(tb, root, name, ci)
	}()
	<-done
	return path, tb
}

// A missing tool skips the test, naming the tool and `make tools`, unless
// CI is set: then it fails the test. An installed tool is returned.
func TestTool(t *testing.T) {
	root := t.TempDir()
	want := filepath.Join(root, "bin", "grpcurl")

	_, tb := runTool(root, "grpcurl", false)
	if tb.failed != "" || !strings.Contains(tb.skipped, "grpcurl is not installed at "+want) || !strings.Contains(tb.skipped, "make tools") {
		t.Errorf("without CI: skipped %q, failed %q; want a skip naming grpcurl, %s and make tools", tb.skipped, tb.failed, want)
	}
	_, tb = runTool(root, "grpcurl", true)
	if tb.skipped != "" || !strings.Contains(tb.failed, "grpcurl is not installed at "+want) || !strings.Contains(tb.failed, "make tools") {
		t.Errorf("with CI: skipped %q, failed %q; want a failure naming grpcurl, %s and make tools", tb.skipped, tb.failed, want)
	}

	if err := os.MkdirAll(want, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, tb = runTool(root, "grpcurl", true); !strings.Contains(tb.failed, "not a regular file") {
		t.Errorf("a directory at %s: failed %q, want not a regular file", want, tb.failed)
	}
	if err := os.Remove(want); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, ci := range []bool{false, true} {
		if got, tb := runTool(root, "grpcurl", ci); got != want || tb.skipped != "" || tb.failed != "" {
			t.Errorf("installed, CI %v: %q (skipped %q, failed %q), want %s", ci, got, tb.skipped, tb.failed, want)
		}
	}
}
