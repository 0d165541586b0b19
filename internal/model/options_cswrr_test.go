package model

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/source"
)

// TestClientSideWeightedRoundRobin holds the tuning to the strategy: a
// tuning exactly under strategy ClientSideWeightedRoundRobin, the group's
// values wherever they come from, and under another strategy a warning for
// a group the ExtensionService sets itself, silence for a default.
func TestClientSideWeightedRoundRobin(t *testing.T) {
	full := &source.ClientSideWeightedRoundRobin{
		EnableOOBLoadReport:     ptr(true),
		OOBReportingPeriod:      ptr("5s"),
		BlackoutPeriod:          ptr("0s"),
		WeightExpirationPeriod:  ptr("1m30s"),
		WeightUpdatePeriod:      ptr("100ms"),
		ErrorUtilizationPenalty: ptr(0.5),
	}
	fullTuning := &ClientSideWeightedRoundRobin{
		EnableOOBLoadReport:     true,
		OOBReportingPeriod:      ptr(5 * time.Second),
		BlackoutPeriod:          ptr(time.Duration(0)),
		WeightExpirationPeriod:  ptr(90 * time.Second),
		WeightUpdatePeriod:      ptr(100 * time.Millisecond),
		ErrorUtilizationPenalty: ptr(0.5),
	}
	tests := []struct {
		name        string
		lb          LoadBalancer
		spec        *source.ExtensionOptions
		annotations map[string]string
		defaults    *source.ExtensionOptions
		want        *ClientSideWeightedRoundRobin
		wantErrors  []SubCondition
	}{{
		name: "the strategy without a group: every field at the policy's default",
		lb:   LoadBalancerClientSideWeightedRoundRobin,
		want: &ClientSideWeightedRoundRobin{},
	}, {
		name: "another strategy without a group: none",
		lb:   LoadBalancerRoundRobin,
	}, {
		name: "spec.options, every field",
		lb:   LoadBalancerClientSideWeightedRoundRobin,
		spec: &source.ExtensionOptions{ClientSideWeightedRoundRobin: full},
		want: fullTuning,
	}, {
		name: "annotations, every field",
		lb:   LoadBalancerClientSideWeightedRoundRobin,
		annotations: map[string]string{
			"tributary.dev/client-side-weighted-round-robin-enable-oob-load-report":    "true",
			"tributary.dev/client-side-weighted-round-robin-oob-reporting-period":      "5s",
			"tributary.dev/client-side-weighted-round-robin-blackout-period":           "0s",
			"tributary.dev/client-side-weighted-round-robin-weight-expiration-period":  "1m30s",
			"tributary.dev/client-side-weighted-round-robin-weight-update-period":      "100ms",
			"tributary.dev/client-side-weighted-round-robin-error-utilization-penalty": "0.5",
		},
		want: fullTuning,
	}, {
		name:     "settings defaults apply under the strategy",
		lb:       LoadBalancerClientSideWeightedRoundRobin,
		defaults: &source.ExtensionOptions{ClientSideWeightedRoundRobin: full},
		want:     fullTuning,
	}, {
		name: "enableOobLoadReport false is the default",
		lb:   LoadBalancerClientSideWeightedRoundRobin,
		spec: &source.ExtensionOptions{ClientSideWeightedRoundRobin: &source.ClientSideWeightedRoundRobin{
			EnableOOBLoadReport: ptr(false), BlackoutPeriod: ptr("2s"), ErrorUtilizationPenalty: ptr(0.0),
		}},
		want: &ClientSideWeightedRoundRobin{BlackoutPeriod: ptr(2 * time.Second), ErrorUtilizationPenalty: ptr(0.0)},
	}, {
		name: "spec.options under another strategy: an error, no tuning",
		lb:   LoadBalancerLeastRequest,
		spec: &source.ExtensionOptions{ClientSideWeightedRoundRobin: full},
		wantErrors: []SubCondition{xtErr(SubConditionSpec, ReasonOptionNotValid,
			`spec.options.clientSideWeightedRoundRobin set, but spec.loadBalancerPolicy.strategy is not "ClientSideWeightedRoundRobin": there is nothing to tune`)},
	}, {
		name:        "annotations under another strategy: an error naming them",
		lb:          LoadBalancerRoundRobin,
		annotations: map[string]string{"tributary.dev/client-side-weighted-round-robin-blackout-period": "1s"},
		wantErrors: []SubCondition{xtErr(SubConditionSpec, ReasonOptionNotValid,
			`the "tributary.dev/client-side-weighted-round-robin-*" annotations set, but spec.loadBalancerPolicy.strategy is not "ClientSideWeightedRoundRobin": there is nothing to tune`)},
	}, {
		name:     "settings defaults under another strategy: silently not applied",
		lb:       LoadBalancerRandom,
		defaults: &source.ExtensionOptions{ClientSideWeightedRoundRobin: full},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder(NewIndex(&source.Objects{}), source.Settings{ExtensionDefaults: tc.defaults})
			es := &source.ExtensionService{
				Meta: source.Meta{Namespace: "ns", Name: "ext", Annotations: tc.annotations},
				Spec: source.ExtensionServiceSpec{Options: tc.spec},
			}
			var cond Condition
			got := b.clientSideWeightedRoundRobin(b.resolveOptions(es, &cond), tc.lb, &cond)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("tuning (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErrors, cond.Errors); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if len(cond.Warnings) > 0 {
				t.Errorf("warnings: %v", cond.Warnings)
			}
		})
	}
}

