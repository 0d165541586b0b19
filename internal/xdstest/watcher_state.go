package xdstest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
)

// lastVersion is the last version accepted for typeURL: what a SotW NACK
// reports as still in use.
func (w *Watcher) lastVersion(typeURL string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.versions[typeURL]
}

func (w *Watcher) update(typeURL string, changed map[string]proto.Message, removed []string, replace bool, version string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	have := w.resources[typeURL]
	if have == nil || replace {
		have = map[string]proto.Message{}
		w.resources[typeURL] = have
	}
	maps.Copy(have, changed)
	w.received += len(changed)
	for _, name := range removed {
		delete(have, name)
	}
	w.acked[typeURL]++
	w.versions[typeURL] = version
	w.at = time.Now()
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *Watcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(err, context.Canceled) {
		err = fmt.Errorf("%s ADS stream closed: %w", w.mode, err)
	}
	w.err = err
	close(w.changed)
	w.changed = make(chan struct{})
}

// Received returns how many resources the watcher has received in the
// responses it accepted, the repeats of unchanged ones included.
func (w *Watcher) Received() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.received
}

// State is a watcher's accepted resources at one moment.
type State struct {
	// Resources maps type URL → name → resource.
	Resources map[string]map[string]proto.Message
	// Acked counts the ACKs sent, by type URL.
	Acked map[string]int
	// At is when this state was reached, just after its last ACK was sent.
	At time.Time
}

// Get returns the resource of typeURL named name, or nil.
func (s State) Get(typeURL, name string) proto.Message { return s.Resources[typeURL][name] }

// State returns a copy of the current state, and why the stream ended
// (nil while it runs).
func (w *Watcher) State() (State, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.snapshot(), w.err
}

// snapshot copies the state: the watcher goes on changing its own maps.
// Called with w.mu held.
func (w *Watcher) snapshot() State {
	s := State{Resources: make(map[string]map[string]proto.Message, len(w.resources)), Acked: maps.Clone(w.acked), At: w.at}
	for t, m := range w.resources {
		s.Resources[t] = maps.Clone(m)
	}
	return s
}

// WaitFor waits until ready holds for the watcher's state, and returns a
// copy of that state. It fails the test at timeout or when the stream
// ends. ready sees the live state under the watcher's lock: it must not
// keep it or block.
func (w *Watcher) WaitFor(tb testing.TB, what string, timeout time.Duration, ready func(State) bool) State {
	tb.Helper()
	s, err := w.Await(timeout, ready, true)
	if err != nil {
		tb.Fatalf("%s ADS watcher, waiting for %s: %v", w.mode, what, err)
	}
	return s
}

// Await is WaitFor without the test: it returns an error at timeout or
// when the stream has ended. Without snapshot, the state it returns holds
// only the time it was reached, for callers that cannot afford to copy a
// large state.
func (w *Watcher) Await(timeout time.Duration, ready func(State) bool, snapshot bool) (State, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		w.mu.Lock()
		live := State{Resources: w.resources, Acked: w.acked, At: w.at}
		ok := ready(live)
		s := State{At: w.at}
		if snapshot && (ok || w.err != nil) {
			s = w.snapshot()
		}
		changed, err := w.changed, w.err
		w.mu.Unlock()
		if ok {
			return s, nil
		}
		if err != nil {
			return s, err
		}
		select {
		case <-changed:
		case <-timer.C:
			w.mu.Lock()
			held := w.describe()
			w.mu.Unlock()
			return s, fmt.Errorf("not reached within %v; holding %s", timeout, held)
		}
	}
}

// describe summarises the state for a failure message. Called with w.mu
// held.
func (w *Watcher) describe() string {
	out := ""
	for _, t := range slices.Sorted(maps.Keys(w.resources)) {
		out += fmt.Sprintf("[%s: %d resources, %d ACKs] ", t, len(w.resources[t]), w.acked[t])
	}
	return out
}
