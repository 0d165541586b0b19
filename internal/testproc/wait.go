package testproc

import (
	"testing"
	"time"
)

// WaitFor polls cond until it holds, and fails the test after a generous
// deadline (20 s): it waits for something asynchronous to happen, it does
// not time it.
func WaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
