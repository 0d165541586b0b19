package server

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/source"
)

// everyOption sets every field of every option group.
func everyOption() *tributaryv1.ExtensionOptions {
	return &tributaryv1.ExtensionOptions{
		HealthCheck: &tributaryv1.HealthCheck{
			ServiceName: proto.String("auth"), Authority: proto.String("a.example"), Interval: proto.String("5s"), Timeout: proto.String("1s"),
			UnhealthyThreshold: proto.Uint32(3), HealthyThreshold: proto.Uint32(2), Port: proto.Uint32(8081),
		},
		OutlierDetection: &tributaryv1.OutlierDetection{
			ConsecutiveGatewayFailure: proto.Uint32(5), ConsecutiveLocalOriginFailure: proto.Uint32(4),
			FailurePercentageThreshold: proto.Uint32(50), FailurePercentageMinimumHosts: proto.Uint32(2), FailurePercentageRequestVolume: proto.Uint32(10),
			Interval: proto.String("10s"), BaseEjectionTime: proto.String("30s"), MaxEjectionTime: proto.String("300s"), MaxEjectionPercent: proto.Uint32(0),
		},
		Tls: &tributaryv1.ExtensionTLS{
			Sni: proto.String("a.example"), ClientCertificate: proto.String("ns/cert"),
			MinimumProtocolVersion: proto.String("1.2"), MaximumProtocolVersion: proto.String("1.3"), CipherSuites: []string{"A", "B"},
		},
		Http2Keepalive:   &tributaryv1.Http2Keepalive{Interval: proto.String("30s"), Timeout: proto.String("5s")},
		TcpKeepalive:     &tributaryv1.TcpKeepalive{Probes: proto.Uint32(3), Time: proto.String("60s"), Interval: proto.String("10s")},
		ConnectionLimits: &tributaryv1.ConnectionLimits{MaxConnectionDuration: proto.String("1h"), MaxRequestsPerConnection: proto.Uint32(1000)},
		SlowStart:        &tributaryv1.SlowStart{Window: proto.String("30s"), Aggression: proto.Float64(1.5), MinWeightPercent: proto.Float64(20)},
		ClientSideWeightedRoundRobin: &tributaryv1.ClientSideWeightedRoundRobin{
			EnableOobLoadReport: proto.Bool(false), OobReportingPeriod: proto.String("10s"), BlackoutPeriod: proto.String("11s"),
			WeightExpirationPeriod: proto.String("3m"), WeightUpdatePeriod: proto.String("1s"), ErrorUtilizationPenalty: proto.Float64(0.5),
		},
	}
}

