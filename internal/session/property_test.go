package session_test

import (
	"bytes"
	"context"
	"errors"
	mathrand "math/rand/v2"
	"testing"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/testctx"
	"github.com/tributary-dev/tributary/internal/translate"
)

// checkRun applies generated batches to a session until the choices run out
// (at most maxBatches), each after attempts that must fail and change
// nothing (see failingAttempts), and checks, after every batch, that:
//   - the delta is minimal and well formed against what came before (see
//     output.apply);
//   - the output accumulated from every delta equals a fresh Translate of
//     the objects applied so far, bodies included;
//   - State equals it too;
//   - a reader taking from an Outbox at random moments (so that deltas of
//     several batches merge) receives minimal deltas, acknowledges the
//     latest batch, and ends up with the same output.
func checkRun(t *testing.T, g *objectgen.Generator, maxBatches int) {
	t.Helper()
	settings := g.Settings()
	sess := session.New(settings)
	objects := newStore()
	fromDeltas := newOutput()
	outbox := session.NewOutbox()
	fromOutbox := newOutput()
	putSinceTake := false
	var lastID uint64
	var want *output

	take := func(wantID uint64) {
		t.Helper()
		id, d, ok := outbox.Take()
		if !ok {
			t.Fatal("Take found nothing pending")
		}
		if id != wantID {
			t.Fatalf("Take acknowledged batch %d, want %d", id, wantID)
		}
		for _, p := range fromOutbox.apply(&d) {
			t.Errorf("outbox delta for batch %d: %s", id, p)
		}
		putSinceTake = false
	}

	for id := uint64(1); id <= uint64(maxBatches) && (id == 1 || !g.Exhausted()); id++ {
		var batch session.Batch
		if id == 1 {
			batch = initialBatch(g)
		} else {
			batch = generatedBatch(g)
		}
		objects.apply(&batch)
		d, applied := failingAttempts(t, sess, &batch)
		if !applied {
			d = mustApply(t, sess, &batch)
		}
		for _, p := range fromDeltas.apply(&d) {
			t.Errorf("batch %d: %s", id, p)
		}
		lastID = id
		want = outputOf(translate.Translate(objects.objects(), settings))
		if diff := diffOutput(want, fromDeltas); diff != "" {
			t.Fatalf("batch %d %+v: output accumulated from deltas differs from Translate (-translate +deltas):\n%s", id, batch, diff)
		}
		state := sess.State()
		fromState := newOutput()
		for _, p := range fromState.apply(&state) {
			t.Errorf("batch %d: State: %s", id, p)
		}
		if diff := diffOutput(want, fromState); diff != "" {
			t.Fatalf("batch %d: State differs from Translate (-translate +state):\n%s", id, diff)
		}

		outbox.Put(id, d)
		putSinceTake = true
		if g.Chance(3) {
			take(id)
			if diff := diffOutput(want, fromOutbox); diff != "" {
				t.Fatalf("batch %d: output taken from the Outbox differs from Translate (-translate +outbox):\n%s", id, diff)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	if putSinceTake {
		// The last Take covers everything still pending.
		take(lastID)
	}
	if diff := diffOutput(want, fromOutbox); diff != "" {
		t.Fatalf("final output taken from the Outbox differs from Translate (-translate +outbox):\n%s", diff)
	}
}

// TestSessionMatchesTranslate is the property test: for many seeded random
// sequences of batches, incremental output equals a fresh Translate. A
// third of the runs more have only healthy slices (IPv4, every address new
// and valid, valid ports and specs), which keep the caching Collector on
// its packed path and its shortcut for appended endpoints.
func TestSessionMatchesTranslate(t *testing.T) {
	runs := 150
	if testing.Short() {
		runs = 50
	}
	for seed := range uint64(runs) {
		g := newGenerator(objectgen.FromRand(mathrand.New(mathrand.NewPCG(seed, 0x5e55))))
		t.Run("", func(t *testing.T) { checkRun(t, g, 40) })
	}
	healthy := generatorOptions()
	healthy.IPv6, healthy.InvalidAddresses, healthy.DuplicateAddresses, healthy.InvalidSpecs = false, false, false, false
	for seed := range uint64(runs / 3) {
		g := objectgen.New(objectgen.FromRand(mathrand.New(mathrand.NewPCG(seed, 0x6865616c746879))), healthy)
		t.Run("healthy", func(t *testing.T) { checkRun(t, g, 40) })
	}
}

// FuzzSessionMatchesTranslate is the property test driven by fuzz input.
func FuzzSessionMatchesTranslate(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		{0, 1, 2, 3, 4, 5, 6, 7, 8, 9},
		bytes.Repeat([]byte{3}, 64),
		[]byte("an endpoint slice relabelled to another service, then deleted"),
		bytes.Repeat([]byte{0, 0, 1, 0, 2, 0, 3, 4, 255, 128}, 30),
		bytes.Repeat([]byte{9, 250, 17, 1, 64, 2}, 50),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRun(t, newGenerator(objectgen.FromBytes(data)), 64)
	})
}

// failingAttempts applies b to s in ways that must fail and leave s as it
// was: with a context cancelled before, with one cancelled once the first
// ExtensionService is built, and under a 1-byte output limit. An attempt
// succeeds only when there is nothing to stop (b rebuilds nothing, or s's
// output is empty); b is then applied, and its Changes are returned.
func failingAttempts(t *testing.T, s *session.Session, b *session.Batch) (translate.Changes, bool) {
	t.Helper()
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	for _, attempt := range []struct {
		name   string
		ctx    context.Context
		limits translate.Limits
	}{
		{"cancelled", cancelled, defaultLimits},
		{"cancelled while building", testctx.NewCancelAfter(t, 2), defaultLimits},
		{"over the output limit", t.Context(), translate.Limits{MaxOutputBytes: 1}},
	} {
		size := s.SizeChange(b)
		counts := objectCounts(s)
		d, err := s.Apply(attempt.ctx, b, attempt.limits)
		if err == nil {
			return d, true
		}
		if _, tooLarge := errors.AsType[*translate.TooLargeError](err); !tooLarge && !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %v", attempt.name, err)
		}
		if !d.Empty() {
			t.Fatalf("%s: failed with %v, yet gave changes %+v", attempt.name, err, d)
		}
		if got := s.SizeChange(b); got != size {
			t.Fatalf("%s: the batch's SizeChange went from %d to %d: the session changed", attempt.name, size, got)
		}
		if got := objectCounts(s); got != counts {
			t.Fatalf("%s: object counts went from %v to %v", attempt.name, counts, got)
		}
	}
	return translate.Changes{}, false
}

func objectCounts(s *session.Session) (counts [source.KindEnd]int) {
	for k := range source.Kinds() {
		counts[k] = s.Objects(k)
	}
	return counts
}
