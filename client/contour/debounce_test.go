package contour

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	core_v1 "k8s.io/api/core/v1"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// The tests of this file step an Adapter through the debounce interval on a
// clock of their own: its timers fire only when a test advances it, on the
// test's goroutine, so every flush happens at a known point and a flush that
// should not happen yet cannot hide behind a slow machine.

// fakeClock stands in for time.Now and time.AfterFunc.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	clock   *fakeClock
	at      time.Time
	f       func()
	stopped bool // by Stop, or by firing
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) stopper {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

// advance moves the clock d forward and fires, earliest first, every timer
// then due, including those armed by the timers it fires.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var due *fakeTimer
		for _, t := range c.timers {
			if !t.stopped && !t.at.After(c.now) && (due == nil || t.at.Before(due.at)) {
				due = t
			}
		}
		if due == nil {
			c.mu.Unlock()
			return
		}
		due.stopped = true
		c.mu.Unlock()
		due.f()
	}
}

// armed returns how long from now each armed timer waits.
func (c *fakeClock) armed() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, t := range c.timers {
		if !t.stopped {
			out = append(out, t.at.Sub(c.now))
		}
	}
	return out
}

// flushed is what one Flush of a batchingTarget sent: the names of the
// objects upserted since the last, and when, from the clock's start.
type flushed struct {
	At    time.Duration
	Names []string
}

// batchingTarget is a syncTarget that records each Flush's batch, and
// returns err.
type batchingTarget struct {
	clock *fakeClock
	start time.Time

	mu      sync.Mutex
	pending []string
	batches []flushed
	err     error
	// held, when set, holds the next Flush (see holdNextFlush).
	held   *heldFlush
	closed bool
}

type heldFlush struct{ started, release chan struct{} }

// holdNextFlush makes the next Flush, once it has taken its batch, close
// started and wait until release is closed, so a test can make changes
// while a flush runs.
func (r *batchingTarget) holdNextFlush() (started, release chan struct{}) {
	h := &heldFlush{started: make(chan struct{}), release: make(chan struct{})}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = h
	return h.started, h.release
}

// Upsert records the objects' names and reports a change, except for
// objects named "unchanged...", which stand for an update that changes
// nothing the session holds (a resync, the echo of a status write).
func (r *batchingTarget) Upsert(objs ...*tributaryv1.KubernetesObject) (changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range objs {
		if name := client.Reference(o).GetName(); !strings.HasPrefix(name, "unchanged") {
			r.pending = append(r.pending, name)
			changed = true
		}
	}
	return changed
}

func (r *batchingTarget) Delete(refs ...*tributaryv1.ObjectReference) (changed bool) {
	return len(refs) > 0
}

func (r *batchingTarget) Flush(context.Context) error {
	r.mu.Lock()
	r.batches = append(r.batches, flushed{At: r.clock.Now().Sub(r.start), Names: r.pending})
	r.pending = nil
	held, err := r.held, r.err
	r.held = nil
	r.mu.Unlock()
	if held != nil {
		close(held.started)
		<-held.release
	}
	return err
}

func (r *batchingTarget) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
}

func (r *batchingTarget) takeBatches() []flushed {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.batches
	r.batches = nil
	return out
}

// newSteppedAdapter returns an Adapter with the given debounce over a
// batchingTarget, on a fakeClock, after its first Flush (whose batch is
// taken).
func newSteppedAdapter(t *testing.T, debounce time.Duration, opts ...AdapterOption) (*Adapter, *batchingTarget, *fakeClock) {
	t.Helper()
	o := adapterOptions{debounce: debounce}
	for _, opt := range opts {
		opt.applyToAdapter(&o)
	}
	clock := newFakeClock()
	target := &batchingTarget{clock: clock, start: clock.Now()}
	a := newAdapter(t.Context(), o)
	a.target, a.now, a.afterFunc = target, clock.Now, clock.AfterFunc
	t.Cleanup(a.Close)
	if err := a.Flush(t.Context()); err != nil {
		t.Fatalf("first Flush: %v", err)
	}
	target.takeBatches()
	return a, target, clock
}

func service(name string) *core_v1.Service {
	return &core_v1.Service{ObjectMeta: meta("a", name)}
}

// await fails the test when ch is not closed within 30 s: a guard against a
// broken Adapter hanging the test, not a timing assertion.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("waited 30s for %s", what)
	}
}

