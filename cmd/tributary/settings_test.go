package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// TestReadSettings: a settings file carries every option of
// extensionDefaults, by the API's JSON names, into the request; a group
// present without fields stays present; enableExternalNameTargets is read;
// Contour's settings beside them are unchanged.
func TestReadSettings(t *testing.T) {
	path := writeTemp(t, "settings.yaml", `
connectTimeout: 1s
enableExternalNameTargets: true
extensionDefaults:
  healthCheck: {serviceName: auth, authority: a.example, interval: 5s, timeout: 1s, unhealthyThreshold: 3, healthyThreshold: 2, port: 8081}
  outlierDetection:
    consecutiveGatewayFailure: 5
    consecutiveLocalOriginFailure: 4
    failurePercentageThreshold: 50
    failurePercentageMinimumHosts: 2
    failurePercentageRequestVolume: 10
    interval: 10s
    baseEjectionTime: 30s
    maxEjectionTime: 300s
    maxEjectionPercent: 0
  tls: {sni: a.example, clientCertificate: ns/cert, minimumProtocolVersion: "1.2", maximumProtocolVersion: "1.3", cipherSuites: [A, B]}
  http2Keepalive: {interval: 30s, timeout: 5s}
  tcpKeepalive: {probes: 3, time: 60s, interval: 10s}
  connectionLimits: {maxConnectionDuration: 1h, maxRequestsPerConnection: 1000}
  slowStart: {}
  clientSideWeightedRoundRobin: {enableOobLoadReport: false, oobReportingPeriod: 10s, blackoutPeriod: 10s, weightExpirationPeriod: 3m, weightUpdatePeriod: 1s, errorUtilizationPenalty: 1.5}
`)
	s, err := readSettings(path)
	if err != nil {
		t.Fatal(err)
	}
	want := &tributaryv1.Settings{
		ConnectTimeout:            "1s",
		EnableExternalNameTargets: true,
		ExtensionDefaults: &tributaryv1.ExtensionOptions{
			HealthCheck: &tributaryv1.HealthCheck{
				ServiceName: proto.String("auth"), Authority: proto.String("a.example"), Interval: proto.String("5s"), Timeout: proto.String("1s"),
				UnhealthyThreshold: proto.Uint32(3), HealthyThreshold: proto.Uint32(2), Port: proto.Uint32(8081),
			},
			OutlierDetection: &tributaryv1.OutlierDetection{
				ConsecutiveGatewayFailure: proto.Uint32(5), ConsecutiveLocalOriginFailure: proto.Uint32(4),
				FailurePercentageThreshold: proto.Uint32(50), FailurePercentageMinimumHosts: proto.Uint32(2), FailurePercentageRequestVolume: proto.Uint32(10),
				Interval: proto.String("10s"), BaseEjectionTime: proto.String("30s"), MaxEjectionTime: proto.String("300s"),
				MaxEjectionPercent: proto.Uint32(0), // set to zero, not unset
			},
			Tls: &tributaryv1.ExtensionTLS{
				Sni: proto.String("a.example"), ClientCertificate: proto.String("ns/cert"),
				MinimumProtocolVersion: proto.String("1.2"), MaximumProtocolVersion: proto.String("1.3"),
				CipherSuites: []string{"A", "B"},
			},
			Http2Keepalive:   &tributaryv1.Http2Keepalive{Interval: proto.String("30s"), Timeout: proto.String("5s")},
			TcpKeepalive:     &tributaryv1.TcpKeepalive{Probes: proto.Uint32(3), Time: proto.String("60s"), Interval: proto.String("10s")},
			ConnectionLimits: &tributaryv1.ConnectionLimits{MaxConnectionDuration: proto.String("1h"), MaxRequestsPerConnection: proto.Uint32(1000)},
			SlowStart:        &tributaryv1.SlowStart{},
			ClientSideWeightedRoundRobin: &tributaryv1.ClientSideWeightedRoundRobin{
				EnableOobLoadReport: proto.Bool(false), OobReportingPeriod: proto.String("10s"), BlackoutPeriod: proto.String("10s"),
				WeightExpirationPeriod: proto.String("3m"), WeightUpdatePeriod: proto.String("1s"), ErrorUtilizationPenalty: proto.Float64(1.5),
			},
		},
	}
	if d := cmp.Diff(want, requestSettings(s), protocmp.Transform()); d != "" {
		t.Errorf("settings (-want +got):\n%s", d)
	}
}

// TestReadSettingsStrict: a misspelled option, at any depth, is an error
// naming its path, as a misspelled Contour setting is.
func TestReadSettingsStrict(t *testing.T) {
	tests := map[string]struct{ yaml, want string }{
		"option":  {"extensionDefaults:\n  healthCheck:\n    intervl: 5s\n", `unknown field "extensionDefaults.healthCheck.intervl"`},
		"group":   {"extensionDefaults:\n  healthChecks: {}\n", `unknown field "extensionDefaults.healthChecks"`},
		"setting": {"enableExternalNameTarget: true\n", `unknown field "enableExternalNameTarget"`},
		"type":    {"enableExternalNameTargets: yes please\n", `cannot unmarshal string into Go struct field settingsFile.Config.enableExternalNameTargets of type bool`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := writeTemp(t, "settings.yaml", tc.yaml)
			_, err := readSettings(path)
			if want := path + ": " + tc.want; err == nil || err.Error() != want {
				t.Errorf("error = %v, want %s", err, want)
			}
		})
	}
}
