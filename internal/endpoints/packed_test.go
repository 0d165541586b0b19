package endpoints

import (
	"fmt"
	mathrand "math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
)

// TestPackedPathMatchesReference holds the packed path (every target's
// Service has one IPv4 slice, or none), which both Collectors take for such
// input, to Reference on random input built to collide: addresses drawn
// from a small pool, so that a slice repeats an address and targets share
// address:ports, on one or several ports, named or not; endpoints not
// ready, invalid addresses and out-of-range ports now and then; targets of
// one Service named twice. Each case checks that the packed path was taken,
// so that the test keeps testing it.
func TestPackedPathMatchesReference(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 40
	}
	for seed := range uint64(n) {
		rng := mathrand.New(mathrand.NewPCG(seed, 0x7061636b6564))
		x, targets := collidingSlices(rng)
		wantRuns, wantWarnings := Reference(x, testNamespace, targets)
		for _, kind := range collectorKinds {
			c := kind.new(x)
			for round := range 2 {
				clear(c.scratch.targets)
				c.scratch.targets = make([]targetRun, len(targets))
				if !c.packedTargets(testNamespace, targets) {
					t.Fatalf("seed %d: the input does not take the packed path", seed)
				}
				runs, warnings := c.Collect(testNamespace, targets)
				if diff := cmp.Diff(wantRuns, runs, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("seed %d, %s, round %d: endpoints (-reference +collector):\n%s\ntargets %+v\nslices %s", seed, kind.name, round, diff, targets, dump(x))
				}
				if diff := cmp.Diff(wantWarnings, warnings, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("seed %d, %s, round %d: warnings (-reference +collector):\n%s\ntargets %+v\nslices %s", seed, kind.name, round, diff, targets, dump(x))
				}
			}
		}
	}
}

// collidingSlices draws up to six Services with one IPv4 slice each (or,
// now and then, none) and up to eight targets over them.
func collidingSlices(rng *mathrand.Rand) (*testIndex, []Target) {
	services := 1 + rng.IntN(6)
	pool := 1 + rng.IntN(40) // addresses to draw from
	var slices []source.EndpointSlice
	for s := range services {
		if rng.IntN(8) == 0 {
			continue // a Service without endpoints
		}
		var ports []source.EndpointPort
		for range 1 + rng.IntN(3) {
			port := int32(8080 + rng.IntN(3))
			if rng.IntN(20) == 0 {
				port = 70000
			}
			ports = append(ports, objectgen.TCPPort([]string{"", "http", "grpc"}[rng.IntN(3)], port))
		}
		var eps []source.Endpoint
		for range rng.IntN(60) {
			address := fmt.Sprintf("10.%d.%d.%d", rng.IntN(2), rng.IntN(2), rng.IntN(pool))
			switch rng.IntN(30) {
			case 0:
				address = "010.0.0.1"
			case 1:
				address = "fd00::1"
			}
			eps = append(eps, objectgen.WithReady(rng.IntN(6) != 0, address))
		}
		svc := fmt.Sprintf("s%d", s)
		slices = append(slices, objectgen.Slice(svc+"-1", svc, "IPv4", ports, eps...))
	}
	targets := make([]Target, 1+rng.IntN(8))
	for i := range targets {
		targets[i] = Target{
			Service:  fmt.Sprintf("s%d", rng.IntN(services)),
			PortName: []string{"", "http", "grpc"}[rng.IntN(3)],
			Port:     int32(80 + i),
		}
	}
	return newTestIndex(slices), targets
}

// TestPackedPathCollisions pins, on the packed path, what a target keeps of
// address:ports an earlier target holds: the same address on another port
// is kept; a shared address:port goes, counted, and named by its lowest.
func TestPackedPathCollisions(t *testing.T) {
	ports := objectgen.Ports(objectgen.TCPPort("", 8080), objectgen.TCPPort("", 8081))
	x := newTestIndex([]source.EndpointSlice{
		objectgen.Slice("a-1", "a", "IPv4", objectgen.Ports(objectgen.TCPPort("", 8080)),
			objectgen.ReadyAt("10.0.0.2"), objectgen.ReadyAt("10.0.0.1"), objectgen.ReadyAt("10.0.0.9")),
		objectgen.Slice("b-1", "b", "IPv4", ports,
			objectgen.ReadyAt("10.0.0.9"), objectgen.ReadyAt("10.0.0.3"), objectgen.ReadyAt("10.0.0.1"), objectgen.ReadyAt("10.0.0.3")),
	})
	targets := []Target{{Service: "a", Port: 80}, {Service: "b", Port: 90}}
	want := [][]Endpoint{
		{{source.MakeAddress("10.0.0.1"), 8080}, {source.MakeAddress("10.0.0.2"), 8080}, {source.MakeAddress("10.0.0.9"), 8080}},
		{{source.MakeAddress("10.0.0.1"), 8081}, {source.MakeAddress("10.0.0.3"), 8080}, {source.MakeAddress("10.0.0.3"), 8081}, {source.MakeAddress("10.0.0.9"), 8081}},
	}
	wantWarnings := []Warning{{Reason: ReasonDuplicateEndpoint, Message: `2 endpoint(s) of port 90 of Service "ns/b", first 10.0.0.1:8080, already belong to an earlier Service in spec.services and are left out of this one`}}
	for _, kind := range collectorKinds {
		runs, warnings := kind.new(x).Collect(testNamespace, targets)
		if diff := cmp.Diff(want, runs); diff != "" {
			t.Errorf("%s: endpoints (-want +got):\n%s", kind.name, diff)
		}
		if diff := cmp.Diff(wantWarnings, warnings); diff != "" {
			t.Errorf("%s: warnings (-want +got):\n%s", kind.name, diff)
		}
	}
}
