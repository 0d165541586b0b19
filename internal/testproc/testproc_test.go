package testproc_test

import (
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-dev/tributary/internal/testproc"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testproc.RemoveBuilds()
	os.Exit(code)
}

// Start reads back every address serve logs, and a SIGTERM ends the
// program with exit code 0 and its whole log kept.
func TestStartServe(t *testing.T) {
	bin := testproc.Build(t)
	if again := testproc.Build(t); again != bin {
		t.Errorf("second Build gave %s, want the first build %s", again, bin)
	}
	p := testproc.Start(t, bin, "serve", "--address", "127.0.0.1:0", "--xds-address", "127.0.0.1:0", "--metrics-address=127.0.0.1:0")
	for name, addr := range map[string]string{"gRPC": p.Address, "xDS": p.XDSAddress, "metrics": p.MetricsAddress} {
		if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
			t.Errorf("%s address %q, want a loopback port", name, addr)
		}
	}
	if m := p.WaitLog(t, regexp.MustCompile(`msg="serving xDS" address=(\S+)`), time.Minute); m[1] != p.XDSAddress {
		t.Errorf("WaitLog found %q, want %q", m[1], p.XDSAddress)
	}
	p.Signal(t, syscall.SIGTERM)
	if code := p.Wait(t, time.Minute); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0; log:\n%s", code, p.Log())
	}
	if !strings.Contains(p.Log(), "msg=stopped") {
		t.Errorf("log does not end with the stop:\n%s", p.Log())
	}
}

// Kill ends a program at once; stdout comes line by line.
func TestKillAndReadLine(t *testing.T) {
	p := testproc.Start(t, "/bin/sh", "-c", "echo ready; exec sleep 600")
	if got := p.ReadLine(t, time.Minute); got != "ready" {
		t.Errorf("ReadLine = %q, want ready", got)
	}
	p.Kill()
	if code := p.Wait(t, time.Minute); code != -1 {
		t.Errorf("exit code %d after Kill, want -1 (killed by a signal)", code)
	}
}

func TestBufferTail(t *testing.T) {
	var b testproc.Buffer
	for _, line := range []string{"one\n", "two\n", "three\n"} {
		if _, err := b.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.Tail(2); got != "two\nthree" {
		t.Errorf("Tail(2) = %q, want two and three", got)
	}
	if got := b.Tail(10); got != "one\ntwo\nthree" {
		t.Errorf("Tail(10) = %q, want every line", got)
	}
}