// TestClientSideWeightedRoundRobinRefuses holds every refusal to its
// message, one per bad field, naming the field as its user wrote it; the
// valid fields of the group still count.
func TestClientSideWeightedRoundRobinRefuses(t *testing.T) {
	tests := []struct {
		name  string
		group source.ClientSideWeightedRoundRobin
		want  []string
	}{{
		name: "not durations",
		group: source.ClientSideWeightedRoundRobin{
			OOBReportingPeriod: ptr("10"), BlackoutPeriod: ptr("soon"), WeightExpirationPeriod: ptr("infinity"), WeightUpdatePeriod: ptr(""),
		},
		want: []string{
			`spec.options.clientSideWeightedRoundRobin.oobReportingPeriod "10" is not a duration such as "5s" or "500ms"`,
			`spec.options.clientSideWeightedRoundRobin.blackoutPeriod "soon" is not a duration such as "5s" or "500ms"`,
			`spec.options.clientSideWeightedRoundRobin.weightExpirationPeriod "infinity" is not a duration such as "5s" or "500ms"`,
			`spec.options.clientSideWeightedRoundRobin.weightUpdatePeriod "" is not a duration such as "5s" or "500ms"`,
		},
	}, {
		name: "zero and negative",
		group: source.ClientSideWeightedRoundRobin{
			OOBReportingPeriod: ptr("0s"), BlackoutPeriod: ptr("-1s"), WeightExpirationPeriod: ptr("-3m"), WeightUpdatePeriod: ptr("0"),
			ErrorUtilizationPenalty: ptr(-0.1),
		},
		want: []string{
			`spec.options.clientSideWeightedRoundRobin.oobReportingPeriod "0s" must be positive`,
			`spec.options.clientSideWeightedRoundRobin.blackoutPeriod "-1s" must not be negative`,
			`spec.options.clientSideWeightedRoundRobin.weightExpirationPeriod "-3m" must be positive`,
			`spec.options.clientSideWeightedRoundRobin.weightUpdatePeriod "0" must be positive`,
			`spec.options.clientSideWeightedRoundRobin.errorUtilizationPenalty "-0.1" must be a number of at least 0`,
		},
	}, {
		name: "too long, too short and too large",
		group: source.ClientSideWeightedRoundRobin{
			OOBReportingPeriod: ptr("24h0m1s"), BlackoutPeriod: ptr("25h"), WeightExpirationPeriod: ptr("24h"), WeightUpdatePeriod: ptr("99ms"),
			ErrorUtilizationPenalty: ptr(1e39),
		},
		want: []string{
			`spec.options.clientSideWeightedRoundRobin.oobReportingPeriod "24h0m1s" must be at most 24h`,
			`spec.options.clientSideWeightedRoundRobin.blackoutPeriod "25h" must be at most 24h`,
			`spec.options.clientSideWeightedRoundRobin.weightUpdatePeriod "99ms" must be at least 100ms: clients raise a shorter period to that`,
			`spec.options.clientSideWeightedRoundRobin.errorUtilizationPenalty "1e+39" must be at most 3.4e+38, the largest 32-bit float`,
		},
	}, {
		name:  "not a number",
		group: source.ClientSideWeightedRoundRobin{ErrorUtilizationPenalty: ptr(math.NaN())},
		want: []string{
			`spec.options.clientSideWeightedRoundRobin.errorUtilizationPenalty "NaN" must be a number of at least 0`,
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder(NewIndex(&source.Objects{}), source.Settings{})
			es := &source.ExtensionService{
				Meta: source.Meta{Namespace: "ns", Name: "ext"},
				Spec: source.ExtensionServiceSpec{Options: &source.ExtensionOptions{ClientSideWeightedRoundRobin: &tc.group}},
			}
			var cond Condition
			b.clientSideWeightedRoundRobin(b.resolveOptions(es, &cond), LoadBalancerClientSideWeightedRoundRobin, &cond)
			var got []string
			for _, e := range cond.Errors {
				if e.Type != SubConditionSpec || e.Reason != ReasonOptionNotValid {
					t.Errorf("error %+v: want a %s %s", e, SubConditionSpec, ReasonOptionNotValid)
				}
				got = append(got, e.Message)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClientSideWeightedRoundRobinChecksDefaults: a default is validated as
// if it applied, and its errors name the setting; so is a group set under
// another strategy, in an annotation's name.
func TestClientSideWeightedRoundRobinChecksDefaults(t *testing.T) {
	got := CheckExtensionDefaults(source.Settings{ExtensionDefaults: &source.ExtensionOptions{
		ClientSideWeightedRoundRobin: &source.ClientSideWeightedRoundRobin{WeightUpdatePeriod: ptr("50ms")},
	}})
	want := []string{`setting extensionDefaults.clientSideWeightedRoundRobin.weightUpdatePeriod "50ms" must be at least 100ms: clients raise a shorter period to that`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CheckExtensionDefaults (-want +got):\n%s", diff)
	}

	b := NewBuilder(NewIndex(&source.Objects{}), source.Settings{})
	es := &source.ExtensionService{Meta: source.Meta{Namespace: "ns", Name: "ext", Annotations: map[string]string{
		"tributary.dev/client-side-weighted-round-robin-blackout-period": "-5s",
	}}}
	var cond Condition
	if got := b.clientSideWeightedRoundRobin(b.resolveOptions(es, &cond), LoadBalancerRoundRobin, &cond); got != nil {
		t.Errorf("tuning %+v under round robin", got)
	}
	wantErrors := []SubCondition{xtErr(SubConditionSpec, ReasonOptionNotValid,
		`"tributary.dev/client-side-weighted-round-robin-blackout-period" "-5s" must not be negative`),
		xtErr(SubConditionSpec, ReasonOptionNotValid,
			`the "tributary.dev/client-side-weighted-round-robin-*" annotations set, but spec.loadBalancerPolicy.strategy is not "ClientSideWeightedRoundRobin": there is nothing to tune`)}
	if diff := cmp.Diff(wantErrors, cond.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
