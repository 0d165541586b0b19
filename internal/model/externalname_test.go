package model

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/source"
)

// externalNames is the setting that allows ExternalName targets.
var externalNames = source.Settings{ExternalNameTargets: true}

// xtExternal is an ExternalName Service of the test namespace with the
// given ports.
func xtExternal(name, externalName string, ports ...source.ServicePort) source.Service {
	return source.Service{Meta: source.Meta{Namespace: xtNS, Name: name}, Type: serviceTypeExternalName, ExternalName: externalName, Ports: ports}
}

// xtWithExternals adds two ExternalName Services: "primary" (port 443,
// named "https") and "fallback" (ports 443 and 8443, the second named
// "9443" so that a target of port 9443 matches it by name).
func xtWithExternals(o *source.Objects) {
	o.Services = append(o.Services,
		xtExternal("primary", "authz.example.com", source.ServicePort{Name: "https", Port: 443, Protocol: "TCP"}),
		xtExternal("fallback", "authz-fallback.example.net.", source.ServicePort{Port: 443}, source.ServicePort{Name: "9443", Port: 8443}),
	)
}

// TestBuildExternalNameTargets checks the ExtensionCluster, warnings and
// availability of valid ExtensionServices whose targets are ExternalName
// Services.
func TestBuildExternalNameTargets(t *testing.T) {
	tests := []struct {
		name             string
		objs             func(*source.Objects)
		targets          []source.ExtensionServiceTarget
		wantDNS          []DNSLocality
		wantWarnings     []SubCondition
		wantAvailability []TargetAvailability
	}{
		{
			name:    "two Services weighted 80/20, the trailing dot kept",
			targets: []source.ExtensionServiceTarget{{Name: "primary", Port: 443, Weight: 80}, {Name: "fallback", Port: 443, Weight: 20}},
			wantDNS: []DNSLocality{
				{SubZone: "ext/primary/443", Weight: 80, Hostname: "authz.example.com", Port: 443},
				{SubZone: "ext/fallback/443", Weight: 20, Hostname: "authz-fallback.example.net.", Port: 443},
			},
			wantAvailability: []TargetAvailability{
				{Service: "primary", Port: 443, ReadyEndpoints: 1, Weight: 80},
				{Service: "fallback", Port: 443, ReadyEndpoints: 1, Weight: 20},
			},
		},
		{
			name:    "no weight set: an even split",
			targets: []source.ExtensionServiceTarget{{Name: "primary", Port: 443}, {Name: "fallback", Port: 443}},
			wantDNS: []DNSLocality{
				{SubZone: "ext/primary/443", Weight: 1, Hostname: "authz.example.com", Port: 443},
				{SubZone: "ext/fallback/443", Weight: 1, Hostname: "authz-fallback.example.net.", Port: 443},
			},
			wantAvailability: []TargetAvailability{
				{Service: "primary", Port: 443, ReadyEndpoints: 1, Weight: 1},
				{Service: "fallback", Port: 443, ReadyEndpoints: 1, Weight: 1},
			},
		},
		{
			name:    "weight 0 leaves its locality unweighted",
			targets: []source.ExtensionServiceTarget{{Name: "primary", Port: 443, Weight: 5}, {Name: "fallback", Port: 443}},
			wantDNS: []DNSLocality{
				{SubZone: "ext/primary/443", Weight: 5, Hostname: "authz.example.com", Port: 443},
				{SubZone: "ext/fallback/443", Weight: 0, Hostname: "authz-fallback.example.net.", Port: 443},
			},
			wantAvailability: []TargetAvailability{
				{Service: "primary", Port: 443, ReadyEndpoints: 1, Weight: 5},
				{Service: "fallback", Port: 443, ReadyEndpoints: 1, Weight: 0, Reason: AvailabilityZeroWeight},
			},
		},
		{
			name: "a Service port named twice is one locality with the summed weight",
			targets: []source.ExtensionServiceTarget{
				{Name: "primary", Port: 443, Weight: 30}, {Name: "fallback", Port: 443, Weight: 10},
				{Name: "primary", Port: 443, Weight: 20}, {Name: "primary", Port: 443, Weight: 1},
			},
			wantDNS: []DNSLocality{
				{SubZone: "ext/primary/443", Weight: 51, Hostname: "authz.example.com", Port: 443},
				{SubZone: "ext/fallback/443", Weight: 10, Hostname: "authz-fallback.example.net.", Port: 443},
			},
			wantWarnings: []SubCondition{warning(SubConditionSpec, ReasonDuplicateTarget,
				`port 443 of Service "ext/primary" is named more than once in spec.services; it is one locality whose weight is the sum of its entries`)},
			wantAvailability: []TargetAvailability{
				{Service: "primary", Port: 443, ReadyEndpoints: 1, Weight: 51},
				{Service: "fallback", Port: 443, ReadyEndpoints: 1, Weight: 10},
			},
		},
		{
			name: "ports matched as for any Service: by number, or by a name that is the number",
			targets: []source.ExtensionServiceTarget{
				{Name: "fallback", Port: 443, Weight: 1}, {Name: "fallback", Port: 9443, Weight: 2}, {Name: "fallback", Port: 8443, Weight: 4},
			},
			wantDNS: []DNSLocality{
				{SubZone: "ext/fallback/443", Weight: 1, Hostname: "authz-fallback.example.net.", Port: 443},
				{SubZone: "ext/fallback/8443", Weight: 6, Hostname: "authz-fallback.example.net.", Port: 8443},
			},
			wantWarnings: []SubCondition{warning(SubConditionSpec, ReasonDuplicateTarget,
				`port 8443 of Service "ext/fallback" is named more than once in spec.services; it is one locality whose weight is the sum of its entries`)},
			wantAvailability: []TargetAvailability{
				{Service: "fallback", Port: 443, ReadyEndpoints: 1, Weight: 1},
				{Service: "fallback", Port: 8443, ReadyEndpoints: 1, Weight: 6},
			},
		},
		{
			name: "two Services naming one host on different ports",
			objs: func(o *source.Objects) {
				o.Services = append(o.Services, xtExternal("alias", "authz.example.com", source.ServicePort{Port: 8443}))
			},
			targets: []source.ExtensionServiceTarget{{Name: "primary", Port: 443, Weight: 3}, {Name: "alias", Port: 8443, Weight: 1}},
			wantDNS: []DNSLocality{
				{SubZone: "ext/primary/443", Weight: 3, Hostname: "authz.example.com", Port: 443},
				{SubZone: "ext/alias/8443", Weight: 1, Hostname: "authz.example.com", Port: 8443},
			},
			wantAvailability: []TargetAvailability{
				{Service: "primary", Port: 443, ReadyEndpoints: 1, Weight: 3},
				{Service: "alias", Port: 8443, ReadyEndpoints: 1, Weight: 1},
			},
		},
		{
			// Contour treats any Service with spec.externalName as one.
			name: "a Service of another type with externalName set is an ExternalName",
			objs: func(o *source.Objects) {
				o.Services = append(o.Services, source.Service{
					Meta: source.Meta{Namespace: xtNS, Name: "leftover"}, Type: "ClusterIP", ExternalName: "10.1.2.3",
					Ports: []source.ServicePort{{Port: 9000}},
				})
			},
			targets:          []source.ExtensionServiceTarget{{Name: "leftover", Port: 9000}},
			wantDNS:          []DNSLocality{{SubZone: "ext/leftover/9000", Weight: 1, Hostname: "10.1.2.3", Port: 9000}},
			wantAvailability: []TargetAvailability{{Service: "leftover", Port: 9000, ReadyEndpoints: 1, Weight: 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := xtWorld(t)
			xtWithExternals(&objs)
			if tc.objs != nil {
				tc.objs(&objs)
			}
			ec, st := xtBuild(t, objs, externalNames, source.ExtensionServiceSpec{Services: tc.targets, Protocol: xtStr("h2c")})
			if len(st.Condition.Errors) > 0 {
				t.Fatalf("errors: %+v", st.Condition.Errors)
			}
			want := &ExtensionCluster{
				Name: "extension/ext/authz", XDSClusterName: "contour", ConnectTimeout: 2 * time.Second,
				Protocol: ProtocolH2C, LoadBalancer: LoadBalancerRoundRobin, DNS: tc.wantDNS,
			}
			if diff := cmp.Diff(want, ec); diff != "" {
				t.Errorf("ExtensionCluster (-want +got):\n%s", diff)
			}
			checkDNSGuarantees(t, ec.DNS)
			if diff := cmp.Diff(tc.wantWarnings, st.Condition.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAvailability, st.Availability); diff != "" {
				t.Errorf("availability (-want +got):\n%s", diff)
			}
		})
	}
}

// checkDNSGuarantees asserts what ExtensionCluster promises of DNS.
func checkDNSGuarantees(t *testing.T, dns []DNSLocality) {
	t.Helper()
	if len(dns) == 0 {
		t.Fatal("no DNS locality")
	}
	subZones, hosts := map[string]bool{}, map[string]bool{}
	weighted := false
	for _, l := range dns {
		if subZones[l.SubZone] {
			t.Errorf("sub-zone %q appears twice", l.SubZone)
		}
		subZones[l.SubZone] = true
		host := fmt.Sprintf("%s:%d", strings.TrimSuffix(l.Hostname, "."), l.Port)
		if hosts[host] {
			t.Errorf("host %s appears twice", host)
		}
		hosts[host] = true
		weighted = weighted || l.Weight > 0
		if err := checkExternalName(l.Hostname); err != nil {
			t.Errorf("hostname %q: %v", l.Hostname, err)
		}
		if l.Port < 1 || l.Port > 65535 {
			t.Errorf("port %d", l.Port)
		}
	}
	if !weighted {
		t.Error("no DNS locality carries a weight")
	}
}

// TestBuildExternalNameRefused checks the errors of ExternalName targets:
// without the setting (Contour's), with an invalid name, mixed with
// Services that have endpoints, and with weights too large.
func TestBuildExternalNameRefused(t *testing.T) {
	tests := []struct {
		name     string
		objs     func(*source.Objects)
		settings source.Settings
		targets  []source.ExtensionServiceTarget
		want     []SubCondition
	}{
		{
			name:    "without the setting: Contour's error, even when mixed",
			targets: []source.ExtensionServiceTarget{{Name: "grpc", Port: 9000}, {Name: "primary", Port: 443}},
			want:    []SubCondition{xtSvcErr(ReasonUnsupportedServiceType, `Service "ext/primary" is of unsupported type "ExternalName".`)},
		},
		{
			name:     "mixed with a Service that has endpoints, each Service named once",
			settings: externalNames,
			targets: []source.ExtensionServiceTarget{
				{Name: "primary", Port: 443}, {Name: "grpc", Port: 9000}, {Name: "fallback", Port: 443}, {Name: "fallback", Port: 8443},
			},
			want: []SubCondition{xtSvcErr(ReasonMixedServiceTypes,
				`spec.services mixes ExternalName Services ("ext/primary", "ext/fallback") with Services that have endpoints ("ext/grpc"); `+
					`an ExtensionService's targets must all be one or the other`)},
		},
		{
			name:     "an unresolved target comes first; mixing is not looked at then",
			settings: externalNames,
			targets:  []source.ExtensionServiceTarget{{Name: "primary", Port: 80}, {Name: "grpc", Port: 9000}},
			want: []SubCondition{xtSvcErr(ReasonServiceUnresolvedReference,
				`unresolved service "ext/primary": port "80" on service "ext/primary" not matched`)},
		},
		{
			name: "invalid names, one error per target in spec order",
			objs: func(o *source.Objects) {
				o.Services = append(o.Services,
					xtExternal("empty", "", source.ServicePort{Port: 443}),
					xtExternal("local", "localhost", source.ServicePort{Port: 443}),
					xtExternal("under", "admin.localhost.", source.ServicePort{Port: 443}),
					xtExternal("loopback", "127.0.0.2", source.ServicePort{Port: 443}),
					xtExternal("upper", "Authz.example.com", source.ServicePort{Port: 443}),
				)
			},
			settings: externalNames,
			targets: []source.ExtensionServiceTarget{
				{Name: "empty", Port: 443}, {Name: "primary", Port: 443}, {Name: "local", Port: 443},
				{Name: "under", Port: 443}, {Name: "loopback", Port: 443}, {Name: "upper", Port: 443},
			},
			want: []SubCondition{
				xtSvcErr(ReasonExternalNameNotValid, `Service "ext/empty": spec.externalName "" is empty`),
				xtSvcErr(ReasonExternalNameNotValid, `Service "ext/local": spec.externalName "localhost" names the local host, which Envoy must not be sent to`),
				xtSvcErr(ReasonExternalNameNotValid, `Service "ext/under": spec.externalName "admin.localhost." names the local host, which Envoy must not be sent to`),
				xtSvcErr(ReasonExternalNameNotValid, `Service "ext/loopback": spec.externalName "127.0.0.2" is an address of the local host, which Envoy must not be sent to`),
				xtSvcErr(ReasonExternalNameNotValid, `Service "ext/upper": spec.externalName "Authz.example.com" is not a DNS name: a label holds lower case letters, digits and '-' (not first or last)`),
			},
		},
		{
			name: "two Services naming one host and port, a trailing dot aside",
			objs: func(o *source.Objects) {
				o.Services = append(o.Services, xtExternal("alias", "authz.example.com.", source.ServicePort{Port: 443}))
			},
			settings: externalNames,
			targets:  []source.ExtensionServiceTarget{{Name: "primary", Port: 443, Weight: 3}, {Name: "fallback", Port: 443}, {Name: "alias", Port: 443, Weight: 1}},
			want: []SubCondition{xtSvcErr(ReasonDuplicateExternalName,
				`Services "ext/primary" and "ext/alias" both name host "authz.example.com" port 443; a host and port can be the target of one Service only`)},
		},
		{
			name:     "weights past Envoy's total",
			settings: externalNames,
			targets:  []source.ExtensionServiceTarget{{Name: "primary", Port: 443, Weight: math.MaxUint32}, {Name: "fallback", Port: 443, Weight: 1}},
			want: []SubCondition{xtSpecErr(ReasonWeightOverflow,
				"spec.services weights add up to 4294967296, more than the allowed total of 4294967295")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := xtWorld(t)
			xtWithExternals(&objs)
			if tc.objs != nil {
				tc.objs(&objs)
			}
			ec, st := xtBuild(t, objs, tc.settings, source.ExtensionServiceSpec{Services: tc.targets, Protocol: xtStr("h2c")})
			if ec != nil {
				t.Errorf("got ExtensionCluster %+v, want none", ec)
			}
			if diff := cmp.Diff(tc.want, st.Condition.Errors); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if st.Availability != nil {
				t.Errorf("availability %+v, want none", st.Availability)
			}
		})
	}
}

// TestCheckExternalName checks the rules of names one by one, with exact
// messages.
func TestCheckExternalName(t *testing.T) {
	label63 := strings.Repeat("a", 63)
	name253 := strings.Join([]string{label63, label63, label63, strings.Repeat("b", 61)}, ".")
	tests := []struct {
		name string
		want string // "" for valid
	}{
		{"example.com", ""},
		{"example.com.", ""},
		{"a", ""},
		{"a-1.b--2.c", ""},
		{"10.0.0.1", ""},
		{"localhost-not.example.com", ""},
		{"mylocalhost", ""},
		{name253, ""},
		{name253 + ".", ""},
		{name253 + "b", "is 254 bytes long, more than the 253 of a DNS name"},
		{label63 + "a.com", `is not a DNS name: its label "` + label63 + `a" is longer than 63 bytes`},
		{"", "is empty"},
		{".", "is not a DNS name: it has an empty label"},
		{"example..com", "is not a DNS name: it has an empty label"},
		{"example.com..", "is not a DNS name: it has an empty label"},
		{".example.com", "is not a DNS name: it has an empty label"},
		{"-a.com", "is not a DNS name: a label holds lower case letters, digits and '-' (not first or last)"},
		{"a-.com", "is not a DNS name: a label holds lower case letters, digits and '-' (not first or last)"},
		{"a_b.com", "is not a DNS name: a label holds lower case letters, digits and '-' (not first or last)"},
		{"*.example.com", "is not a DNS name: a label holds lower case letters, digits and '-' (not first or last)"},
		{"::1", "is not a DNS name: a label holds lower case letters, digits and '-' (not first or last)"},
		{"example.com:443", "is not a DNS name: a label holds lower case letters, digits and '-' (not first or last)"},
		{"localhost", "names the local host, which Envoy must not be sent to"},
		{"localhost.", "names the local host, which Envoy must not be sent to"},
		{"a.b.localhost", "names the local host, which Envoy must not be sent to"},
		{"127.0.0.1", "is an address of the local host, which Envoy must not be sent to"},
		{"0.0.0.0", "is an address of the local host, which Envoy must not be sent to"},
	}
	for _, tc := range tests {
		got := ""
		if err := checkExternalName(tc.name); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("checkExternalName(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}