func wantBatches(t *testing.T, when string, target *batchingTarget, want ...flushed) {
	t.Helper()
	if d := cmp.Diff(want, target.takeBatches()); d != "" {
		t.Errorf("%s: batches (-want +got):\n%s", when, d)
	}
}

func wantArmed(t *testing.T, when string, clock *fakeClock, want ...time.Duration) {
	t.Helper()
	if got := clock.armed(); !slices.Equal(got, want) {
		t.Errorf("%s: timers armed for %v from now, want %v", when, got, want)
	}
}

// TestDebounceSendsALoneChangeAtOnceAndCoalescesTheBurstAfterIt walks
// through a burst with the default interval: its first change goes at
// once, the rest in one batch when the interval ends, and a change after a
// quiet period at once again.
func TestDebounceSendsALoneChangeAtOnceAndCoalescesTheBurstAfterIt(t *testing.T) {
	a, target, clock := newSteppedAdapter(t, 0)
	const d = DefaultDebounce

	clock.advance(time.Second)
	a.OnAdd(service("first"), false)
	wantArmed(t, "a change after a quiet period", clock, 0)
	clock.advance(0)
	wantBatches(t, "a change after a quiet period", target, flushed{time.Second, []string{"first"}})

	a.OnAdd(service("second"), false)
	wantArmed(t, "a change right after a flush", clock, d)
	clock.advance(0)
	wantBatches(t, "a change right after a flush", target)

	clock.advance(d / 2)
	a.OnUpdate(nil, service("third"))
	a.OnAdd(service("fourth"), false)
	wantArmed(t, "more changes within the interval", clock, d/2)
	clock.advance(d/2 - 1)
	wantBatches(t, "just before the interval ends", target)

	clock.advance(1)
	wantBatches(t, "when the interval ends", target, flushed{time.Second + d, []string{"second", "third", "fourth"}})
	wantArmed(t, "after the coalesced flush, with nothing left", clock)

	a.OnAdd(service("fifth"), false)
	wantArmed(t, "a change right after the coalesced flush", clock, d)
	clock.advance(d)
	wantBatches(t, "an interval after the coalesced flush", target, flushed{time.Second + 2*d, []string{"fifth"}})

	clock.advance(d)
	a.OnAdd(service("sixth"), false)
	clock.advance(0)
	wantBatches(t, "a change a quiet interval later", target, flushed{time.Second + 3*d, []string{"sixth"}})
}

// TestDebounceChangesDuringAFlush: changes made while a flush runs wait
// for it and then for the rest of its interval, or go as soon as it ends
// when it outlasted the interval.
func TestDebounceChangesDuringAFlush(t *testing.T) {
	a, target, clock := newSteppedAdapter(t, 0)
	const d = DefaultDebounce

	// fireHeld makes a change after a quiet period and fires its flush on
	// a goroutine, where the flush is held; the returned channel closes
	// when that goroutine's advance is done (with whatever the held
	// flush's end arms and makes due).
	fireHeld := func(name string) (release func(), done chan struct{}) {
		started, hold := target.holdNextFlush()
		release = sync.OnceFunc(func() { close(hold) })
		t.Cleanup(release) // before Close, which waits for the flush
		a.OnAdd(service(name), false)
		done = make(chan struct{})
		go func() {
			defer close(done)
			clock.advance(0)
		}()
		await(t, started, "the flush of "+name+" to start")
		return release, done
	}

	release, done := fireHeld("short")
	a.OnAdd(service("during-short"), false)
	wantArmed(t, "a change while a flush runs", clock)
	release()
	await(t, done, "the held flush to end")
	wantBatches(t, "when a flush shorter than the interval ends", target, flushed{0, []string{"short"}})
	wantArmed(t, "when a flush shorter than the interval ends", clock, d)
	clock.advance(d)
	wantBatches(t, "when its interval ends", target, flushed{d, []string{"during-short"}})

	clock.advance(d)
	release, done = fireHeld("long")
	a.OnAdd(service("during-long"), false)
	clock.advance(d + d/2)
	wantBatches(t, "while a flush outlasts its interval", target, flushed{2 * d, []string{"long"}})
	release()
	await(t, done, "the held flush to end")
	wantBatches(t, "when a flush longer than the interval ends", target, flushed{3*d + d/2, []string{"during-long"}})
	wantArmed(t, "after the flush of what came during the long one", clock)
}

