package model

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
)

// availabilityFor resolves targets as buildFor does and returns the
// availability buildLocalities gives them.
func availabilityFor(t *testing.T, b *Builder, targets []target) []TargetAvailability {
	t.Helper()
	resolved := make([]resolvedTarget, 0, len(targets))
	for _, tg := range targets {
		svc := b.index.Service(source.NamespacedName{Namespace: testNamespace, Name: tg.service})
		if svc == nil {
			t.Fatalf("no Service %q in the test objects", tg.service)
		}
		for _, p := range svc.Ports {
			if p.Port == tg.port {
				resolved = append(resolved, resolvedTarget{service: svc, port: p, weight: tg.weight})
			}
		}
	}
	var st Status
	b.buildLocalities(testNamespace, resolved, &st)
	return st.Availability
}

// TestTargetAvailability: one entry per distinct target, in spec order,
// counting the endpoints its locality gets and the weight that locality
// carries, with the reason when it carries nothing.
func TestTargetAvailability(t *testing.T) {
	http := objectgen.Ports(objectgen.TCPPort("http", 8080))
	twoServices := []source.Service{testService("a", servicePort("http", 80)), testService("b", servicePort("http", 80))}
	tests := []struct {
		name     string
		services []source.Service
		slices   []source.EndpointSlice
		targets  []target
		want     []TargetAvailability
	}{{
		name:     "ready endpoints are counted, others not; the weight is the spec's",
		services: twoServices,
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1"), objectgen.ReadyAt("10.0.0.2"), objectgen.WithReady(false, "10.0.0.3")),
			objectgen.Slice("b-1", "b", "IPv4", http, objectgen.ReadyAt("10.0.1.1")),
		},
		targets: []target{{"a", 80, 80}, {"b", 80, 20}},
		want:    []TargetAvailability{{Service: "a", Port: 80, ReadyEndpoints: 2, Weight: 80}, {Service: "b", Port: 80, ReadyEndpoints: 1, Weight: 20}},
	}, {
		name:     "no ready endpoint: weight 0, NoReadyEndpoints",
		services: twoServices,
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("b-1", "b", "IPv4", http, objectgen.WithReady(false, "10.0.1.1")),
		},
		targets: []target{{"a", 80, 80}, {"b", 80, 20}},
		want: []TargetAvailability{
			{Service: "a", Port: 80, ReadyEndpoints: 1, Weight: 80},
			{Service: "b", Port: 80, ReadyEndpoints: 0, Weight: 0, Reason: AvailabilityNoReadyEndpoints},
		},
	}, {
		name:     "no endpoints at all",
		services: []source.Service{testService("a", servicePort("http", 80))},
		targets:  []target{{"a", 80, 0}},
		want:     []TargetAvailability{{Service: "a", Port: 80, Reason: AvailabilityNoReadyEndpoints}},
	}, {
		name:     "weight 0 beside a weight: ZeroWeight, its endpoints counted",
		services: twoServices,
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("b-1", "b", "IPv4", http, objectgen.ReadyAt("10.0.1.1"), objectgen.ReadyAt("10.0.1.2")),
		},
		targets: []target{{"a", 80, 7}, {"b", 80, 0}},
		want: []TargetAvailability{
			{Service: "a", Port: 80, ReadyEndpoints: 1, Weight: 7},
			{Service: "b", Port: 80, ReadyEndpoints: 2, Weight: 0, Reason: AvailabilityZeroWeight},
		},
	}, {
		name:     "every weight 0 is an even split: weight 1 each",
		services: twoServices,
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("b-1", "b", "IPv4", http, objectgen.ReadyAt("10.0.1.1")),
		},
		targets: []target{{"a", 80, 0}, {"b", 80, 0}},
		want:    []TargetAvailability{{Service: "a", Port: 80, ReadyEndpoints: 1, Weight: 1}, {Service: "b", Port: 80, ReadyEndpoints: 1, Weight: 1}},
	}, {
		name:     "a target named twice is one entry with the summed weight",
		services: twoServices,
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("b-1", "b", "IPv4", http, objectgen.ReadyAt("10.0.1.1")),
		},
		targets: []target{{"b", 80, 30}, {"a", 80, 10}, {"b", 80, 50}},
		want:    []TargetAvailability{{Service: "b", Port: 80, ReadyEndpoints: 1, Weight: 80}, {Service: "a", Port: 80, ReadyEndpoints: 1, Weight: 10}},
	}, {
		name:     "an endpoint taken by an earlier target is not counted again",
		services: twoServices,
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("b-1", "b", "IPv4", http, objectgen.ReadyAt("10.0.0.1")),
		},
		targets: []target{{"a", 80, 60}, {"b", 80, 40}},
		want: []TargetAvailability{
			{Service: "a", Port: 80, ReadyEndpoints: 1, Weight: 60},
			{Service: "b", Port: 80, ReadyEndpoints: 0, Weight: 0, Reason: AvailabilityNoReadyEndpoints},
		},
	}, {
		// No locality is emitted at all then (NoWeightedEndpoints), so no
		// target carries traffic: the weighted one for want of endpoints,
		// the one with endpoints for want of weight.
		name:     "weights present but no weighted target has endpoints: every weight 0",
		services: twoServices,
		slices:   []source.EndpointSlice{objectgen.Slice("b-1", "b", "IPv4", http, objectgen.ReadyAt("10.0.1.1"))},
		targets:  []target{{"a", 80, 80}, {"b", 80, 0}},
		want: []TargetAvailability{
			{Service: "a", Port: 80, ReadyEndpoints: 0, Weight: 0, Reason: AvailabilityNoReadyEndpoints},
			{Service: "b", Port: 80, ReadyEndpoints: 1, Weight: 0, Reason: AvailabilityZeroWeight},
		},
	}}
	for _, tc := range tests {
		for _, kind := range builderKinds {
			t.Run(tc.name+"/"+kind.name, func(t *testing.T) {
				b := kind.new(NewIndex(&source.Objects{Services: tc.services, EndpointSlices: tc.slices}))
				if diff := cmp.Diff(tc.want, availabilityFor(t, b, tc.targets)); diff != "" {
					t.Errorf("availability (-want +got):\n%s", diff)
				}
				// A second build on the same Builder reuses its scratch
				// space: the answer must not change.
				if diff := cmp.Diff(tc.want, availabilityFor(t, b, tc.targets)); diff != "" {
					t.Errorf("availability, built again (-want +got):\n%s", diff)
				}
			})
		}
	}
}
