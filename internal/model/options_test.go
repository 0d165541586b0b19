package model

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/source"
)

// TestAnnotationKeys pins the derivation of annotation keys from the API's
// field names: a renamed json tag would silently rename an annotation
// users have written into their manifests.
func TestAnnotationKeys(t *testing.T) {
	keys := AnnotationKeys()
	for _, want := range []string{
		"tributary.dev/health-check-service-name",
		"tributary.dev/health-check-interval",
		"tributary.dev/outlier-detection-failure-percentage-threshold",
		"tributary.dev/tls-sni",
		"tributary.dev/tls-cipher-suites",
		"tributary.dev/http2-keepalive-interval",
		"tributary.dev/tcp-keepalive-probes",
		"tributary.dev/connection-limits-max-requests-per-connection",
		"tributary.dev/slow-start-min-weight-percent",
		"tributary.dev/client-side-weighted-round-robin-enable-oob-load-report",
	} {
		if _, ok := annotationFields[want]; !ok {
			t.Errorf("annotation %q is not known; keys: %q", want, keys)
		}
	}
	if len(keys) != 37 {
		t.Errorf("%d annotation keys, want 37 (one per field of source.ExtensionOptions)", len(keys))
	}
	for _, k := range keys {
		// Kubernetes refuses an annotation name (after the prefix) longer
		// than 63 characters.
		if name := k[len(source.AnnotationPrefix):]; len(name) > 63 {
			t.Errorf("annotation %q: name %d characters long, Kubernetes allows 63", k, len(name))
		}
	}
}

