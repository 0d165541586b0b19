package objectgen

import "math/rand/v2"

// Choices is where a Generator's choices come from: fuzz input or a seeded
// random source.
type Choices interface {
	// IntN returns a number in [0, n); n > 0.
	IntN(n int) int
	// Exhausted reports whether the choices have run out: fuzz input is
	// finite, a random source never runs out.
	Exhausted() bool
}

// FromBytes reads choices from fuzz input a byte at a time (byte mod n),
// then zeros once the input has run out. Zeros pick the first of every
// list, so the generator's lists start with their most common case.
func FromBytes(data []byte) Choices { return &byteChoices{data: data} }

type byteChoices struct {
	data []byte
	pos  int
}

func (b *byteChoices) IntN(n int) int {
	if b.pos >= len(b.data) {
		return 0
	}
	b.pos++
	return int(b.data[b.pos-1]) % n
}

func (b *byteChoices) Exhausted() bool { return b.pos >= len(b.data) }

// FromRand draws choices from r; they never run out.
func FromRand(r *rand.Rand) Choices { return randChoices{r} }

type randChoices struct{ r *rand.Rand }

func (c randChoices) IntN(n int) int  { return c.r.IntN(n) }
func (c randChoices) Exhausted() bool { return false }
