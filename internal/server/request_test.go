package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/source"
)

// TestDecodeRequest checks the conversion of a valid request field by field.
func TestDecodeRequest(t *testing.T) {
	esMeta := meta("ns", "ext")
	esMeta.Generation = 7
	req := &tributaryv1.TranslateRequest{
		Settings: &tributaryv1.Settings{
			XdsClusterName:        "xds/cluster",
			ConnectTimeout:        "1.5s",
			GlobalCircuitBreakers: &tributaryv1.CircuitBreakers{MaxConnections: 1, MaxPendingRequests: 2, MaxRequests: 3, MaxRetries: 4, PerHostMaxConnections: 5},
			ClientCertificate:     "certs/envoy-client",
			UpstreamTls:           &tributaryv1.UpstreamTLS{MinimumProtocolVersion: "1.2", MaximumProtocolVersion: "1.3", CipherSuites: []string{"ECDHE-ECDSA-AES128-GCM-SHA256"}},
		},
		Objects: []*tributaryv1.KubernetesObject{
			endpointSliceObject(sliceMeta("ns", "svc-abc", "svc"),
				[]*tributaryv1.EndpointPort{tcpPort("grpc", 9001), {}},
				// Only the first address and whether ready is false are kept;
				// an endpoint without an address is left out.
				&tributaryv1.Endpoint{Addresses: []string{"10.0.0.2", "10.0.0.3"}},
				&tributaryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: &tributaryv1.EndpointConditions{Ready: proto.Bool(false), Serving: proto.Bool(true), Terminating: proto.Bool(true)}},
				&tributaryv1.Endpoint{Conditions: &tributaryv1.EndpointConditions{Ready: proto.Bool(true)}},
				&tributaryv1.Endpoint{Addresses: []string{"10.0.0.4"}, Conditions: &tributaryv1.EndpointConditions{Ready: proto.Bool(true), Serving: proto.Bool(false), Terminating: proto.Bool(true)}},
				&tributaryv1.Endpoint{Addresses: []string{"10.0.0.5"}, Conditions: &tributaryv1.EndpointConditions{Serving: proto.Bool(false)}},
				&tributaryv1.Endpoint{Addresses: []string{""}},
			),
			extensionServiceObject(esMeta, &tributaryv1.ExtensionServiceSpec{
				Services:             []*tributaryv1.ExtensionServiceTarget{{Name: "svc", Port: 9000, Weight: 3}, {Name: "other", Port: 80}},
				Validation:           &tributaryv1.UpstreamValidation{CaSecret: "ca", SubjectName: "ext.example.com", SubjectNames: []string{"ext.example.com", "alt.example.com"}},
				Protocol:             proto.String("h2c"),
				LoadBalancerPolicy:   &tributaryv1.LoadBalancerPolicy{Strategy: "Random"},
				TimeoutPolicy:        &tributaryv1.TimeoutPolicy{Response: "10s", Idle: "1m", IdleConnection: "infinity"},
				ProtocolVersion:      "v3",
				CircuitBreakerPolicy: &tributaryv1.CircuitBreakers{MaxRequests: 9},
			}),
			serviceObject(meta("ns", "svc"), &tributaryv1.ServicePort{Name: "grpc", Port: 9000, TargetPort: "9001", Protocol: "TCP"}),
			extensionServiceObject(meta("ns", "bare"), nil),
			{Kind: &tributaryv1.KubernetesObject_Secret{Secret: &tributaryv1.Secret{Metadata: meta("ns", "ca"), Type: "Opaque", CaCrt: []byte("CA"), TlsCrt: []byte{}}}},
			{Kind: &tributaryv1.KubernetesObject_TlsCertificateDelegation{TlsCertificateDelegation: &tributaryv1.TLSCertificateDelegation{
				Metadata:    meta("certs", "delegate"),
				Delegations: []*tributaryv1.CertificateDelegation{{SecretName: "envoy-client", TargetNamespaces: []string{"*"}}},
			}}},
		},
	}
	wantSettings := source.Settings{
		XDSClusterName:        "xds/cluster",
		ConnectTimeout:        1500 * time.Millisecond,
		GlobalCircuitBreakers: &source.CircuitBreakers{MaxConnections: 1, MaxPendingRequests: 2, MaxRequests: 3, MaxRetries: 4, PerHostMaxConnections: 5},
		ClientCertificate:     &source.NamespacedName{Namespace: "certs", Name: "envoy-client"},
		UpstreamTLS:           &source.UpstreamTLS{MinimumProtocolVersion: "1.2", MaximumProtocolVersion: "1.3", CipherSuites: []string{"ECDHE-ECDSA-AES128-GCM-SHA256"}},
	}
	wantObjs := &source.Objects{
		ExtensionServices: []source.ExtensionService{{
			Meta: source.Meta{Namespace: "ns", Name: "ext", Generation: 7},
			Spec: source.ExtensionServiceSpec{
				Services:             []source.ExtensionServiceTarget{{Name: "svc", Port: 9000, Weight: 3}, {Name: "other", Port: 80}},
				Validation:           &source.UpstreamValidation{CASecret: "ca", SubjectName: "ext.example.com", SubjectNames: []string{"ext.example.com", "alt.example.com"}},
				Protocol:             proto.String("h2c"),
				LoadBalancerPolicy:   &source.LoadBalancerPolicy{Strategy: "Random"},
				TimeoutPolicy:        &source.TimeoutPolicy{Response: "10s", Idle: "1m", IdleConnection: "infinity"},
				ProtocolVersion:      "v3",
				CircuitBreakerPolicy: &source.CircuitBreakers{MaxRequests: 9},
			},
		}, {
			Meta: source.Meta{Namespace: "ns", Name: "bare"},
		}},
		Services: []source.Service{{
			Meta:  source.Meta{Namespace: "ns", Name: "svc"},
			Type:  "ClusterIP",
			Ports: []source.ServicePort{{Name: "grpc", Port: 9000, TargetPort: "9001", Protocol: "TCP"}},
		}},
		EndpointSlices: []source.EndpointSlice{{
			Meta:        source.Meta{Namespace: "ns", Name: "svc-abc"},
			Service:     "svc",
			AddressType: "IPv4",
			Endpoints: source.MakeEndpoints(
				source.Endpoint{Address: "10.0.0.2"},
				source.Endpoint{Address: "10.0.0.1", NotReady: true},
				source.Endpoint{Address: "10.0.0.4"},
				source.Endpoint{Address: "10.0.0.5"},
				source.Endpoint{Address: ""},
			),
			Ports: []source.EndpointPort{{Name: proto.String("grpc"), Port: proto.Int32(9001), Protocol: proto.String("TCP")}, {}},
		}},
		Secrets: []source.Secret{{Meta: source.Meta{Namespace: "ns", Name: "ca"}, Type: "Opaque", CACrt: []byte("CA")}},
		TLSCertificateDelegations: []source.TLSCertificateDelegation{{
			Meta:        source.Meta{Namespace: "certs", Name: "delegate"},
			Delegations: []source.CertificateDelegation{{SecretName: "envoy-client", TargetNamespaces: []string{"*"}}},
		}},
	}

	objs, settings, err := decodeRequest(req)
	if err != nil {
		t.Fatalf("decodeRequest: %v", err)
	}
	if diff := cmp.Diff(wantSettings, settings); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantObjs, objs); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	// Repeated fields share backing arrays; each must be capped so that an
	// append downstream cannot spill into the next object's elements.
	if got := objs.ExtensionServices[0].Spec.Services; cap(got) != len(got) {
		t.Errorf("spec.services: cap %d, len %d", cap(got), len(got))
	}
}

