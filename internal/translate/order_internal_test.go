package translate

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tributary-dev/tributary/internal/source"
)

// TestNamePlaces holds namePlaces to a plain sort by NamespacedName on
// names made to tie and to differ at every byte of the prefix: short and
// long namespaces, one a prefix of another, names with zero bytes, names
// whose prefixes tie and which only the rest orders, and, in some lists, a
// namespace with one (which sorts without prefixes).
func TestNamePlaces(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	word := func() string {
		const alphabet = "\x00\x01ab-z~\xff"
		b := make([]byte, rng.IntN(20))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for round := range 2000 {
		es := make([]source.ExtensionService, rng.IntN(40))
		for i := range es {
			ns := word()
			if round%4 != 0 {
				ns = withoutZeros(ns) // most lists, as Kubernetes names are: no zero byte in a namespace
			}
			es[i].Namespace, es[i].Name = ns, word()
			switch round % 3 {
			case 1: // prefixes that tie in the namespace: the names decide
				es[i].Namespace = "namespace-prefix" + es[i].Namespace
			case 2: // prefixes that tie in the name
				es[i].Namespace, es[i].Name = "ns", "name-with-a-prefix"+es[i].Name
			}
		}
		places := namePlaces(es)
		got := make([]source.NamespacedName, len(es))
		for i, at := range places {
			got[at] = es[i].NamespacedName()
		}
		if !slices.IsSortedFunc(got, source.NamespacedName.Compare) {
			t.Fatalf("round %d: namePlaces put them in the order %q", round, got)
		}
		seen := make([]bool, len(es))
		for _, at := range places {
			if seen[at] {
				t.Fatalf("round %d: place %d given twice: %v", round, at, places)
			}
			seen[at] = true
		}
	}
}

// withoutZeros is s without its zero bytes.
func withoutZeros(s string) string {
	b := []byte(s)
	b = slices.DeleteFunc(b, func(c byte) bool { return c == 0 })
	return string(b)
}
