package main

import (
	"flag"
	"io"
	"math"
	"testing"

	"github.com/tributary-dev/tributary/internal/server"
)

// TestLimitDefaultsFollowMemory: --max-inflight-bytes defaults to a
// quarter of GOMEMLIMIT (1GiB without it) and --max-message-size to what
// the in-flight budget admits, at most 64MiB; a message size the budget
// could never admit is refused.
func TestLimitDefaultsFollowMemory(t *testing.T) {
	for _, c := range []struct {
		name                  string
		args                  []string
		memory                int64
		wantInflight, wantMsg byteSize
		wantErr               string
	}{
		{"no GOMEMLIMIT", nil, math.MaxInt64, 1 << 30, 32 << 20, ""},
		{"the deployment's 1GiB", nil, 1 << 30, 256 << 20, 8 << 20, ""},
		// The budget is capped at 2GiB-1, what a size flag holds.
		{"a large machine", nil, 64 << 30, math.MaxInt32, math.MaxInt32 / server.DecodeAmplification, ""},
		{"explicit", []string{"--max-inflight-bytes", "2MiB", "--max-message-size", "64KiB"}, 1 << 30, 2 << 20, 64 << 10, ""},
		{"message over the budget", []string{"--max-inflight-bytes", "2MiB", "--max-message-size", "1MiB"}, math.MaxInt64, 0, 0,
			"--max-message-size 1MiB needs --max-inflight-bytes of at least 33554432 (32 times the message size: what a message costs once decoded), not 2MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			limits := registerLimitFlags(fs)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			err := limits.resolve(c.memory)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("resolve = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if limits.inflightBytes != c.wantInflight || limits.messageSize != c.wantMsg {
				t.Errorf("in flight %d, message %d; want %d, %d", limits.inflightBytes, limits.messageSize, c.wantInflight, c.wantMsg)
			}
		})
	}
}
