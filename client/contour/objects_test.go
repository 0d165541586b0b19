package contour

import (
	"bytes"
	"math"
	"testing"

	contour_v1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"google.golang.org/protobuf/proto"
	core_v1 "k8s.io/api/core/v1"
	discovery_v1 "k8s.io/api/discovery/v1"
	meta_v1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

func TestExtensionService(t *testing.T) {
	tests := map[string]struct {
		in   *contour_v1alpha1.ExtensionService
		want *tributaryv1.ExtensionService
	}{
		"nil": {},
		"minimal: absent optional fields stay absent": {
			in: &contour_v1alpha1.ExtensionService{
				ObjectMeta: meta("auth", "ext"),
				Spec: contour_v1alpha1.ExtensionServiceSpec{
					Services: []contour_v1alpha1.ExtensionServiceTarget{{Name: "svc", Port: 9000}},
				},
			},
			want: &tributaryv1.ExtensionService{
				Metadata: pbMeta("auth", "ext"),
				Spec: &tributaryv1.ExtensionServiceSpec{
					Services: []*tributaryv1.ExtensionServiceTarget{{Name: "svc", Port: 9000}},
				},
			},
		},
		"every field": {
			in: &contour_v1alpha1.ExtensionService{
				ObjectMeta: meta_v1.ObjectMeta{
					Namespace: "auth", Name: "ext", Generation: 7,
					Labels: map[string]string{"app": "authz"},
					Annotations: map[string]string{
						"ignored": "yes",
						"kubectl.kubernetes.io/last-applied-configuration": `{"kind":"ExtensionService"}`,
						"projectcontour.io/ignored":                        "yes",
						"tributary.dev/health-check-interval":              "5s",
						"tributary.dev/unknown-key":                        "carried: the service reports it",
						"tributary.dev":                                    "no slash: not ours",
					},
				},
				Spec: contour_v1alpha1.ExtensionServiceSpec{
					Services: []contour_v1alpha1.ExtensionServiceTarget{
						{Name: "a", Port: 9001, Weight: 80},
						{Name: "b", Port: 9002, Weight: 20},
					},
					UpstreamValidation: &contour_v1.UpstreamValidation{
						CACertificate: "other/ca", SubjectName: "authz.example.com",
						SubjectNames: []string{"authz.example.com", "alt.example.com"},
					},
					Protocol: new("h2"),
					LoadBalancerPolicy: &contour_v1.LoadBalancerPolicy{
						Strategy:            "RequestHash",
						RequestHashPolicies: []contour_v1.RequestHashPolicy{{Terminal: true}},
					},
					TimeoutPolicy:   &contour_v1.TimeoutPolicy{Response: "500ms", Idle: "1m", IdleConnection: "infinity"},
					ProtocolVersion: contour_v1alpha1.SupportProtocolVersion3,
					CircuitBreakerPolicy: &contour_v1alpha1.CircuitBreakers{
						MaxConnections: 1, MaxPendingRequests: 2, MaxRequests: 3, MaxRetries: 4, PerHostMaxConnections: 5,
					},
				},
			},
			want: &tributaryv1.ExtensionService{
				Metadata: &tributaryv1.ObjectMeta{
					Namespace: "auth", Name: "ext", Generation: 7, Labels: map[string]string{"app": "authz"},
					Annotations: map[string]string{
						"tributary.dev/health-check-interval": "5s",
						"tributary.dev/unknown-key":           "carried: the service reports it",
					},
				},
				Spec: &tributaryv1.ExtensionServiceSpec{
					Services: []*tributaryv1.ExtensionServiceTarget{
						{Name: "a", Port: 9001, Weight: 80},
						{Name: "b", Port: 9002, Weight: 20},
					},
					Validation: &tributaryv1.UpstreamValidation{
						CaSecret: "other/ca", SubjectName: "authz.example.com",
						SubjectNames: []string{"authz.example.com", "alt.example.com"},
					},
					Protocol:           new("h2"),
					LoadBalancerPolicy: &tributaryv1.LoadBalancerPolicy{Strategy: "RequestHash"},
					TimeoutPolicy:      &tributaryv1.TimeoutPolicy{Response: "500ms", Idle: "1m", IdleConnection: "infinity"},
					ProtocolVersion:    "v3",
					CircuitBreakerPolicy: &tributaryv1.CircuitBreakers{
						MaxConnections: 1, MaxPendingRequests: 2, MaxRequests: 3, MaxRetries: 4, PerHostMaxConnections: 5,
					},
				},
			},
		},
		"empty protocol and empty policies are present, not absent": {
			in: &contour_v1alpha1.ExtensionService{
				ObjectMeta: meta("auth", "ext"),
				Spec: contour_v1alpha1.ExtensionServiceSpec{
					Protocol:             new(""),
					LoadBalancerPolicy:   &contour_v1.LoadBalancerPolicy{},
					TimeoutPolicy:        &contour_v1.TimeoutPolicy{},
					CircuitBreakerPolicy: &contour_v1alpha1.CircuitBreakers{},
					UpstreamValidation:   &contour_v1.UpstreamValidation{},
				},
			},
			want: &tributaryv1.ExtensionService{
				Metadata: pbMeta("auth", "ext"),
				Spec: &tributaryv1.ExtensionServiceSpec{
					Protocol:             new(""),
					LoadBalancerPolicy:   &tributaryv1.LoadBalancerPolicy{},
					TimeoutPolicy:        &tributaryv1.TimeoutPolicy{},
					CircuitBreakerPolicy: &tributaryv1.CircuitBreakers{},
					Validation:           &tributaryv1.UpstreamValidation{},
				},
			},
		},
		"ports out of int32 range saturate instead of wrapping": {
			in: &contour_v1alpha1.ExtensionService{
				ObjectMeta: meta("auth", "ext"),
				Spec: contour_v1alpha1.ExtensionServiceSpec{
					Services: []contour_v1alpha1.ExtensionServiceTarget{
						{Name: "big", Port: math.MaxInt32 + 9001},
						{Name: "small", Port: math.MinInt32 - 1},
						{Name: "negative", Port: -1},
					},
				},
			},
			want: &tributaryv1.ExtensionService{
				Metadata: pbMeta("auth", "ext"),
				Spec: &tributaryv1.ExtensionServiceSpec{
					Services: []*tributaryv1.ExtensionServiceTarget{
						{Name: "big", Port: math.MaxInt32},
						{Name: "small", Port: math.MinInt32},
						{Name: "negative", Port: -1},
					},
				},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { diff(t, tc.want, ExtensionService(tc.in)) })
	}
}

func TestService(t *testing.T) {
	tests := map[string]struct {
		in   *core_v1.Service
		want *tributaryv1.Service
	}{
		"nil": {},
		"target ports: number, name, unset": {
			in: &core_v1.Service{
				ObjectMeta: meta_v1.ObjectMeta{
					Namespace: "auth", Name: "svc",
					// Only an ExtensionService's annotations are read.
					Annotations: map[string]string{"projectcontour.io/upstream-protocol.h2c": "9001", "tributary.dev/health-check-interval": "5s"},
				},
				Spec: core_v1.ServiceSpec{
					Type:      core_v1.ServiceTypeClusterIP,
					ClusterIP: "10.0.0.1",
					Ports: []core_v1.ServicePort{
						{Name: "grpc", Port: 9001, TargetPort: intstr.FromInt32(9000), Protocol: core_v1.ProtocolTCP},
						{Name: "named", Port: 9002, TargetPort: intstr.FromString("grpc-alt"), Protocol: core_v1.ProtocolUDP},
						{Port: 9003},
					},
				},
			},
			want: &tributaryv1.Service{
				Metadata: pbMeta("auth", "svc"),
				Spec: &tributaryv1.ServiceSpec{
					Type: "ClusterIP",
					Ports: []*tributaryv1.ServicePort{
						{Name: "grpc", Port: 9001, TargetPort: "9000", Protocol: "TCP"},
						{Name: "named", Port: 9002, TargetPort: "grpc-alt", Protocol: "UDP"},
						{Port: 9003},
					},
				},
			},
		},
		"ExternalName": {
			in: &core_v1.Service{
				ObjectMeta: meta("auth", "ext"),
				Spec:       core_v1.ServiceSpec{Type: core_v1.ServiceTypeExternalName, ExternalName: "authz.example.com"},
			},
			want: &tributaryv1.Service{
				Metadata: pbMeta("auth", "ext"),
				Spec:     &tributaryv1.ServiceSpec{Type: "ExternalName", ExternalName: "authz.example.com"},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { diff(t, tc.want, Service(tc.in)) })
	}
}

func TestEndpointSlice(t *testing.T) {
	tcp := core_v1.ProtocolTCP
	tests := map[string]struct {
		in   *discovery_v1.EndpointSlice
		want *tributaryv1.EndpointSlice
	}{
		"nil": {},
		"unset conditions and port fields stay unset": {
			in: &discovery_v1.EndpointSlice{
				ObjectMeta: meta_v1.ObjectMeta{
					Namespace: "auth", Name: "svc-abcde",
					Labels: map[string]string{discovery_v1.LabelServiceName: "svc"},
				},
				AddressType: discovery_v1.AddressTypeIPv4,
				Endpoints: []discovery_v1.Endpoint{
					{Addresses: []string{"10.0.0.1"}},
					{Addresses: []string{"10.0.0.2"}, Conditions: discovery_v1.EndpointConditions{Ready: new(false)}},
					{Addresses: []string{"10.0.0.3", "10.0.0.33"}, Conditions: discovery_v1.EndpointConditions{Ready: new(true), Serving: new(true), Terminating: new(false)}},
					{Addresses: []string{"10.0.0.4"}, Conditions: discovery_v1.EndpointConditions{Terminating: new(true)}},
				},
				Ports: []discovery_v1.EndpointPort{
					{Name: new("grpc"), Port: new(int32(9000)), Protocol: &tcp},
					{Name: new(""), Port: new(int32(0))},
					{},
				},
			},
			want: &tributaryv1.EndpointSlice{
				Metadata: &tributaryv1.ObjectMeta{
					Namespace: "auth", Name: "svc-abcde",
					Labels: map[string]string{"kubernetes.io/service-name": "svc"},
				},
				AddressType: "IPv4",
				Endpoints: []*tributaryv1.Endpoint{
					{Addresses: []string{"10.0.0.1"}},
					{Addresses: []string{"10.0.0.2"}, Conditions: &tributaryv1.EndpointConditions{Ready: new(false)}},
					{Addresses: []string{"10.0.0.3", "10.0.0.33"}, Conditions: &tributaryv1.EndpointConditions{Ready: new(true), Serving: new(true), Terminating: new(false)}},
					{Addresses: []string{"10.0.0.4"}, Conditions: &tributaryv1.EndpointConditions{Terminating: new(true)}},
				},
				Ports: []*tributaryv1.EndpointPort{
					{Name: new("grpc"), Port: new(int32(9000)), Protocol: new("TCP")},
					{Name: new(""), Port: new(int32(0))},
					{},
				},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { diff(t, tc.want, EndpointSlice(tc.in)) })
	}
}

func TestSecret(t *testing.T) {
	privateKey := []byte("-----BEGIN PRIVATE KEY-----\nsecret\n-----END PRIVATE KEY-----\n")
	tests := map[string]struct {
		in   *core_v1.Secret
		want *tributaryv1.Secret
	}{
		"nil": {},
		"only ca.crt and tls.crt cross": {
			in: &core_v1.Secret{
				ObjectMeta: meta("auth", "client"),
				Type:       core_v1.SecretTypeTLS,
				Data: map[string][]byte{
					"ca.crt": []byte("CA"), "tls.crt": []byte("CERT"), "tls.key": privateKey, "other": privateKey,
				},
			},
			want: &tributaryv1.Secret{Metadata: pbMeta("auth", "client"), Type: "kubernetes.io/tls", CaCrt: []byte("CA"), TlsCrt: []byte("CERT")},
		},
		"stringData wins over data, as the API server merges it": {
			in: &core_v1.Secret{
				ObjectMeta: meta("auth", "ca"),
				Data:       map[string][]byte{"ca.crt": []byte("OLD")},
				StringData: map[string]string{"ca.crt": "NEW", "tls.key": string(privateKey)},
			},
			want: &tributaryv1.Secret{Metadata: pbMeta("auth", "ca"), CaCrt: []byte("NEW")},
		},
		"absent keys": {
			in:   &core_v1.Secret{ObjectMeta: meta("auth", "empty"), Type: core_v1.SecretTypeOpaque},
			want: &tributaryv1.Secret{Metadata: pbMeta("auth", "empty"), Type: "Opaque"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Secret(tc.in)
			diff(t, tc.want, got)
			wire, err := proto.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(wire, []byte("PRIVATE KEY")) {
				t.Errorf("private key material in the converted Secret: %q", wire)
			}
		})
	}
}

func TestTLSCertificateDelegation(t *testing.T) {
	in := &contour_v1.TLSCertificateDelegation{
		ObjectMeta: meta("certs", "delegate"),
		Spec: contour_v1.TLSCertificateDelegationSpec{Delegations: []contour_v1.CertificateDelegation{
			{SecretName: "ca", TargetNamespaces: []string{"auth", "billing"}},
			{SecretName: "wild", TargetNamespaces: []string{"*"}},
		}},
	}
	want := &tributaryv1.TLSCertificateDelegation{
		Metadata: pbMeta("certs", "delegate"),
		Delegations: []*tributaryv1.CertificateDelegation{
			{SecretName: "ca", TargetNamespaces: []string{"auth", "billing"}},
			{SecretName: "wild", TargetNamespaces: []string{"*"}},
		},
	}
	diff(t, want, TLSCertificateDelegation(in))
	diff(t, (*tributaryv1.TLSCertificateDelegation)(nil), TLSCertificateDelegation(nil))
}
