package model

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/source"
)

// TestBuildExtensionCluster checks every field of the ExtensionCluster of
// valid ExtensionServices.
func TestBuildExtensionCluster(t *testing.T) {
	world := xtWorld(t)
	caPEM := world.Secrets[0].CACrt
	globalCB := &source.CircuitBreakers{MaxConnections: 1, MaxPendingRequests: 2, MaxRequests: 3, MaxRetries: 4, PerHostMaxConnections: 5}

	tests := []struct {
		name     string
		objs     func(*source.Objects)
		settings source.Settings
		spec     source.ExtensionServiceSpec
		want     *ExtensionCluster
	}{
		{
			name: "defaults: h2 over TLS without validation",
			spec: source.ExtensionServiceSpec{Services: xtTarget, ProtocolVersion: "v2"},
			want: &ExtensionCluster{
				Name: "extension/ext/authz", XDSClusterName: "contour", ConnectTimeout: 2 * time.Second,
				Protocol: ProtocolH2, LoadBalancer: LoadBalancerRoundRobin, TLS: &UpstreamTLS{},
				Localities: xtLocality,
			},
		},
		{
			name: "settings, validation, client certificate and TLS parameters",
			settings: source.Settings{
				XDSClusterName: "envoy/xds", ConnectTimeout: 5 * time.Second,
				ClientCertificate:     &source.NamespacedName{Namespace: xtNS, Name: "client"},
				UpstreamTLS:           &source.UpstreamTLS{MinimumProtocolVersion: "1.2", MaximumProtocolVersion: "1.3", CipherSuites: []string{"ECDHE-ECDSA-AES128-GCM-SHA256"}},
				GlobalCircuitBreakers: globalCB,
			},
			spec: source.ExtensionServiceSpec{
				Services:           xtTarget,
				Protocol:           xtStr("h2"),
				Validation:         &source.UpstreamValidation{CASecret: "ca", SubjectName: "authz.ext", SubjectNames: []string{"authz.ext", "authz"}},
				LoadBalancerPolicy: &source.LoadBalancerPolicy{Strategy: "WeightedLeastRequest"},
				TimeoutPolicy:      &source.TimeoutPolicy{Response: "10s", IdleConnection: "1m"},
			},
			want: &ExtensionCluster{
				Name: "extension/ext/authz", XDSClusterName: "envoy/xds", ConnectTimeout: 5 * time.Second,
				IdleConnectionTimeout: xtDuration(time.Minute),
				Protocol:              ProtocolH2, LoadBalancer: LoadBalancerLeastRequest,
				CircuitBreakers: globalCB,
				TLS: &UpstreamTLS{
					SNI: "authz.ext", CACertificate: caPEM, SubjectNames: []string{"authz.ext", "authz"},
					ClientCertificateSDSName: xtClientSDSName,
					Params:                   &TLSParams{Minimum: TLS12, Maximum: TLS13, CipherSuites: []string{"ECDHE-ECDSA-AES128-GCM-SHA256"}},
				},
				Localities: xtLocality,
			},
		},
		{
			name: "delegated CA from another namespace, subjectName alone",
			objs: func(o *source.Objects) {
				o.TLSCertificateDelegations = append(o.TLSCertificateDelegations, source.TLSCertificateDelegation{
					Meta:        source.Meta{Namespace: "certs", Name: "d"},
					Delegations: []source.CertificateDelegation{{SecretName: "ca", TargetNamespaces: []string{"*"}}},
				})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: &source.UpstreamValidation{CASecret: "certs/ca", SubjectName: "authz"}},
			want: &ExtensionCluster{
				Name: "extension/ext/authz", XDSClusterName: "contour", ConnectTimeout: 2 * time.Second,
				Protocol: ProtocolH2, LoadBalancer: LoadBalancerRoundRobin,
				TLS:        &UpstreamTLS{SNI: "authz", CACertificate: caPEM, SubjectNames: []string{"authz"}},
				Localities: xtLocality,
			},
		},
		{
			name: "explicit namespace equal to its own needs no delegation; empty namespace means its own",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: &source.UpstreamValidation{CASecret: "/ca", SubjectName: "authz"}},
			want: &ExtensionCluster{
				Name: "extension/ext/authz", XDSClusterName: "contour", ConnectTimeout: 2 * time.Second,
				Protocol: ProtocolH2, LoadBalancer: LoadBalancerRoundRobin,
				TLS:        &UpstreamTLS{SNI: "authz", CACertificate: caPEM, SubjectNames: []string{"authz"}},
				Localities: xtLocality,
			},
		},
		{
			name: "h2c: no TLS even with a client certificate; policy circuit breakers replace the global ones",
			settings: source.Settings{
				ClientCertificate:     &source.NamespacedName{Namespace: xtNS, Name: "client"},
				GlobalCircuitBreakers: globalCB,
				UpstreamTLS:           &source.UpstreamTLS{MinimumProtocolVersion: "1.3"},
			},
			spec: source.ExtensionServiceSpec{
				Services: xtTarget, Protocol: xtStr("h2c"),
				LoadBalancerPolicy:   &source.LoadBalancerPolicy{Strategy: "Random"},
				CircuitBreakerPolicy: &source.CircuitBreakers{MaxRetries: 9},
				TimeoutPolicy:        &source.TimeoutPolicy{IdleConnection: "infinity"},
			},
			want: &ExtensionCluster{
				Name: "extension/ext/authz", XDSClusterName: "contour", ConnectTimeout: 2 * time.Second,
				IdleConnectionTimeout: xtDuration(0),
				Protocol:              ProtocolH2C, LoadBalancer: LoadBalancerRandom,
				CircuitBreakers: &source.CircuitBreakers{MaxRetries: 9},
				Localities:      xtLocality,
			},
		},
		{
			name:     "http/1.1; an all-zero policy replaces the global breakers with none",
			settings: source.Settings{GlobalCircuitBreakers: globalCB},
			spec: source.ExtensionServiceSpec{
				Services: xtTarget, Protocol: xtStr("http/1.1"),
				LoadBalancerPolicy:   &source.LoadBalancerPolicy{Strategy: "Maglev"},
				CircuitBreakerPolicy: &source.CircuitBreakers{},
				TimeoutPolicy:        &source.TimeoutPolicy{IdleConnection: "0s"},
			},
			want: &ExtensionCluster{
				Name: "extension/ext/authz", XDSClusterName: "contour", ConnectTimeout: 2 * time.Second,
				Protocol: ProtocolHTTP11, LoadBalancer: LoadBalancerRoundRobin,
				Localities: xtLocality,
			},
		},
		{
			name: "empty protocol means h2; a port matches by name; Cookie falls back to round robin",
			objs: func(o *source.Objects) {
				o.Services[0].Ports = []source.ServicePort{{Name: "http", Port: 80}, {Name: "9000", Port: 19000, Protocol: "TCP"}}
				o.EndpointSlices[0].Ports = []source.EndpointPort{{Name: xtStr("9000"), Port: new(int32(19000)), Protocol: xtStr("TCP")}}
			},
			spec: source.ExtensionServiceSpec{
				Services: xtTarget, Protocol: xtStr(""),
				LoadBalancerPolicy: &source.LoadBalancerPolicy{Strategy: "Cookie"},
			},
			want: &ExtensionCluster{
				Name: "extension/ext/authz", XDSClusterName: "contour", ConnectTimeout: 2 * time.Second,
				Protocol: ProtocolH2, LoadBalancer: LoadBalancerRoundRobin, TLS: &UpstreamTLS{},
				// Target port 9000 matched the Service port named "9000".
				Localities: []Locality{{SubZone: "ext/grpc/19000", Weight: 1, Endpoints: []Endpoint{{Address: source.MakeAddress("10.0.0.1"), Port: 19000}}}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := xtWorld(t)
			if tc.objs != nil {
				tc.objs(&objs)
			}
			ec, st := xtBuild(t, objs, tc.settings, tc.spec)
			if len(st.Condition.Errors) > 0 {
				t.Fatalf("unexpected errors: %+v", st.Condition.Errors)
			}
			if diff := cmp.Diff(tc.want, ec); diff != "" {
				t.Errorf("ExtensionCluster (-want +got):\n%s", diff)
			}
		})
	}
}
