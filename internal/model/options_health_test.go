package model

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/source"
)

// healthTestBuild builds the ExtensionService "ext/authz" of xtWorld with
// spec.options, annotations and the protocol given, under settings with
// defaults, and returns what Build gives and the messages of its errors.
// Every error must be a SubConditionSpec of reason OptionNotValid.
func healthTestBuild(t *testing.T, options *source.ExtensionOptions, annotations map[string]string, defaults *source.ExtensionOptions, protocol *string) (*ExtensionCluster, []string) {
	t.Helper()
	objs := xtWorld(t)
	objs.ExtensionServices = append(objs.ExtensionServices, source.ExtensionService{
		Meta: source.Meta{Namespace: xtNS, Name: "authz", Generation: 7, Annotations: annotations},
		Spec: source.ExtensionServiceSpec{Services: xtTarget, Protocol: protocol, Options: options},
	})
	b := NewBuilder(NewIndex(&objs), source.Settings{ExtensionDefaults: defaults})
	ec, st := buildOf(b, &objs.ExtensionServices[len(objs.ExtensionServices)-1], nil)
	var messages []string
	for _, e := range st.Condition.Errors {
		if e.Type != SubConditionSpec || e.Reason != ReasonOptionNotValid {
			t.Errorf("error %+v: want type %s, reason %s", e, SubConditionSpec, ReasonOptionNotValid)
		}
		messages = append(messages, e.Message)
	}
	if len(messages) > 0 && ec != nil {
		t.Errorf("an ExtensionService with errors still yields a Cluster")
	}
	return ec, messages
}

// healthTestDefaultCheck is the healthCheck group with nothing set.
var healthTestDefaultCheck = &HealthCheck{Interval: 5 * time.Second, Timeout: time.Second, UnhealthyThreshold: 3, HealthyThreshold: 1}

