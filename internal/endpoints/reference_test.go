package endpoints

import (
	"bytes"
	"fmt"
	mathrand "math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tributary-dev/tributary/internal/objectgen"
)

// FuzzCollect holds Collector to Reference: slices and targets drawn from
// the fuzz input over a small universe (both families, invalid and zoned
// addresses, one address spelled several ways, endpoints without addresses
// or conditions, named, unnamed and out-of-range ports, protocols other
// than TCP, slices of no Service or of another namespace), then a few
// edits of the slices, must give exactly Reference's endpoints, order and
// warnings, from a plain and a caching Collector alike, every step.
func FuzzCollect(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		{5, 0, 2, 0, 2, 1, 1, 1, 3, 0, 0, 0, 0, 4, 1, 1, 1, 0, 0},
		bytes.Repeat([]byte{3}, 64),
		bytes.Repeat([]byte{1, 7, 2, 9, 4}, 40),
		[]byte("tributary endpoints, held to the reference by fuzzing"),
		{255, 254, 253, 252, 1, 0, 1, 0, 200, 100, 50, 25, 12, 6, 3, 1, 0, 0, 9, 9, 9, 9, 9},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkAgainstReference(t, objectgen.New(objectgen.FromBytes(data), generatorOptions()))
	})
}

// TestCollectMatchesReference is FuzzCollect on seeded random input, so that
// plain `go test` covers far more than the seed corpus.
func TestCollectMatchesReference(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	for seed := range uint64(n) {
		g := objectgen.New(objectgen.FromRand(mathrand.New(mathrand.NewPCG(seed, 0x7269627574617279))), generatorOptions())
		if !checkAgainstReference(t, g) {
			t.Fatalf("seed %d", seed)
		}
	}
	// Then slices as a healthy cluster has them: IPv4 only, every address
	// new and valid, every port valid, so that most slices take the packed
	// path and appending to them the cache's shortcut.
	healthy := generatorOptions()
	healthy.IPv6, healthy.InvalidAddresses, healthy.DuplicateAddresses, healthy.InvalidSpecs = false, false, false, false
	for seed := range uint64(n / 3) {
		g := objectgen.New(objectgen.FromRand(mathrand.New(mathrand.NewPCG(seed, 0x6865616c746879))), healthy)
		if !checkAgainstReference(t, g) {
			t.Fatalf("healthy, seed %d", seed)
		}
	}
}

// checkAgainstReference draws slices and targets from g, then edits the
// slices three times, and after each step compares a fresh plain Collector,
// and a caching one that lives through every step, against Reference. A
// caching Collector is asked twice per step: once filling its cache, once
// reading it.
func checkAgainstReference(t *testing.T, g *objectgen.Generator) bool {
	t.Helper()
	x := newTestIndex(g.EndpointSlices())
	targets := generateTargets(g)
	cached := collectorKinds[1].new(x)
	for step := range 4 {
		if step > 0 {
			editSlices(g, x)
		}
		wantRuns, wantWarnings := Reference(x, testNamespace, targets)
		for _, got := range []struct {
			name      string
			collector *Collector
		}{{"plain", collectorKinds[0].new(x)}, {"cached", cached}, {"cached again", cached}} {
			runs, warnings := got.collector.Collect(testNamespace, targets)
			if diff := cmp.Diff(wantRuns, runs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("step %d, %s: endpoints (-reference +collector):\n%s\ntargets %+v\nslices %s", step, got.name, diff, targets, dump(x))
				return false
			}
			if diff := cmp.Diff(wantWarnings, warnings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("step %d, %s: warnings (-reference +collector):\n%s\ntargets %+v\nslices %s", step, got.name, diff, targets, dump(x))
				return false
			}
		}
	}
	return true
}

// dump describes the slices of x for a failure message.
func dump(x *testIndex) string {
	var b strings.Builder
	for _, es := range x.byName {
		fmt.Fprintf(&b, "\n  %s/%s for %q, %s:", es.Namespace, es.Name, es.Service, es.AddressType)
		for _, p := range es.Ports {
			fmt.Fprintf(&b, " port{%s %s %s}", show(p.Name), show(p.Port), show(p.Protocol))
		}
		for _, ep := range es.Endpoints.Unpack() {
			fmt.Fprintf(&b, " %q notReady=%t", ep.Address, ep.NotReady)
		}
	}
	return b.String()
}

func show[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