// TestDecodeOptions: every option of every group reaches source, unset
// stays unset (nil) and zero stays zero; a group present with no field
// stays present. Every leaf of the result must be set, so an option added
// to the API and to source but not to decodeOptions fails here.
func TestDecodeOptions(t *testing.T) {
	var p problems
	got := decodeOptions(everyOption(), "spec.options", settingFields{&p})
	if p.count != 0 {
		t.Fatalf("problems: %v", p.violations)
	}
	want := &source.ExtensionOptions{
		HealthCheck: &source.HealthCheck{
			ServiceName: proto.String("auth"), Authority: proto.String("a.example"), Interval: proto.String("5s"), Timeout: proto.String("1s"),
			UnhealthyThreshold: proto.Uint32(3), HealthyThreshold: proto.Uint32(2), Port: proto.Uint32(8081),
		},
		OutlierDetection: &source.OutlierDetection{
			ConsecutiveGatewayFailure: proto.Uint32(5), ConsecutiveLocalOriginFailure: proto.Uint32(4),
			FailurePercentageThreshold: proto.Uint32(50), FailurePercentageMinimumHosts: proto.Uint32(2), FailurePercentageRequestVolume: proto.Uint32(10),
			Interval: proto.String("10s"), BaseEjectionTime: proto.String("30s"), MaxEjectionTime: proto.String("300s"), MaxEjectionPercent: proto.Uint32(0),
		},
		TLS: &source.ExtensionTLS{
			SNI: proto.String("a.example"), ClientCertificate: proto.String("ns/cert"),
			MinimumProtocolVersion: proto.String("1.2"), MaximumProtocolVersion: proto.String("1.3"), CipherSuites: []string{"A", "B"},
		},
		HTTP2Keepalive:   &source.HTTP2Keepalive{Interval: proto.String("30s"), Timeout: proto.String("5s")},
		TCPKeepalive:     &source.TCPKeepalive{Probes: proto.Uint32(3), Time: proto.String("60s"), Interval: proto.String("10s")},
		ConnectionLimits: &source.ConnectionLimits{MaxConnectionDuration: proto.String("1h"), MaxRequestsPerConnection: proto.Uint32(1000)},
		SlowStart:        &source.SlowStart{Window: proto.String("30s"), Aggression: proto.Float64(1.5), MinWeightPercent: proto.Float64(20)},
		ClientSideWeightedRoundRobin: &source.ClientSideWeightedRoundRobin{
			EnableOOBLoadReport: proto.Bool(false), OOBReportingPeriod: proto.String("10s"), BlackoutPeriod: proto.String("11s"),
			WeightExpirationPeriod: proto.String("3m"), WeightUpdatePeriod: proto.String("1s"), ErrorUtilizationPenalty: proto.Float64(0.5),
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	groups := reflect.ValueOf(got).Elem()
	for g := range groups.NumField() {
		group := groups.Field(g).Elem()
		for f := range group.NumField() {
			if group.Field(f).IsNil() {
				t.Errorf("%s.%s is not decoded", groups.Type().Field(g).Name, group.Type().Field(f).Name)
			}
		}
	}

	empty := decodeOptions(&tributaryv1.ExtensionOptions{SlowStart: &tributaryv1.SlowStart{}}, "spec.options", settingFields{&p})
	if diff := cmp.Diff(&source.ExtensionOptions{SlowStart: &source.SlowStart{}}, empty); diff != "" {
		t.Errorf("an empty group (-want +got):\n%s", diff)
	}
	if got := decodeOptions(nil, "spec.options", settingFields{&p}); got != nil {
		t.Errorf("no options: got %v, want nil", got)
	}
}

// TestDecodeRequestOptions: an ExtensionService's spec.options and its
// "tributary.dev/" annotations reach source, and no other annotation does,
// on any kind; the settings carry extensionDefaults (through the same
// conversion) and enableExternalNameTargets.
func TestDecodeRequestOptions(t *testing.T) {
	withOthers := meta("ns", "ext")
	withOthers.Annotations = map[string]string{
		"tributary.dev/health-check-interval":              "5s",
		"tributary.dev/no-such-option":                     "kept: translation reports it",
		"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 300<<10), // beyond every limit, and ignored
		"projectcontour.io/ignored":                        "yes",
		"tributary.dev":                                    "no slash: not ours",
	}
	oursOnly := meta("ns", "ours")
	oursOnly.Annotations = map[string]string{"tributary.dev/slow-start-window": "30s"}
	noneOfOurs := meta("ns", "none")
	noneOfOurs.Annotations = map[string]string{"example.com/x": "y"}
	svcMeta := meta("ns", "svc")
	svcMeta.Annotations = map[string]string{"tributary.dev/health-check-interval": "5s"}
	req := &tributaryv1.TranslateRequest{
		Settings: &tributaryv1.Settings{
			EnableExternalNameTargets: true,
			ExtensionDefaults:         &tributaryv1.ExtensionOptions{ConnectionLimits: &tributaryv1.ConnectionLimits{MaxRequestsPerConnection: proto.Uint32(100)}},
		},
		Objects: []*tributaryv1.KubernetesObject{
			extensionServiceObject(withOthers, &tributaryv1.ExtensionServiceSpec{
				Options: &tributaryv1.ExtensionOptions{TcpKeepalive: &tributaryv1.TcpKeepalive{Probes: proto.Uint32(3)}},
			}),
			extensionServiceObject(oursOnly, nil),
			extensionServiceObject(noneOfOurs, nil),
			serviceObject(svcMeta),
		},
	}
	objs, settings, err := decodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	wantSettings := source.Settings{
		ExternalNameTargets: true,
		ExtensionDefaults:   &source.ExtensionOptions{ConnectionLimits: &source.ConnectionLimits{MaxRequestsPerConnection: proto.Uint32(100)}},
	}
	if diff := cmp.Diff(wantSettings, settings); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	wantES := []source.ExtensionService{{
		Meta: source.Meta{Namespace: "ns", Name: "ext", Annotations: map[string]string{
			"tributary.dev/health-check-interval": "5s",
			"tributary.dev/no-such-option":        "kept: translation reports it",
		}},
		Spec: source.ExtensionServiceSpec{Options: &source.ExtensionOptions{TCPKeepalive: &source.TCPKeepalive{Probes: proto.Uint32(3)}}},
	}, {
		Meta: source.Meta{Namespace: "ns", Name: "ours", Annotations: map[string]string{"tributary.dev/slow-start-window": "30s"}},
	}, {
		Meta: source.Meta{Namespace: "ns", Name: "none"},
	}}
	if diff := cmp.Diff(wantES, objs.ExtensionServices); diff != "" {
		t.Errorf("ExtensionServices (-want +got):\n%s", diff)
	}
	if got := objs.Services[0].Annotations; got != nil {
		t.Errorf("a Service's annotations are read: %v", got)
	}
	// When every annotation is ours, the request's map is used as it is.
	if reflect.ValueOf(objs.ExtensionServices[1].Annotations).UnsafePointer() != reflect.ValueOf(oursOnly.Annotations).UnsafePointer() {
		t.Error("annotations that are all ours were copied")
	}
}

// TestDecodeOptionLimits: annotations of ours and the strings of
// spec.options and of extensionDefaults are refused past their limit, with
// InvalidArgument naming the object (or setting) and the field, and
// accepted at it; annotations of others do not count.
func TestDecodeOptionLimits(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	annotated := func(annotations map[string]string) *tributaryv1.TranslateRequest {
		m := meta("ns", "ext")
		m.Annotations = annotations
		return &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{extensionServiceObject(m, nil)}}
	}
	ours := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[source.AnnotationPrefix+"k"+strconv.Itoa(i)] = "v"
			m["example.com/k"+strconv.Itoa(i)] = "others' keys do not count"
		}
		return m
	}
	options := func(o *tributaryv1.ExtensionOptions) *tributaryv1.TranslateRequest {
		return &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{extensionServiceObject(meta("ns", "ext"), &tributaryv1.ExtensionServiceSpec{Options: o})}}
	}
	defaults := func(o *tributaryv1.ExtensionOptions) *tributaryv1.TranslateRequest {
		return &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{ExtensionDefaults: o}}
	}
	const esRef = `objects[0] (ExtensionService "ns/ext"): `
	tests := []struct {
		name       string
		over, at   *tributaryv1.TranslateRequest
		field, msg string
	}{{
		name:  "annotation value",
		over:  annotated(map[string]string{"tributary.dev/health-check-service-name": long(1025), "other": long(300 << 10)}),
		at:    annotated(map[string]string{"tributary.dev/health-check-service-name": long(1024), "other": long(300 << 10)}),
		field: `objects[0].extensionService.metadata.annotations["tributary.dev/health-check-service-name"]`,
		msg:   esRef + `metadata.annotations["tributary.dev/health-check-service-name"] is 1025 bytes long; ` + annotationValueLimit.why,
	}, {
		name:  "annotation key",
		over:  annotated(map[string]string{"tributary.dev/" + long(64): "v"}),
		at:    annotated(map[string]string{"tributary.dev/" + long(63): "v"}),
		field: `objects[0].extensionService.metadata.annotations["tributary.dev/` + long(64) + `"]`,
		msg:   esRef + `metadata.annotations["tributary.dev/` + long(64) + `"] has a key 78 bytes long; ` + annotationKeyLimit.why,
	}, {
		name:  "annotations",
		over:  annotated(ours(65)),
		at:    annotated(ours(64)),
		field: "objects[0].extensionService.metadata.annotations",
		msg:   esRef + `metadata.annotations holds 65 annotations starting with "tributary.dev/"; at most 64: translation reads 37 such keys, so the rest could only be mistakes`,
	}, {
		name:  "duration",
		over:  options(&tributaryv1.ExtensionOptions{HealthCheck: &tributaryv1.HealthCheck{Interval: proto.String(strings.Repeat("0", 63) + "5s")}}),
		at:    options(&tributaryv1.ExtensionOptions{HealthCheck: &tributaryv1.HealthCheck{Interval: proto.String(strings.Repeat("0", 62) + "5s")}}),
		field: "objects[0].extensionService.spec.options.healthCheck.interval",
		msg:   esRef + "spec.options.healthCheck.interval is 65 bytes long; " + durationLimit.why,
	}, {
		name:  "SNI",
		over:  options(&tributaryv1.ExtensionOptions{Tls: &tributaryv1.ExtensionTLS{Sni: proto.String(long(256))}}),
		at:    options(&tributaryv1.ExtensionOptions{Tls: &tributaryv1.ExtensionTLS{Sni: proto.String(long(255))}}),
		field: "objects[0].extensionService.spec.options.tls.sni",
		msg:   esRef + "spec.options.tls.sni is 256 bytes long; " + sniLimit.why,
	}, {
		name:  "client certificate",
		over:  options(&tributaryv1.ExtensionOptions{Tls: &tributaryv1.ExtensionTLS{ClientCertificate: proto.String(long(318))}}),
		at:    options(&tributaryv1.ExtensionOptions{Tls: &tributaryv1.ExtensionTLS{ClientCertificate: proto.String(long(317))}}),
		field: "objects[0].extensionService.spec.options.tls.clientCertificate",
		msg:   esRef + "spec.options.tls.clientCertificate is 318 bytes long; " + caSecretLimit.why,
	}, {
		name:  "cipher suites",
		over:  options(&tributaryv1.ExtensionOptions{Tls: &tributaryv1.ExtensionTLS{CipherSuites: make([]string, 65)}}),
		at:    options(&tributaryv1.ExtensionOptions{Tls: &tributaryv1.ExtensionTLS{CipherSuites: make([]string, 64)}}),
		field: "objects[0].extensionService.spec.options.tls.cipherSuites",
		msg:   esRef + "spec.options.tls.cipherSuites holds 65 names; at most 64: BoringSSL knows fewer than 30 cipher suites, and every h2 Cluster repeats the list",
	}, {
		name:  "one cipher suite",
		over:  options(&tributaryv1.ExtensionOptions{Tls: &tributaryv1.ExtensionTLS{CipherSuites: []string{"A", long(129)}}}),
		at:    options(&tributaryv1.ExtensionOptions{Tls: &tributaryv1.ExtensionTLS{CipherSuites: []string{"A", long(128)}}}),
		field: "objects[0].extensionService.spec.options.tls.cipherSuites[1]",
		msg:   esRef + "spec.options.tls.cipherSuites[1] is 129 bytes long; " + cipherSuiteLimit.why,
	}, {
		name:  "health check authority",
		over:  options(&tributaryv1.ExtensionOptions{HealthCheck: &tributaryv1.HealthCheck{Authority: proto.String(long(260))}}),
		at:    options(&tributaryv1.ExtensionOptions{HealthCheck: &tributaryv1.HealthCheck{Authority: proto.String(long(259))}}),
		field: "objects[0].extensionService.spec.options.healthCheck.authority",
		msg:   esRef + "spec.options.healthCheck.authority is 260 bytes long; " + authorityLimit.why,
	}, {
		// Reported once: a value over its limit is not judged again.
		name:  "default duration",
		over:  defaults(&tributaryv1.ExtensionOptions{SlowStart: &tributaryv1.SlowStart{Window: proto.String(strings.Repeat("0", 63) + "5s")}}),
		at:    defaults(&tributaryv1.ExtensionOptions{SlowStart: &tributaryv1.SlowStart{Window: proto.String(strings.Repeat("0", 62) + "5s")}}),
		field: "settings.extensionDefaults.slowStart.window",
		msg:   "settings.extensionDefaults.slowStart.window is 65 bytes long; " + durationLimit.why,
	}}
	translation := tributaryv1.NewTranslationServiceClient(dialBufconn(t, NewGRPCServer(quietOptions())))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := translation.Translate(t.Context(), tt.over)
			checkInvalidArgument(t, err, tt.msg, []violation{{tt.field, ReasonOutOfRange, tt.msg}})
			if _, err := translation.Translate(t.Context(), tt.at); err != nil {
				t.Errorf("at the limit: %v", err)
			}
		})
	}
}