// TestDecodeRequestEmpty: an empty request is valid and means defaults.
func TestDecodeRequestEmpty(t *testing.T) {
	for _, req := range []*tributaryv1.TranslateRequest{nil, {}, {Settings: &tributaryv1.Settings{ConnectTimeout: "0s"}}} {
		objs, settings, err := decodeRequest(req)
		if err != nil {
			t.Fatalf("decodeRequest(%v): %v", req, err)
		}
		if diff := cmp.Diff(&source.Objects{
			ExtensionServices: []source.ExtensionService{}, Services: []source.Service{}, EndpointSlices: []source.EndpointSlice{},
			Secrets: []source.Secret{}, TLSCertificateDelegations: []source.TLSCertificateDelegation{},
		}, objs); diff != "" {
			t.Errorf("objects (-want +got):\n%s", diff)
		}
		if settings != (source.Settings{}) {
			t.Errorf("settings = %+v, want zero", settings)
		}
	}
}

// TestTranslateHonoursCancellation: a call whose context is already done
// does no work and reports the context's error.
func TestTranslateHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := NewTranslationService().Translate(ctx, &tributaryv1.TranslateRequest{})
	if status.Code(err) != codes.Canceled {
		t.Errorf("got %v, want Canceled", err)
	}
	ctx, cancel = context.WithDeadline(t.Context(), time.Unix(0, 0))
	defer cancel()
	_, err = NewTranslationService().Translate(ctx, &tributaryv1.TranslateRequest{})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("got %v, want DeadlineExceeded", err)
	}
}

// BenchmarkDecodeRequest decodes two million endpoints in 20,000 slices of
// 100, the scale the API is sized for. Allocations grow with the number of
// objects, not endpoints.
func BenchmarkDecodeRequest(b *testing.B) {
	req := &tributaryv1.TranslateRequest{}
	for s := range 20_000 {
		var endpoints []*tributaryv1.Endpoint
		for e := range 100 {
			endpoints = append(endpoints, &tributaryv1.Endpoint{
				Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", s/256, s%256, e)},
				Conditions: &tributaryv1.EndpointConditions{Ready: proto.Bool(true)},
			})
		}
		req.Objects = append(req.Objects, endpointSliceObject(sliceMeta("ns", fmt.Sprintf("svc-%d-x", s), fmt.Sprintf("svc-%d", s)),
			[]*tributaryv1.EndpointPort{tcpPort("grpc", 9000)}, endpoints...))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := decodeRequest(req); err != nil {
			b.Fatal(err)
		}
	}
}
