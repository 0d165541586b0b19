package model

import (
	"fmt"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
)

const testNamespace = objectgen.Namespace

// target names a spec target: the Service, its port (by number) and a weight.
type target struct {
	service string
	port    int32
	weight  uint32
}

// buildFor indexes objs and runs buildLocalities for targets, resolving each
// target to its Service port the way the spec does (by number).
func buildFor(t *testing.T, b *Builder, targets []target) ([]Locality, Condition) {
	t.Helper()
	resolved := make([]resolvedTarget, 0, len(targets))
	for _, tg := range targets {
		svc := b.index.Service(source.NamespacedName{Namespace: testNamespace, Name: tg.service})
		if svc == nil {
			t.Fatalf("no Service %q in the test objects", tg.service)
		}
		found := false
		for _, p := range svc.Ports {
			if p.Port == tg.port {
				resolved = append(resolved, resolvedTarget{service: svc, port: p, weight: tg.weight})
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("Service %q has no port %d", tg.service, tg.port)
		}
	}
	var st Status
	locs := b.buildLocalities(testNamespace, resolved, &st)
	return locs, st.Condition
}

// builderKinds are the two ways a Builder resolves endpoints, which must
// agree: parsing every slice on every Build, and keeping each slice parsed
// (CacheEndpointSlices).
var builderKinds = []struct {
	name string
	new  func(*Index) *Builder
}{
	{"plain", func(idx *Index) *Builder { return NewBuilder(idx, source.Settings{}) }},
	{"cached", func(idx *Index) *Builder {
		b := NewBuilder(idx, source.Settings{})
		b.CacheEndpointSlices()
		return b
	}},
}

func TestBuildLocalities(t *testing.T) {
	http := objectgen.Ports(objectgen.TCPPort("http", 8080))
	twoServices := []source.Service{testService("a", servicePort("http", 80)), testService("b", servicePort("http", 80))}

	tests := []struct {
		name       string
		services   []source.Service
		slices     []source.EndpointSlice
		targets    []target
		want       []Locality
		wantErrors []SubCondition
		wantWarns  []SubCondition
	}{{
		name:     "ready unless marked not ready, ordered as IPs",
		services: []source.Service{testService("a", servicePort("http", 80))},
		slices: []source.EndpointSlice{objectgen.Slice("a-1", "a", "IPv4", http,
			objectgen.ReadyAt("10.0.0.10"),
			objectgen.WithReady(false, "10.0.0.1"),
			objectgen.WithReady(true, "10.0.0.9"),
			objectgen.ReadyAt("9.0.0.1"),
			objectgen.ReadyAt("10.0.0.200"),
		)},
		targets: []target{{"a", 80, 0}},
		want: []Locality{{SubZone: "ns/a/80", Weight: 1, Endpoints: eps(
			"9.0.0.1", 8080, "10.0.0.9", 8080, "10.0.0.10", 8080, "10.0.0.200", 8080)}},
	}, {
		name:     "weights are used as is",
		services: twoServices,
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("b-1", "b", "IPv4", http, objectgen.ReadyAt("10.0.1.1")),
		},
		targets: []target{{"a", 80, 80}, {"b", 80, 20}},
		want: []Locality{
			{SubZone: "ns/a/80", Weight: 80, Endpoints: eps("10.0.0.1", 8080)},
			{SubZone: "ns/b/80", Weight: 20, Endpoints: eps("10.0.1.1", 8080)},
		},
	}, {
		name:     "weight 0 next to a weight leaves the locality unweighted",
		services: twoServices,
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("b-1", "b", "IPv4", http, objectgen.ReadyAt("10.0.1.1")),
		},
		targets: []target{{"a", 80, 0}, {"b", 80, 7}},
		want: []Locality{
			{SubZone: "ns/a/80", Weight: 0, Endpoints: eps("10.0.0.1", 8080)},
			{SubZone: "ns/b/80", Weight: 7, Endpoints: eps("10.0.1.1", 8080)},
		},
	}, {
		name:     "every weight unset gives each locality 1, spec order kept",
		services: twoServices,
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("b-1", "b", "IPv4", http, objectgen.ReadyAt("10.0.1.1")),
		},
		targets: []target{{"b", 80, 0}, {"a", 80, 0}},
		want: []Locality{
			{SubZone: "ns/b/80", Weight: 1, Endpoints: eps("10.0.1.1", 8080)},
			{SubZone: "ns/a/80", Weight: 1, Endpoints: eps("10.0.0.1", 8080)},
		},
	}, {
		name:     "weights adding up to exactly the uint32 maximum are fine",
		services: twoServices,
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("b-1", "b", "IPv4", http, objectgen.ReadyAt("10.0.1.1")),
		},
		targets: []target{{"a", 80, math.MaxUint32 - 1}, {"b", 80, 1}},
		want: []Locality{
			{SubZone: "ns/a/80", Weight: math.MaxUint32 - 1, Endpoints: eps("10.0.0.1", 8080)},
			{SubZone: "ns/b/80", Weight: 1, Endpoints: eps("10.0.1.1", 8080)},
		},
	}, {
		name:     "weights beyond the uint32 maximum are an error",
		services: twoServices,
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("b-1", "b", "IPv4", http, objectgen.ReadyAt("10.0.1.1")),
		},
		targets: []target{{"a", 80, math.MaxUint32}, {"b", 80, 1}},
		wantErrors: []SubCondition{warning(SubConditionSpec, ReasonWeightOverflow,
			"spec.services weights add up to 4294967296, more than the allowed total of 4294967295")},
	}, {
		name:     "the same Service port twice is one locality with the summed weight",
		services: []source.Service{testService("a", servicePort("http", 80)), testService("b", servicePort("http", 80), servicePort("grpc", 90))},
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("b-1", "b", "IPv4", objectgen.Ports(objectgen.TCPPort("http", 8080), objectgen.TCPPort("grpc", 9090)), objectgen.ReadyAt("10.0.1.1")),
		},
		targets: []target{{"b", 80, 30}, {"a", 80, 10}, {"b", 80, 50}, {"b", 90, 1}, {"b", 80, 5}},
		want: []Locality{
			{SubZone: "ns/b/80", Weight: 85, Endpoints: eps("10.0.1.1", 8080)},
			{SubZone: "ns/a/80", Weight: 10, Endpoints: eps("10.0.0.1", 8080)},
			{SubZone: "ns/b/90", Weight: 1, Endpoints: eps("10.0.1.1", 9090)},
		},
		wantWarns: []SubCondition{warning(SubConditionSpec, ReasonDuplicateTarget,
			`port 80 of Service "ns/b" is named more than once in spec.services; it is one locality whose weight is the sum of its entries`)},
	}, {
		name:     "only IPv4 and IPv6 slices, IPv4 addresses first",
		services: []source.Service{testService("a", servicePort("http", 80))},
		slices: []source.EndpointSlice{
			objectgen.Slice("a-v6", "a", "IPv6", http, objectgen.ReadyAt("2001:db8::2"), objectgen.ReadyAt("::ffff:10.0.0.1"), objectgen.ReadyAt("2001:db8::10")),
			objectgen.Slice("a-fqdn", "a", "FQDN", http, objectgen.ReadyAt("pod.example.com")),
			objectgen.Slice("a-v4", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1")),
		},
		targets: []target{{"a", 80, 0}},
		want: []Locality{{SubZone: "ns/a/80", Weight: 1, Endpoints: eps(
			"10.0.0.1", 8080, "::ffff:10.0.0.1", 8080, "2001:db8::2", 8080, "2001:db8::10", 8080)}},
	}, {
		name:     "addresses that are not IPs of the slice's family are skipped with one warning per slice",
		services: []source.Service{testService("a", servicePort("http", 80))},
		slices: []source.EndpointSlice{
			objectgen.Slice("a-v4", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1"), objectgen.ReadyAt("::1"), objectgen.ReadyAt("10.0.0.010"), objectgen.ReadyAt("pod"), objectgen.WithReady(false, "bad")),
			objectgen.Slice("a-v6", "a", "IPv6", http, objectgen.ReadyAt("fe80::1%eth0"), objectgen.ReadyAt("10.0.0.2"), objectgen.ReadyAt("::1")),
		},
		targets: []target{{"a", 80, 0}},
		want:    []Locality{{SubZone: "ns/a/80", Weight: 1, Endpoints: eps("10.0.0.1", 8080, "::1", 8080)}},
		wantWarns: []SubCondition{
			warning(SubConditionService, ReasonInvalidEndpointAddress,
				`EndpointSlice "ns/a-v4" has 3 address(es) that are not valid IPv4 addresses, first "::1"; they are skipped`),
			warning(SubConditionService, ReasonInvalidEndpointAddress,
				`EndpointSlice "ns/a-v6" has 2 address(es) that are not valid IPv6 addresses, first "fe80::1%eth0"; they are skipped`),
		},
	}, {
		name:     "a named Service port matches slice ports of that name or none; only TCP ports with a number",
		services: []source.Service{testService("a", servicePort("http", 80))},
		slices: []source.EndpointSlice{objectgen.Slice("a-1", "a", "IPv4", objectgen.Ports(
			objectgen.TCPPort("http", 8080),
			objectgen.TCPPort("metrics", 9090),
			objectgen.TCPPort("", 7070),
			objectgen.TCPPort("-", 6060),
			source.EndpointPort{Name: ptr("http"), Port: ptr(int32(5050))},
			source.EndpointPort{Name: ptr("http"), Protocol: ptr("TCP")},
			source.EndpointPort{Name: ptr("http"), Port: ptr(int32(4040)), Protocol: ptr("UDP")},
			source.EndpointPort{Name: ptr("http"), Port: ptr(int32(3030)), Protocol: ptr("SCTP")},
		), objectgen.ReadyAt("10.0.0.1"))},
		targets: []target{{"a", 80, 0}},
		want: []Locality{{SubZone: "ns/a/80", Weight: 1, Endpoints: eps(
			"10.0.0.1", 6060, "10.0.0.1", 7070, "10.0.0.1", 8080)}},
	}, {
		name:     "an unnamed Service port matches every TCP slice port; out-of-range ports are skipped with a warning",
		services: []source.Service{testService("a", servicePort("", 80))},
		slices: []source.EndpointSlice{objectgen.Slice("a-1", "a", "IPv4", objectgen.Ports(
			objectgen.TCPPort("http", 8080),
			objectgen.TCPPort("metrics", 9090),
			objectgen.TCPPort("huge", 70000),
			objectgen.TCPPort("zero", 0),
			source.EndpointPort{Name: ptr("dns"), Port: ptr(int32(53)), Protocol: ptr("UDP")},
		), objectgen.ReadyAt("10.0.0.2"), objectgen.ReadyAt("10.0.0.1"))},
		targets: []target{{"a", 80, 0}},
		want: []Locality{{SubZone: "ns/a/80", Weight: 1, Endpoints: eps(
			"10.0.0.1", 8080, "10.0.0.1", 9090, "10.0.0.2", 8080, "10.0.0.2", 9090)}},
		wantWarns: []SubCondition{warning(SubConditionService, ReasonInvalidEndpointPort,
			`EndpointSlice "ns/a-1" has port 70000, outside 1-65535; it is skipped`)},
	}, {
		name:     "a repeated address:port within a target is kept once, with one spelling whatever the slice order",
		services: []source.Service{testService("a", servicePort("http", 80))},
		slices: []source.EndpointSlice{
			objectgen.Slice("a-2", "a", "IPv6", http, objectgen.ReadyAt("2001:db8::1"), objectgen.ReadyAt("2001:db8::2")),
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1"), objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("a-3", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("a-0", "a", "IPv6", http, objectgen.ReadyAt("2001:DB8:0:0::1")),
		},
		targets: []target{{"a", 80, 0}},
		want: []Locality{{SubZone: "ns/a/80", Weight: 1, Endpoints: eps(
			"10.0.0.1", 8080, "2001:DB8:0:0::1", 8080, "2001:db8::2", 8080)}},
	}, {
		name: "an address:port of an earlier target is left out of later ones",
		services: []source.Service{
			testService("a", servicePort("http", 80)),
			testService("b", servicePort("http", 80)),
			testService("c", servicePort("http", 80)),
		},
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1"), objectgen.ReadyAt("10.0.0.3")),
			objectgen.Slice("b-1", "b", "IPv4", http, objectgen.ReadyAt("10.0.0.3"), objectgen.ReadyAt("10.0.0.2"), objectgen.ReadyAt("10.0.0.1"), objectgen.ReadyAt("10.0.0.4")),
			objectgen.Slice("b-2", "b", "IPv4", objectgen.Ports(objectgen.TCPPort("http", 8081)), objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("c-1", "c", "IPv4", http, objectgen.ReadyAt("10.0.0.4"), objectgen.ReadyAt("10.0.0.1")),
		},
		targets: []target{{"a", 80, 1}, {"b", 80, 2}, {"c", 80, 3}},
		want: []Locality{
			{SubZone: "ns/a/80", Weight: 1, Endpoints: eps("10.0.0.1", 8080, "10.0.0.3", 8080)},
			{SubZone: "ns/b/80", Weight: 2, Endpoints: eps("10.0.0.1", 8081, "10.0.0.2", 8080, "10.0.0.4", 8080)},
		},
		wantWarns: []SubCondition{
			warning(SubConditionService, ReasonDuplicateEndpoint,
				`2 endpoint(s) of port 80 of Service "ns/b", first 10.0.0.1:8080, already belong to an earlier Service in spec.services and are left out of this one`),
			warning(SubConditionService, ReasonDuplicateEndpoint,
				`2 endpoint(s) of port 80 of Service "ns/c", first 10.0.0.1:8080, already belong to an earlier Service in spec.services and are left out of this one`),
		},
	}, {
		name: "an address:port of any earlier target is left out, one slice per Service",
		services: []source.Service{
			testService("a", servicePort("http", 80)),
			testService("b", servicePort("http", 80)),
			testService("c", servicePort("http", 80)),
		},
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.5"), objectgen.ReadyAt("10.0.0.3")),
			objectgen.Slice("b-1", "b", "IPv4", http, objectgen.ReadyAt("10.0.0.1"), objectgen.ReadyAt("10.0.0.6")),
			objectgen.Slice("c-1", "c", "IPv4", http, objectgen.ReadyAt("10.0.0.6"), objectgen.ReadyAt("10.0.0.1"), objectgen.ReadyAt("10.0.0.5"), objectgen.ReadyAt("10.0.0.2"), objectgen.ReadyAt("10.0.0.9")),
		},
		targets: []target{{"a", 80, 1}, {"b", 80, 2}, {"c", 80, 3}},
		want: []Locality{
			{SubZone: "ns/a/80", Weight: 1, Endpoints: eps("10.0.0.3", 8080, "10.0.0.5", 8080)},
			{SubZone: "ns/b/80", Weight: 2, Endpoints: eps("10.0.0.1", 8080, "10.0.0.6", 8080)},
			{SubZone: "ns/c/80", Weight: 3, Endpoints: eps("10.0.0.2", 8080, "10.0.0.9", 8080)},
		},
		wantWarns: []SubCondition{
			warning(SubConditionService, ReasonDuplicateEndpoint,
				`3 endpoint(s) of port 80 of Service "ns/c", first 10.0.0.1:8080, already belong to an earlier Service in spec.services and are left out of this one`),
		},
	}, {
		name:     "the same IPv6 address spelled differently in two targets is one endpoint",
		services: twoServices,
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv6", http, objectgen.ReadyAt("2001:db8::1")),
			objectgen.Slice("b-1", "b", "IPv6", http, objectgen.ReadyAt("2001:0db8::1"), objectgen.ReadyAt("2001:db8::3")),
		},
		targets: []target{{"a", 80, 1}, {"b", 80, 1}},
		want: []Locality{
			{SubZone: "ns/a/80", Weight: 1, Endpoints: eps("2001:db8::1", 8080)},
			{SubZone: "ns/b/80", Weight: 1, Endpoints: eps("2001:db8::3", 8080)},
		},
		wantWarns: []SubCondition{warning(SubConditionService, ReasonDuplicateEndpoint,
			`1 endpoint(s) of port 80 of Service "ns/b", first [2001:db8::1]:8080, already belong to an earlier Service in spec.services and are left out of this one`)},
	}, {
		name: "targets without usable endpoints contribute no locality",
		services: []source.Service{
			testService("a", servicePort("http", 80)),
			testService("b", servicePort("http", 80)),
			testService("c", servicePort("http", 80)),
		},
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.WithReady(false, "10.0.0.1")),
			objectgen.Slice("c-1", "c", "IPv4", http, objectgen.ReadyAt("10.0.2.1")),
			// Labelled for b, but in another namespace.
			{Meta: source.Meta{Namespace: "other", Name: "b-1"}, Service: "b",
				AddressType: "IPv4", Ports: http, Endpoints: source.MakeEndpoints(objectgen.ReadyAt("10.0.1.1"))},
			// In the namespace, but not labelled.
			{Meta: source.Meta{Namespace: testNamespace, Name: "b-2"},
				AddressType: "IPv4", Ports: http, Endpoints: source.MakeEndpoints(objectgen.ReadyAt("10.0.1.2"))},
		},
		targets: []target{{"a", 80, 50}, {"b", 80, 30}, {"c", 80, 20}},
		want:    []Locality{{SubZone: "ns/c/80", Weight: 20, Endpoints: eps("10.0.2.1", 8080)}},
	}, {
		name:     "no endpoints at all is no locality and no complaint",
		services: twoServices,
		targets:  []target{{"a", 80, 80}, {"b", 80, 20}},
	}, {
		name:     "endpoints only behind weight 0 give no locality and a warning",
		services: twoServices,
		slices:   []source.EndpointSlice{objectgen.Slice("b-1", "b", "IPv4", http, objectgen.ReadyAt("10.0.1.1"))},
		targets:  []target{{"a", 80, 80}, {"b", 80, 0}},
		wantWarns: []SubCondition{warning(SubConditionService, ReasonNoWeightedEndpoints,
			"no Service with a non-zero weight in spec.services has ready endpoints")},
	}}
	for _, tc := range tests {
		for _, kind := range builderKinds {
			t.Run(tc.name+"/"+kind.name, func(t *testing.T) {
				objs := &source.Objects{Services: tc.services, EndpointSlices: tc.slices}
				b := kind.new(NewIndex(objs))
				got, cond := buildFor(t, b, tc.targets)
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("localities (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.wantErrors, cond.Errors); diff != "" {
					t.Errorf("errors (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.wantWarns, cond.Warnings); diff != "" {
					t.Errorf("warnings (-want +got):\n%s", diff)
				}
				checkLocalityGuarantees(t, got)

				// A Builder that has already worked on other input (and so
				// holds scratch memory) must give the same answer.
				again, cond2 := buildFor(t, b, tc.targets)
				if diff := cmp.Diff(tc.want, again); diff != "" {
					t.Errorf("reused Builder, localities (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(cond, cond2); diff != "" {
					t.Errorf("reused Builder, condition (-first +second):\n%s", diff)
				}
			})
		}
	}
}

// checkLocalityGuarantees asserts what model.go promises about Localities,
// independently of the expected values.
func checkLocalityGuarantees(t *testing.T, locs []Locality) {
	t.Helper()
	seenZone := map[string]bool{}
	seenSocket := map[string]string{}
	weighted := false
	for _, l := range locs {
		if seenZone[l.SubZone] {
			t.Errorf("SubZone %q twice", l.SubZone)
		}
		seenZone[l.SubZone] = true
		weighted = weighted || l.Weight > 0
		if len(l.Endpoints) == 0 {
			t.Errorf("locality %q has no endpoints", l.SubZone)
		}
		for _, e := range l.Endpoints {
			if e.Port < 1 || e.Port > 65535 {
				t.Errorf("locality %q: port %d out of range", l.SubZone, e.Port)
			}
			key := fmt.Sprintf("%s|%d", e.Address, e.Port)
			if z, ok := seenSocket[key]; ok {
				t.Errorf("%s:%d in %q and %q", e.Address, e.Port, z, l.SubZone)
			}
			seenSocket[key] = l.SubZone
		}
	}
	if len(locs) > 0 && !weighted {
		t.Errorf("no locality carries a weight")
	}
}