func TestParseAnnotations(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        source.ExtensionOptions
		wantErrors  []SubCondition
	}{{
		name:        "other prefixes are not ours",
		annotations: map[string]string{"projectcontour.io/upstream-protocol.h2": "9000", "tributary.dev": "x"},
	}, {
		name: "each type parses",
		annotations: map[string]string{
			"tributary.dev/health-check-service-name":                               "auth",
			"tributary.dev/health-check-unhealthy-threshold":                        " 4 ",
			"tributary.dev/slow-start-aggression":                                   "1.5",
			"tributary.dev/client-side-weighted-round-robin-enable-oob-load-report": "true",
			"tributary.dev/tls-cipher-suites":                                       " ECDHE-RSA-AES128-GCM-SHA256 ,, ECDHE-RSA-CHACHA20-POLY1305",
		},
		want: source.ExtensionOptions{
			HealthCheck:                  &source.HealthCheck{ServiceName: ptr("auth"), UnhealthyThreshold: ptr(uint32(4))},
			SlowStart:                    &source.SlowStart{Aggression: ptr(1.5)},
			ClientSideWeightedRoundRobin: &source.ClientSideWeightedRoundRobin{EnableOOBLoadReport: ptr(true)},
			TLS:                          &source.ExtensionTLS{CipherSuites: []string{"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-CHACHA20-POLY1305"}},
		},
	}, {
		name: "unknown keys and bad values are errors, in key order; the rest still count",
		annotations: map[string]string{
			"tributary.dev/tcp-keepalive-probes":                                    "-1",
			"tributary.dev/health-check-intervl":                                    "5s",
			"tributary.dev/slow-start-aggression":                                   "fast",
			"tributary.dev/tcp-keepalive-time":                                      "30s",
			"tributary.dev/client-side-weighted-round-robin-enable-oob-load-report": "yes please",
		},
		want: source.ExtensionOptions{
			TCPKeepalive:                 &source.TCPKeepalive{Time: ptr("30s")},
			SlowStart:                    &source.SlowStart{},
			ClientSideWeightedRoundRobin: &source.ClientSideWeightedRoundRobin{},
		},
		wantErrors: []SubCondition{
			warning(SubConditionSpec, ReasonAnnotationNotValid, `annotation "tributary.dev/client-side-weighted-round-robin-enable-oob-load-report": "yes please" is not "true" or "false"`),
			warning(SubConditionSpec, ReasonAnnotationNotValid, `annotation "tributary.dev/health-check-intervl" is unknown: see docs/translation.md for the tributary.dev/ annotations`),
			warning(SubConditionSpec, ReasonAnnotationNotValid, `annotation "tributary.dev/slow-start-aggression": "fast" is not a number`),
			warning(SubConditionSpec, ReasonAnnotationNotValid, `annotation "tributary.dev/tcp-keepalive-probes": "-1" is not a whole number from 0 to 4294967295`),
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cond Condition
			got := parseAnnotations(tc.annotations, &cond)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErrors, cond.Errors); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolveOptions holds the precedence: per group, spec.options, then
// annotations, then the settings' defaults, each group whole; and the
// name an error gives a field follows where the group came from.
func TestResolveOptions(t *testing.T) {
	defaults := &source.ExtensionOptions{
		HealthCheck:    &source.HealthCheck{Interval: ptr("10s"), Timeout: ptr("2s")},
		TCPKeepalive:   &source.TCPKeepalive{Probes: ptr(uint32(3))},
		HTTP2Keepalive: &source.HTTP2Keepalive{Interval: ptr("30s")},
	}
	b := NewBuilder(NewIndex(&source.Objects{}), source.Settings{ExtensionDefaults: defaults})
	es := &source.ExtensionService{
		Meta: source.Meta{Namespace: "ns", Name: "ext", Annotations: map[string]string{
			"tributary.dev/health-check-interval": "3s",
			"tributary.dev/tcp-keepalive-time":    "60",
		}},
		Spec: source.ExtensionServiceSpec{Options: &source.ExtensionOptions{
			TCPKeepalive: &source.TCPKeepalive{Interval: ptr("5")},
		}},
	}
	var cond Condition
	got := b.resolveOptions(es, &cond)
	want := source.ExtensionOptions{
		HealthCheck:    &source.HealthCheck{Interval: ptr("3s")}, // not the default's timeout
		TCPKeepalive:   &source.TCPKeepalive{Interval: ptr("5")}, // neither the annotation's time nor the default's probes
		HTTP2Keepalive: &source.HTTP2Keepalive{Interval: ptr("30s")},
	}
	if diff := cmp.Diff(want, got.ExtensionOptions); diff != "" {
		t.Errorf("options in force (-want +got):\n%s", diff)
	}
	if len(cond.Errors) > 0 {
		t.Errorf("errors: %v", cond.Errors)
	}
	for _, tc := range []struct{ group, field, want string }{
		{"healthCheck", "interval", `"tributary.dev/health-check-interval"`},
		{"tcpKeepalive", "interval", "spec.options.tcpKeepalive.interval"},
		{"http2Keepalive", "timeout", "setting extensionDefaults.http2Keepalive.timeout"},
	} {
		if got := got.field(tc.group, tc.field); got != tc.want {
			t.Errorf("field(%s, %s) = %s, want %s", tc.group, tc.field, got, tc.want)
		}
	}
}

// TestResolveNoOptionsIsFree holds the usual case, an ExtensionService
// with no option under settings without defaults, to no allocation.
func TestResolveNoOptionsIsFree(t *testing.T) {
	b := NewBuilder(NewIndex(&source.Objects{}), source.Settings{})
	es := &source.ExtensionService{Meta: source.Meta{Namespace: "ns", Name: "ext"}}
	var cond Condition
	if allocs := testing.AllocsPerRun(10, func() { b.resolveOptions(es, &cond) }); allocs != 0 {
		t.Errorf("resolveOptions allocates %v times for an ExtensionService without options", allocs)
	}
}

// TestBuildWithoutOptionsAllocatesAsBefore holds what the options add to
// the translation of an ExtensionService that sets none: nothing but the
// status's availability. Every option validator must return at once,
// allocating nothing, when its group is absent.
func TestBuildWithoutOptionsAllocatesAsBefore(t *testing.T) {
	objs := xtWorld(t)
	objs.ExtensionServices = append(objs.ExtensionServices, source.ExtensionService{
		Meta: source.Meta{Namespace: xtNS, Name: "authz"},
		Spec: source.ExtensionServiceSpec{Services: xtTarget, Protocol: ptr("h2c")},
	})
	b := NewBuilder(NewIndex(&objs), source.Settings{})
	es := &objs.ExtensionServices[len(objs.ExtensionServices)-1]
	buildOf(b, es, nil) // warm the scratch
	// Six allocations before the options existed (measured at bd63d82),
	// and one for the status's availability, made seven; since the
	// ExtensionCluster, the resolved targets and the port names come out of
	// the Builder's memory and the SubZones out of one string, three are
	// left: the cluster name, the availability and the SubZones.
	if allocs := testing.AllocsPerRun(20, func() { buildOf(b, es, nil) }); allocs > 3 {
		t.Errorf("Build allocates %v times for an ExtensionService without options, want at most 3", allocs)
	}
}
