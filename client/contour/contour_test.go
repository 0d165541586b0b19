package contour

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	contour_v1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	core_v1 "k8s.io/api/core/v1"
	discovery_v1 "k8s.io/api/discovery/v1"
	meta_v1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tributary-dev/tributary/client/internal/objectkind"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

func meta(ns, name string) meta_v1.ObjectMeta { return meta_v1.ObjectMeta{Namespace: ns, Name: name} }

func pbMeta(ns, name string) *tributaryv1.ObjectMeta {
	return &tributaryv1.ObjectMeta{Namespace: ns, Name: name}
}

func diff(t *testing.T, want, got proto.Message) {
	t.Helper()
	if d := cmp.Diff(want, got, protocmp.Transform()); d != "" {
		t.Errorf("mismatch (-want +got):\n%s", d)
	}
}

func TestObject(t *testing.T) {
	es := &contour_v1alpha1.ExtensionService{ObjectMeta: meta("a", "es")}
	svc := &core_v1.Service{ObjectMeta: meta("a", "svc")}
	slice := &discovery_v1.EndpointSlice{ObjectMeta: meta("a", "slice")}
	secret := &core_v1.Secret{ObjectMeta: meta("a", "secret")}
	del := &contour_v1.TLSCertificateDelegation{ObjectMeta: meta("a", "del")}
	tests := map[string]struct {
		in     runtime.Object
		want   *tributaryv1.KubernetesObject
		wantOK bool
	}{
		"ExtensionService": {es, &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_ExtensionService{ExtensionService: ExtensionService(es)}}, true},
		"Service":          {svc, &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Service{Service: Service(svc)}}, true},
		"EndpointSlice":    {slice, &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_EndpointSlice{EndpointSlice: EndpointSlice(slice)}}, true},
		"Secret":           {secret, &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Secret{Secret: Secret(secret)}}, true},
		"TLSCertificateDelegation": {del, &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_TlsCertificateDelegation{
			TlsCertificateDelegation: TLSCertificateDelegation(del)}}, true},
		"other kind":             {&core_v1.ConfigMap{ObjectMeta: meta("a", "cm")}, nil, false},
		"nil of a known kind":    {(*core_v1.Service)(nil), nil, false},
		"nil interface":          {nil, nil, false},
		"a list of a known kind": {&contour_v1alpha1.ExtensionServiceList{}, nil, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := Object(tc.in)
			if ok != tc.wantOK {
				t.Errorf("ok = %v, want %v", ok, tc.wantOK)
			}
			diff(t, tc.want, got)
		})
	}
}

func TestSettings(t *testing.T) {
	tests := map[string]struct {
		in   *Config
		want *tributaryv1.Settings
	}{
		"nil means defaults": {},
		"empty":              {&Config{}, &tributaryv1.Settings{}},
		"values pass as written": {
			&Config{
				XDSClusterName: "contour/xds",
				ConnectTimeout: "not-a-duration",
				GlobalCircuitBreakers: &contour_v1alpha1.CircuitBreakers{
					MaxConnections: 10, MaxPendingRequests: 20, MaxRequests: 30, MaxRetries: 40, PerHostMaxConnections: 50,
				},
				ClientCertificate: "contour/envoy-client",
				UpstreamTLS: &contour_v1alpha1.EnvoyTLS{
					MinimumProtocolVersion: "1.2", MaximumProtocolVersion: "1.3",
					CipherSuites: []string{"ECDHE-ECDSA-AES128-GCM-SHA256"},
				},
				ExtensionDefaults:         &tributaryv1.ExtensionOptions{HealthCheck: &tributaryv1.HealthCheck{Interval: new("7s")}},
				EnableExternalNameTargets: true,
			},
			&tributaryv1.Settings{
				XdsClusterName: "contour/xds",
				ConnectTimeout: "not-a-duration",
				GlobalCircuitBreakers: &tributaryv1.CircuitBreakers{
					MaxConnections: 10, MaxPendingRequests: 20, MaxRequests: 30, MaxRetries: 40, PerHostMaxConnections: 50,
				},
				ClientCertificate: "contour/envoy-client",
				UpstreamTls: &tributaryv1.UpstreamTLS{
					MinimumProtocolVersion: "1.2", MaximumProtocolVersion: "1.3",
					CipherSuites: []string{"ECDHE-ECDSA-AES128-GCM-SHA256"},
				},
				ExtensionDefaults:         &tributaryv1.ExtensionOptions{HealthCheck: &tributaryv1.HealthCheck{Interval: new("7s")}},
				EnableExternalNameTargets: true,
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { diff(t, tc.want, Settings(tc.in)) })
	}
}

// TestNoAliasing proves the conversions copy: changing the input afterwards
// (as an informer's next update may) leaves the message untouched.
func TestNoAliasing(t *testing.T) {
	tcp := core_v1.ProtocolTCP
	slice := &discovery_v1.EndpointSlice{
		ObjectMeta:  meta_v1.ObjectMeta{Namespace: "a", Name: "s", Labels: map[string]string{"k": "v"}},
		AddressType: discovery_v1.AddressTypeIPv4,
		Endpoints:   []discovery_v1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discovery_v1.EndpointConditions{Ready: new(true)}}},
		Ports:       []discovery_v1.EndpointPort{{Name: new("p"), Port: new(int32(1)), Protocol: &tcp}},
	}
	secret := &core_v1.Secret{ObjectMeta: meta("a", "c"), Data: map[string][]byte{"ca.crt": []byte("CA")}}
	es := &contour_v1alpha1.ExtensionService{ObjectMeta: meta("a", "e"), Spec: contour_v1alpha1.ExtensionServiceSpec{
		Protocol:           new("h2c"),
		UpstreamValidation: &contour_v1.UpstreamValidation{SubjectNames: []string{"x"}},
	}}
	gotSlice, gotSecret, gotES := EndpointSlice(slice), Secret(secret), ExtensionService(es)
	wantSlice, wantSecret, wantES := proto.Clone(gotSlice), proto.Clone(gotSecret), proto.Clone(gotES)

	slice.Labels["k"] = "changed"
	slice.Endpoints[0].Addresses[0] = "10.9.9.9"
	*slice.Endpoints[0].Conditions.Ready = false
	*slice.Ports[0].Name, *slice.Ports[0].Port, tcp = "q", 2, core_v1.ProtocolUDP
	secret.Data["ca.crt"][0] = 'X'
	*es.Spec.Protocol = "h2"
	es.Spec.UpstreamValidation.SubjectNames[0] = "y"

	diff(t, wantSlice, gotSlice)
	diff(t, wantSecret, gotSecret)
	diff(t, wantES, gotES)
}

// TestKindTablesAgree fails when a kind has a row in objectkind's table
// (the API side) and none in kubernetesKinds, or the other way round.
func TestKindTablesAgree(t *testing.T) {
	var kinds []tributaryv1.ObjectKind
	for _, row := range kubernetesKinds {
		kinds = append(kinds, row.kind)
	}
	if !slices.Equal(kinds, objectkind.Kinds()) {
		t.Errorf("kubernetesKinds has %v, objectkind %v", kinds, objectkind.Kinds())
	}
}
