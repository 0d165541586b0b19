// Package testctx holds contexts that tests use to end work at a chosen
// point, deterministically, instead of racing a timer against it.
package testctx

import (
	"context"
	"sync/atomic"
	"testing"
)

// CancelAfter is a context that cancels itself at the n-th call of its Err
// method, so a test can end a translation or an Apply in the middle of its
// work, at the same point on every run.
type CancelAfter struct {
	context.Context
	cancel context.CancelFunc
	looks  atomic.Int64
	n      int64
}

// NewCancelAfter returns a CancelAfter below t.Context() that cancels at
// its n-th look.
func NewCancelAfter(t testing.TB, n int64) *CancelAfter {
	ctx, cancel := context.WithCancel(t.Context())
	return &CancelAfter{Context: ctx, cancel: cancel, n: n}
}

// Err counts the look, cancels the context at the n-th, and returns the
// context's error.
func (c *CancelAfter) Err() error {
	if c.looks.Add(1) == c.n {
		c.cancel()
	}
	return c.Context.Err()
}

// Looks is how many times Err has been called.
func (c *CancelAfter) Looks() int64 { return c.looks.Load() }
