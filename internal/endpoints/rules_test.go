package endpoints

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
)

// TestRules pins Reference, and with it both Collectors, to the contract's
// endpoint rules on hand-picked cases; FuzzCollect then holds the
// Collectors to Reference everywhere else.
func TestRules(t *testing.T) {
	http := objectgen.Ports(objectgen.TCPPort("http", 8080))
	tests := []struct {
		name     string
		slices   []source.EndpointSlice
		targets  []Target
		want     [][]Endpoint
		warnings []Warning
	}{{
		name: "ready unless marked not ready",
		slices: []source.EndpointSlice{objectgen.Slice("a-1", "a", "IPv4", http,
			objectgen.ReadyAt("10.0.0.3"),
			objectgen.WithReady(false, "10.0.0.4"),
			objectgen.WithReady(true, "10.0.0.2"),
			objectgen.ReadyAt("10.0.0.5"),
			objectgen.WithReady(false, "10.0.0.6"),
		)},
		targets: []Target{{Service: "a", PortName: "http", Port: 80}},
		want:    [][]Endpoint{{{source.MakeAddress("10.0.0.2"), 8080}, {source.MakeAddress("10.0.0.3"), 8080}, {source.MakeAddress("10.0.0.5"), 8080}}},
	}, {
		name: "TCP ports with a number only; a named Service port takes its name or none, an unnamed one every port",
		slices: []source.EndpointSlice{objectgen.Slice("a-1", "a", "IPv4", objectgen.Ports(
			objectgen.TCPPort("http", 8080), objectgen.TCPPort("grpc", 9090), objectgen.TCPPort("", 7070), objectgen.TCPPort("-", 6060), objectgen.TCPPort("http", 70000),
			source.EndpointPort{Name: ptr("http"), Port: ptr(int32(5050))},
			source.EndpointPort{Name: ptr("http"), Protocol: ptr("TCP")},
			source.EndpointPort{Name: ptr("http"), Port: ptr(int32(4040)), Protocol: ptr("UDP")},
		), objectgen.ReadyAt("10.0.0.1"))},
		targets: []Target{{Service: "a", PortName: "http", Port: 80}, {Service: "a", Port: 90}},
		want: [][]Endpoint{
			{{source.MakeAddress("10.0.0.1"), 6060}, {source.MakeAddress("10.0.0.1"), 7070}, {source.MakeAddress("10.0.0.1"), 8080}},
			{{source.MakeAddress("10.0.0.1"), 9090}},
		},
		warnings: []Warning{
			{ReasonInvalidEndpointPort, `EndpointSlice "ns/a-1" has port 70000, outside 1-65535; it is skipped`},
			{ReasonInvalidEndpointPort, `EndpointSlice "ns/a-1" has port 70000, outside 1-65535; it is skipped`},
			{ReasonDuplicateEndpoint, `3 endpoint(s) of port 90 of Service "ns/a", first 10.0.0.1:6060, already belong to an earlier Service in spec.services and are left out of this one`},
		},
	}, {
		name: "IP slices only, addresses of the slice's family without a zone; IPv4 sorts first",
		slices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "FQDN", http, objectgen.ReadyAt("pod.example.com")),
			objectgen.Slice("a-2", "a", "IPv6", http, objectgen.ReadyAt("fd00::2"), objectgen.ReadyAt("::ffff:10.0.0.1"), objectgen.ReadyAt("fe80::1%eth0"), objectgen.ReadyAt("10.0.0.9")),
			objectgen.Slice("a-3", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1"), objectgen.ReadyAt("::1"), objectgen.ReadyAt("010.0.0.1")),
		},
		targets: []Target{{Service: "a", PortName: "http", Port: 80}},
		want:    [][]Endpoint{{{source.MakeAddress("10.0.0.1"), 8080}, {source.MakeAddress("::ffff:10.0.0.1"), 8080}, {source.MakeAddress("fd00::2"), 8080}}},
		warnings: []Warning{
			{ReasonInvalidEndpointAddress, `EndpointSlice "ns/a-2" has 2 address(es) that are not valid IPv6 addresses, first "fe80::1%eth0"; they are skipped`},
			{ReasonInvalidEndpointAddress, `EndpointSlice "ns/a-3" has 2 address(es) that are not valid IPv4 addresses, first "::1"; they are skipped`},
		},
	}, {
		name: "an address:port once per target, spelled as first met in slice name order, and in the earliest target only",
		slices: []source.EndpointSlice{
			objectgen.Slice("a-2", "a", "IPv6", http, objectgen.ReadyAt("2001:db8::1")),
			objectgen.Slice("a-1", "a", "IPv6", http, objectgen.ReadyAt("2001:DB8::1"), objectgen.ReadyAt("2001:db8:0::1"), objectgen.ReadyAt("2001:db8::3")),
			objectgen.Slice("b-1", "b", "IPv6", http, objectgen.ReadyAt("2001:db8::3"), objectgen.ReadyAt("2001:db8::1"), objectgen.ReadyAt("2001:db8::4")),
		},
		targets: []Target{{Service: "a", PortName: "http", Port: 80}, {Service: "b", PortName: "http", Port: 80}},
		want:    [][]Endpoint{{{source.MakeAddress("2001:DB8::1"), 8080}, {source.MakeAddress("2001:db8::3"), 8080}}, {{source.MakeAddress("2001:db8::4"), 8080}}},
		warnings: []Warning{{ReasonDuplicateEndpoint,
			`2 endpoint(s) of port 80 of Service "ns/b", first [2001:db8::1]:8080, already belong to an earlier Service in spec.services and are left out of this one`}},
	}, {
		name:    "no slices, no endpoints, no warnings",
		targets: []Target{{Service: "a", PortName: "http", Port: 80}},
		want:    [][]Endpoint{nil},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := newTestIndex(tc.slices)
			runs, warnings := Reference(x, testNamespace, tc.targets)
			if diff := cmp.Diff(tc.want, runs); diff != "" {
				t.Errorf("Reference endpoints (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.warnings, warnings); diff != "" {
				t.Errorf("Reference warnings (-want +got):\n%s", diff)
			}
			for _, kind := range collectorKinds {
				runs, warnings := kind.new(x).Collect(testNamespace, tc.targets)
				if diff := cmp.Diff(tc.want, runs, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s Collector endpoints (-want +got):\n%s", kind.name, diff)
				}
				if diff := cmp.Diff(tc.warnings, warnings, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s Collector warnings (-want +got):\n%s", kind.name, diff)
				}
			}
		})
	}
}
