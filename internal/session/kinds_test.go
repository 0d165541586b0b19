package session_test

import (
	mathrand "math/rand/v2"
	"testing"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
)

// TestObjectsCountsEveryKind: over random sequences of batches (upserts of
// new and held names, deletes of held and unknown ones), the session counts
// exactly the objects it holds, per kind.
func TestObjectsCountsEveryKind(t *testing.T) {
	for seed := range uint64(30) {
		g := newGenerator(objectgen.FromRand(mathrand.New(mathrand.NewPCG(seed, 11))))
		sess := session.New(g.Settings())
		objects := newStore()
		for i := range 40 {
			b := generatedBatch(g)
			objects.apply(&b)
			mustApply(t, sess, &b)
			want := map[source.Kind]int{
				source.KindExtensionService:         len(objects.extensionServices),
				source.KindService:                  len(objects.services),
				source.KindEndpointSlice:            len(objects.endpointSlices),
				source.KindSecret:                   len(objects.secrets),
				source.KindTLSCertificateDelegation: len(objects.delegations),
			}
			for k := range source.Kinds() {
				if got := sess.Objects(k); got != want[k] {
					t.Fatalf("seed %d, batch %d: %d %ss counted, %d held", seed, i, got, k, want[k])
				}
			}
		}
	}
}

// TestKindNames: every kind has its Kubernetes name, in the order of the
// constants.
func TestKindNames(t *testing.T) {
	var got []string
	for k := range source.Kinds() {
		got = append(got, k.String())
	}
	want := []string{"ExtensionService", "Service", "EndpointSlice", "Secret", "TLSCertificateDelegation"}
	if len(got) != len(want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("kind %d is %q, want %q", i+1, got[i], want[i])
		}
	}
}