// TestDebounceBeforeTheFirstFlush: nothing is sent, nor armed, until the
// first Flush, which sends everything; automatic flushing starts after it.
func TestDebounceBeforeTheFirstFlush(t *testing.T) {
	clock := newFakeClock()
	target := &batchingTarget{clock: clock, start: clock.Now()}
	a := newAdapter(t.Context(), adapterOptions{})
	a.target, a.now, a.afterFunc = target, clock.Now, clock.AfterFunc
	defer a.Close()

	a.OnAdd(service("listed"), true)
	a.OnAdd(service("also-listed"), true)
	wantArmed(t, "before the first Flush", clock)
	clock.advance(time.Hour)
	wantBatches(t, "before the first Flush", target)

	if err := a.Flush(t.Context()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	wantBatches(t, "the first Flush", target, flushed{time.Hour, []string{"listed", "also-listed"}})
	a.OnAdd(service("after"), false)
	clock.advance(0)
	wantBatches(t, "a change after the first Flush", target, flushed{time.Hour, []string{"after"}})
}

// TestDebounceNegative: a negative debounce sends only on Flush.
func TestDebounceNegative(t *testing.T) {
	a, target, clock := newSteppedAdapter(t, -1)
	a.OnAdd(service("waits"), false)
	wantArmed(t, "a change", clock)
	clock.advance(time.Hour)
	wantBatches(t, "an hour later", target)
	if err := a.Flush(t.Context()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	wantBatches(t, "Flush", target, flushed{time.Hour, []string{"waits"}})
}

// TestDebounceClose: Close stops an armed flush, which never runs; changes
// after Close arm nothing.
func TestDebounceClose(t *testing.T) {
	a, target, clock := newSteppedAdapter(t, time.Second)
	a.OnAdd(service("at-once"), false)
	clock.advance(0)
	a.OnAdd(service("coalesced"), false)
	wantArmed(t, "before Close", clock, time.Second)
	a.Close() // returns at once: the armed flush is stopped, not awaited
	wantArmed(t, "after Close", clock)
	a.OnAdd(service("after-close"), false)
	wantArmed(t, "a change after Close", clock)
	clock.advance(time.Hour)
	wantBatches(t, "after Close", target, flushed{0, []string{"at-once"}})
	target.mu.Lock()
	closed := target.closed
	target.mu.Unlock()
	if !closed {
		t.Error("Close left the target open")
	}
}

// TestDebounceReportsErrors: an automatic flush's error goes to the flush
// error handler, and the next change is still sent at once after a quiet
// period.
func TestDebounceReportsErrors(t *testing.T) {
	var errs []error
	a, target, clock := newSteppedAdapter(t, 0, WithFlushErrorHandler(func(err error) { errs = append(errs, err) }))
	refused := errors.New("refused")
	target.mu.Lock()
	target.err = refused
	target.mu.Unlock()
	a.OnAdd(service("refused"), false)
	clock.advance(0)
	if !slices.Equal(errs, []error{refused}) {
		t.Errorf("the handler got %v, want [%v]", errs, refused)
	}
	target.mu.Lock()
	target.err = nil
	target.mu.Unlock()
	clock.advance(DefaultDebounce)
	a.OnAdd(service("accepted"), false)
	clock.advance(0)
	wantBatches(t, "after an error", target, flushed{0, []string{"refused"}}, flushed{DefaultDebounce, []string{"accepted"}})
}

// TestDebounceIgnoresUpdatesThatChangeNothing: an update the session
// already holds (a resync, the echo of the host's own status write, an
// object no ExtensionService names) starts no flush, so it cannot open an
// interval that holds back the next real change.
func TestDebounceIgnoresUpdatesThatChangeNothing(t *testing.T) {
	a, target, clock := newSteppedAdapter(t, 0)

	clock.advance(time.Second)
	a.OnUpdate(nil, service("unchanged"))
	wantArmed(t, "an update that changes nothing", clock)
	a.OnUpdate(nil, service("real"))
	wantArmed(t, "a real change right after it", clock, 0)
	clock.advance(0)
	wantBatches(t, "a real change right after one that changed nothing", target, flushed{time.Second, []string{"real"}})
}