// TestDecodeBadExtensionDefaults: a default translation would refuse is
// InvalidArgument, one violation per message, at the setting's path in
// Translate and in Sync's start.
func TestDecodeBadExtensionDefaults(t *testing.T) {
	settings := &tributaryv1.Settings{ExtensionDefaults: &tributaryv1.ExtensionOptions{
		HealthCheck: &tributaryv1.HealthCheck{Interval: proto.String("0s")},
		SlowStart:   &tributaryv1.SlowStart{},
	}}
	const (
		interval = `setting extensionDefaults.healthCheck.interval "0s" must be positive`
		window   = `setting extensionDefaults.slowStart.window is required with setting extensionDefaults.slowStart`
	)
	_, _, err := decodeRequest(&tributaryv1.TranslateRequest{Settings: settings})
	checkInvalidArgument(t, err, interval+" (and 1 more problem)", []violation{
		{"settings.extensionDefaults", ReasonInvalidOption, interval},
		{"settings.extensionDefaults", ReasonInvalidOption, window},
	})
	_, err = decodeStart(&tributaryv1.SyncStart{Settings: settings})
	checkInvalidArgument(t, err, interval+" (and 1 more problem)", []violation{
		{"start.settings.extensionDefaults", ReasonInvalidOption, interval},
		{"start.settings.extensionDefaults", ReasonInvalidOption, window},
	})
}