func TestHealthCheckOption(t *testing.T) {
	h2c, http11 := ptr("h2c"), ptr("http/1.1")
	tests := []struct {
		name        string
		options     *source.HealthCheck
		annotations map[string]string
		defaults    *source.HealthCheck
		protocol    *string
		want        *HealthCheck
		wantErrors  []string
	}{{
		name: "no group, no health check",
	}, {
		name:    "an empty group is a health check with every default",
		options: &source.HealthCheck{},
		want:    healthTestDefaultCheck,
	}, {
		name: "every field from spec.options, h2c",
		options: &source.HealthCheck{
			ServiceName: ptr("envoy.service.auth.v3.Authorization"), Authority: ptr("authz.example"),
			Interval: ptr("1m30s"), Timeout: ptr("250ms"), UnhealthyThreshold: ptr(uint32(5)), HealthyThreshold: ptr(uint32(2)), Port: ptr(uint32(8081)),
		},
		protocol: h2c,
		want: &HealthCheck{
			ServiceName: "envoy.service.auth.v3.Authorization", Authority: "authz.example",
			Interval: 90 * time.Second, Timeout: 250 * time.Millisecond, UnhealthyThreshold: 5, HealthyThreshold: 2, Port: 8081,
		},
	}, {
		name: "every field from annotations; the largest values",
		annotations: map[string]string{
			"tributary.dev/health-check-service-name":        strings.Repeat("s", 255),
			"tributary.dev/health-check-authority":           "authz.ns.svc:9000",
			"tributary.dev/health-check-interval":            "24h",
			"tributary.dev/health-check-timeout":             " 2s ",
			"tributary.dev/health-check-unhealthy-threshold": "4294967295",
			"tributary.dev/health-check-healthy-threshold":   "1",
			"tributary.dev/health-check-port":                "65535",
		},
		want: &HealthCheck{
			ServiceName: strings.Repeat("s", 255), Authority: "authz.ns.svc:9000",
			Interval: 24 * time.Hour, Timeout: 2 * time.Second, UnhealthyThreshold: 4294967295, HealthyThreshold: 1, Port: 65535,
		},
	}, {
		name:        "spec.options replaces annotations and defaults whole: no field of theirs is mixed in",
		options:     &source.HealthCheck{Interval: ptr("2s")},
		annotations: map[string]string{"tributary.dev/health-check-interval": "3s", "tributary.dev/health-check-timeout": "3s"},
		defaults:    &source.HealthCheck{Interval: ptr("4s"), Port: ptr(uint32(4))},
		want:        &HealthCheck{Interval: 2 * time.Second, Timeout: time.Second, UnhealthyThreshold: 3, HealthyThreshold: 1},
	}, {
		name:        "annotations replace defaults whole",
		annotations: map[string]string{"tributary.dev/health-check-timeout": "3s"},
		defaults:    &source.HealthCheck{Interval: ptr("4s"), Port: ptr(uint32(4))},
		want:        &HealthCheck{Interval: 5 * time.Second, Timeout: 3 * time.Second, UnhealthyThreshold: 3, HealthyThreshold: 1},
	}, {
		name:     "defaults apply to an ExtensionService without a group",
		defaults: &source.HealthCheck{Interval: ptr("4s"), Port: ptr(uint32(4))},
		want:     &HealthCheck{Interval: 4 * time.Second, Timeout: time.Second, UnhealthyThreshold: 3, HealthyThreshold: 1, Port: 4},
	}, {
		name:     "a default does not apply to an http/1.1 extension, silently",
		defaults: &source.HealthCheck{},
		protocol: http11,
	}, {
		name:       "spec.options on an http/1.1 extension is an error",
		options:    &source.HealthCheck{},
		protocol:   http11,
		wantErrors: []string{`spec.options.healthCheck: gRPC health checks need HTTP/2, and spec.protocol is "http/1.1"`},
	}, {
		name:        "annotations on an http/1.1 extension are an error, even over a default",
		annotations: map[string]string{"tributary.dev/health-check-port": "9"},
		defaults:    &source.HealthCheck{},
		protocol:    http11,
		wantErrors:  []string{`the "tributary.dev/health-check-*" annotations: gRPC health checks need HTTP/2, and spec.protocol is "http/1.1"`},
	}, {
		name: "every field wrong at once: one error each, in field order",
		options: &source.HealthCheck{
			ServiceName: ptr("auth\x00"), Authority: ptr("authz example"),
			Interval: ptr("0s"), Timeout: ptr("soon"), UnhealthyThreshold: ptr(uint32(0)), HealthyThreshold: ptr(uint32(0)), Port: ptr(uint32(0)),
		},
		wantErrors: []string{
			`spec.options.healthCheck.interval "0s" must be positive`,
			`spec.options.healthCheck.timeout "soon" is not a duration such as "5s" or "500ms"`,
			`spec.options.healthCheck.unhealthyThreshold "0" must be at least 1`,
			`spec.options.healthCheck.healthyThreshold "0" must be at least 1`,
			`spec.options.healthCheck.serviceName "auth\x00" contains a control character`,
			`spec.options.healthCheck.authority "authz example" contains whitespace`,
			`spec.options.healthCheck.port "0" must be from 1 to 65535`,
		},
	}, {
		name: "out of range the other way, named by annotation",
		annotations: map[string]string{
			"tributary.dev/health-check-service-name": "\xff",
			"tributary.dev/health-check-authority":    strings.Repeat("a", 256),
			"tributary.dev/health-check-interval":     "-5s",
			"tributary.dev/health-check-timeout":      "24h0m0.001s",
			"tributary.dev/health-check-port":         "65536",
		},
		wantErrors: []string{
			`"tributary.dev/health-check-interval" "-5s" must be positive`,
			`"tributary.dev/health-check-timeout" "24h0m0.001s" must be at most 24h`,
			`"tributary.dev/health-check-service-name" "\xff" is not valid UTF-8`,
			`"tributary.dev/health-check-authority" "` + strings.Repeat("a", source.MaxQuotedBytes) + `"... is longer than 255 bytes`,
			`"tributary.dev/health-check-port" "65536" must be from 1 to 65535`,
		},
	}, {
		name:       "an authority with a line break is a control character, not whitespace",
		options:    &source.HealthCheck{Authority: ptr("a\nb")},
		wantErrors: []string{`spec.options.healthCheck.authority "a\nb" contains a control character`},
	}, {
		name:       "a default with an error is reported on the ExtensionService it applies to",
		defaults:   &source.HealthCheck{Interval: ptr("1d")},
		wantErrors: []string{`setting extensionDefaults.healthCheck.interval "1d" is not a duration such as "5s" or "500ms"`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var options, defaults *source.ExtensionOptions
			if tc.options != nil {
				options = &source.ExtensionOptions{HealthCheck: tc.options}
			}
			if tc.defaults != nil {
				defaults = &source.ExtensionOptions{HealthCheck: tc.defaults}
			}
			ec, errs := healthTestBuild(t, options, tc.annotations, defaults, tc.protocol)
			if diff := cmp.Diff(tc.wantErrors, errs); diff != "" {
				t.Fatalf("errors (-want +got):\n%s", diff)
			}
			if tc.wantErrors != nil {
				return
			}
			if diff := cmp.Diff(tc.want, ec.HealthCheck); diff != "" {
				t.Errorf("HealthCheck (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOutlierDetectionOption(t *testing.T) {
	// defaultsWith is the group's defaults with f applied.
	defaultsWith := func(f func(*OutlierDetection)) *OutlierDetection {
		od := &OutlierDetection{Interval: 10 * time.Second, BaseEjectionTime: 30 * time.Second, MaxEjectionTime: 300 * time.Second, MaxEjectionPercent: 10}
		f(od)
		return od
	}
	tests := []struct {
		name        string
		options     *source.OutlierDetection
		annotations map[string]string
		defaults    *source.OutlierDetection
		want        *OutlierDetection
		wantErrors  []string
	}{{
		name: "no group, no outlier detection",
	}, {
		name:    "gateway failures alone: every default, max_ejection_percent 10 included",
		options: &source.OutlierDetection{ConsecutiveGatewayFailure: ptr(uint32(5))},
		want:    defaultsWith(func(od *OutlierDetection) { od.ConsecutiveGatewayFailure = 5 }),
	}, {
		name:    "local-origin failures alone",
		options: &source.OutlierDetection{ConsecutiveLocalOriginFailure: ptr(uint32(1))},
		want:    defaultsWith(func(od *OutlierDetection) { od.ConsecutiveLocalOriginFailure = 1 }),
	}, {
		name:    "failure percentage alone brings its minimum hosts and request volume defaults",
		options: &source.OutlierDetection{FailurePercentageThreshold: ptr(uint32(50))},
		want: defaultsWith(func(od *OutlierDetection) {
			od.FailurePercentageThreshold, od.FailurePercentageMinimumHosts, od.FailurePercentageRequestVolume = 50, 5, 50
		}),
	}, {
		name: "every field from annotations; minimum hosts and request volume 0 are kept",
		annotations: map[string]string{
			"tributary.dev/outlier-detection-consecutive-gateway-failure":       "3",
			"tributary.dev/outlier-detection-consecutive-local-origin-failure":  "4",
			"tributary.dev/outlier-detection-failure-percentage-threshold":      "100",
			"tributary.dev/outlier-detection-failure-percentage-minimum-hosts":  "0",
			"tributary.dev/outlier-detection-failure-percentage-request-volume": "0",
			"tributary.dev/outlier-detection-interval":                          "1s",
			"tributary.dev/outlier-detection-base-ejection-time":                "5s",
			"tributary.dev/outlier-detection-max-ejection-time":                 "5s",
			"tributary.dev/outlier-detection-max-ejection-percent":              "0",
		},
		want: &OutlierDetection{
			ConsecutiveGatewayFailure: 3, ConsecutiveLocalOriginFailure: 4, FailurePercentageThreshold: 100,
			Interval: time.Second, BaseEjectionTime: 5 * time.Second, MaxEjectionTime: 5 * time.Second,
		},
	}, {
		name:    "a base ejection time past 300s raises the default maximum to it, as Envoy does",
		options: &source.OutlierDetection{ConsecutiveGatewayFailure: ptr(uint32(5)), BaseEjectionTime: ptr("10m")},
		want: defaultsWith(func(od *OutlierDetection) {
			od.ConsecutiveGatewayFailure, od.BaseEjectionTime, od.MaxEjectionTime = 5, 10*time.Minute, 10*time.Minute
		}),
	}, {
		name:        "spec.options replaces annotations and defaults whole",
		options:     &source.OutlierDetection{FailurePercentageThreshold: ptr(uint32(90))},
		annotations: map[string]string{"tributary.dev/outlier-detection-consecutive-gateway-failure": "2"},
		defaults:    &source.OutlierDetection{ConsecutiveLocalOriginFailure: ptr(uint32(2)), MaxEjectionPercent: ptr(uint32(50))},
		want: defaultsWith(func(od *OutlierDetection) {
			od.FailurePercentageThreshold, od.FailurePercentageMinimumHosts, od.FailurePercentageRequestVolume = 90, 5, 50
		}),
	}, {
		name:        "annotations replace defaults whole",
		annotations: map[string]string{"tributary.dev/outlier-detection-consecutive-gateway-failure": "2"},
		defaults:    &source.OutlierDetection{ConsecutiveLocalOriginFailure: ptr(uint32(2)), MaxEjectionPercent: ptr(uint32(50))},
		want:        defaultsWith(func(od *OutlierDetection) { od.ConsecutiveGatewayFailure = 2 }),
	}, {
		name:     "defaults apply to an ExtensionService without a group",
		defaults: &source.OutlierDetection{ConsecutiveLocalOriginFailure: ptr(uint32(2)), MaxEjectionPercent: ptr(uint32(50))},
		want:     defaultsWith(func(od *OutlierDetection) { od.ConsecutiveLocalOriginFailure, od.MaxEjectionPercent = 2, 50 }),
	}, {
		name:    "a group without a detector is an error, naming the fields as written",
		options: &source.OutlierDetection{Interval: ptr("5s")},
		wantErrors: []string{"spec.options.outlierDetection: outlier detection needs a detector: set spec.options.outlierDetection.consecutiveGatewayFailure, " +
			"spec.options.outlierDetection.consecutiveLocalOriginFailure or spec.options.outlierDetection.failurePercentageThreshold"},
	}, {
		name:        "annotations without a detector",
		annotations: map[string]string{"tributary.dev/outlier-detection-max-ejection-percent": "20"},
		wantErrors: []string{`the "tributary.dev/outlier-detection-*" annotations: outlier detection needs a detector: set "tributary.dev/outlier-detection-consecutive-gateway-failure", ` +
			`"tributary.dev/outlier-detection-consecutive-local-origin-failure" or "tributary.dev/outlier-detection-failure-percentage-threshold"`},
	}, {
		name: "every field wrong at once: one error each",
		options: &source.OutlierDetection{
			ConsecutiveGatewayFailure: ptr(uint32(0)), ConsecutiveLocalOriginFailure: ptr(uint32(0)), FailurePercentageThreshold: ptr(uint32(0)),
			Interval: ptr("0"), BaseEjectionTime: ptr("-30s"), MaxEjectionTime: ptr("25h"), MaxEjectionPercent: ptr(uint32(101)),
		},
		wantErrors: []string{
			`spec.options.outlierDetection.interval "0" must be positive`,
			`spec.options.outlierDetection.baseEjectionTime "-30s" must be positive`,
			`spec.options.outlierDetection.consecutiveGatewayFailure "0" must be at least 1`,
			`spec.options.outlierDetection.consecutiveLocalOriginFailure "0" must be at least 1`,
			`spec.options.outlierDetection.failurePercentageThreshold "0" must be from 1 to 100`,
			`spec.options.outlierDetection.maxEjectionTime "25h" must be at most 24h`,
			`spec.options.outlierDetection.maxEjectionPercent "101" must be from 0 to 100`,
		},
	}, {
		name: "a threshold out of range still owns its minimum hosts and request volume; annotation names",
		annotations: map[string]string{
			"tributary.dev/outlier-detection-consecutive-gateway-failure":       "5",
			"tributary.dev/outlier-detection-failure-percentage-minimum-hosts":  "3",
			"tributary.dev/outlier-detection-failure-percentage-request-volume": "10",
			"tributary.dev/outlier-detection-failure-percentage-threshold":      "101",
			"tributary.dev/outlier-detection-interval":                          "10 s",
		},
		wantErrors: []string{
			`"tributary.dev/outlier-detection-interval" "10 s" is not a duration such as "5s" or "500ms"`,
			`"tributary.dev/outlier-detection-failure-percentage-threshold" "101" must be from 1 to 100`,
		},
	}, {
		name: "minimum hosts and request volume alone",
		options: &source.OutlierDetection{
			ConsecutiveGatewayFailure: ptr(uint32(5)), FailurePercentageMinimumHosts: ptr(uint32(3)), FailurePercentageRequestVolume: ptr(uint32(10)),
		},
		wantErrors: []string{
			`spec.options.outlierDetection.failurePercentageMinimumHosts "3" does nothing without spec.options.outlierDetection.failurePercentageThreshold`,
			`spec.options.outlierDetection.failurePercentageRequestVolume "10" does nothing without spec.options.outlierDetection.failurePercentageThreshold`,
		},
	}, {
		name:       "a maximum ejection time below the base's default",
		options:    &source.OutlierDetection{ConsecutiveGatewayFailure: ptr(uint32(5)), MaxEjectionTime: ptr("10s")},
		wantErrors: []string{`spec.options.outlierDetection.maxEjectionTime "10s" is shorter than spec.options.outlierDetection.baseEjectionTime 30s (its default)`},
	}, {
		name:       "a maximum ejection time below the base given",
		defaults:   &source.OutlierDetection{ConsecutiveGatewayFailure: ptr(uint32(5)), BaseEjectionTime: ptr("1m"), MaxEjectionTime: ptr("59s")},
		wantErrors: []string{`setting extensionDefaults.outlierDetection.maxEjectionTime "59s" is shorter than setting extensionDefaults.outlierDetection.baseEjectionTime "1m"`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var options, defaults *source.ExtensionOptions
			if tc.options != nil {
				options = &source.ExtensionOptions{OutlierDetection: tc.options}
			}
			if tc.defaults != nil {
				defaults = &source.ExtensionOptions{OutlierDetection: tc.defaults}
			}
			ec, errs := healthTestBuild(t, options, tc.annotations, defaults, nil)
			if diff := cmp.Diff(tc.wantErrors, errs); diff != "" {
				t.Fatalf("errors (-want +got):\n%s", diff)
			}
			if tc.wantErrors != nil {
				return
			}
			if diff := cmp.Diff(tc.want, ec.OutlierDetection); diff != "" {
				t.Errorf("OutlierDetection (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckExtensionDefaultsHealth: the server refuses settings whose
// defaults could never apply, naming the setting's fields; a health check
// default is checked as if for an h2 extension, so it is checked although
// an http/1.1 extension would not use it.
func TestCheckExtensionDefaultsHealth(t *testing.T) {
	got := CheckExtensionDefaults(source.Settings{ExtensionDefaults: &source.ExtensionOptions{
		HealthCheck:      &source.HealthCheck{Timeout: ptr("0s"), Port: ptr(uint32(70000))},
		OutlierDetection: &source.OutlierDetection{MaxEjectionPercent: ptr(uint32(200))},
	}})
	want := []string{
		`setting extensionDefaults.healthCheck.timeout "0s" must be positive`,
		`setting extensionDefaults.healthCheck.port "70000" must be from 1 to 65535`,
		`setting extensionDefaults.outlierDetection.maxEjectionPercent "200" must be from 0 to 100`,
		"setting extensionDefaults.outlierDetection: outlier detection needs a detector: set setting extensionDefaults.outlierDetection.consecutiveGatewayFailure, " +
			"setting extensionDefaults.outlierDetection.consecutiveLocalOriginFailure or setting extensionDefaults.outlierDetection.failurePercentageThreshold",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CheckExtensionDefaults (-want +got):\n%s", diff)
	}
	if got := CheckExtensionDefaults(source.Settings{ExtensionDefaults: &source.ExtensionOptions{
		HealthCheck:      &source.HealthCheck{},
		OutlierDetection: &source.OutlierDetection{FailurePercentageThreshold: ptr(uint32(85))},
	}}); !slices.Equal(got, []string{}) {
		t.Errorf("valid defaults: %q", got)
	}
}
