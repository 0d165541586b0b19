package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/source"
)

func meta(ns, name string) *tributaryv1.ObjectMeta {
	return &tributaryv1.ObjectMeta{Namespace: ns, Name: name}
}

func extensionServiceObject(m *tributaryv1.ObjectMeta, spec *tributaryv1.ExtensionServiceSpec) *tributaryv1.KubernetesObject {
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_ExtensionService{
		ExtensionService: &tributaryv1.ExtensionService{Metadata: m, Spec: spec}}}
}

func serviceObject(m *tributaryv1.ObjectMeta, ports ...*tributaryv1.ServicePort) *tributaryv1.KubernetesObject {
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Service{
		Service: &tributaryv1.Service{Metadata: m, Spec: &tributaryv1.ServiceSpec{Type: "ClusterIP", Ports: ports}}}}
}

func endpointSliceObject(m *tributaryv1.ObjectMeta, ports []*tributaryv1.EndpointPort, endpoints ...*tributaryv1.Endpoint) *tributaryv1.KubernetesObject {
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_EndpointSlice{
		EndpointSlice: &tributaryv1.EndpointSlice{Metadata: m, AddressType: "IPv4", Endpoints: endpoints, Ports: ports}}}
}

func secretObject(m *tributaryv1.ObjectMeta) *tributaryv1.KubernetesObject {
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Secret{
		Secret: &tributaryv1.Secret{Metadata: m, Type: "kubernetes.io/tls"}}}
}

func delegationObject(m *tributaryv1.ObjectMeta) *tributaryv1.KubernetesObject {
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_TlsCertificateDelegation{
		TlsCertificateDelegation: &tributaryv1.TLSCertificateDelegation{Metadata: m}}}
}

// sliceMeta is the metadata of an EndpointSlice of Service svc.
func sliceMeta(ns, name, svc string) *tributaryv1.ObjectMeta {
	m := meta(ns, name)
	m.Labels = map[string]string{source.ServiceNameLabel: svc}
	return m
}

func tcpPort(name string, port int32) *tributaryv1.EndpointPort {
	return &tributaryv1.EndpointPort{Name: proto.String(name), Port: proto.Int32(port), Protocol: proto.String("TCP")}
}

type violation struct{ field, reason, description string }

// TestDecodeRequestRejects sends malformed requests over gRPC and checks the
// exact status: code, message and every BadRequest field violation.
func TestDecodeRequestRejects(t *testing.T) {
	target := func(port int32) *tributaryv1.ExtensionServiceSpec {
		return &tributaryv1.ExtensionServiceSpec{Services: []*tributaryv1.ExtensionServiceTarget{{Name: "svc", Port: 443}, {Name: "svc", Port: port}}}
	}
	manyUnlabelled := make([]*tributaryv1.KubernetesObject, 20)
	for i := range manyUnlabelled {
		manyUnlabelled[i] = endpointSliceObject(meta("ns", fmt.Sprintf("s%d", i)), nil)
	}
	var manyViolations []violation
	for i := range maxReportedViolations {
		manyViolations = append(manyViolations, violation{
			fmt.Sprintf(`objects[%d].endpointSlice.metadata.labels["kubernetes.io/service-name"]`, i), ReasonRequired,
			fmt.Sprintf(`objects[%d] (EndpointSlice "ns/s%d"): metadata.labels["kubernetes.io/service-name"] is required`, i, i),
		})
	}

	tests := []struct {
		name    string
		req     *tributaryv1.TranslateRequest
		wantMsg string
		want    []violation
	}{{
		name:    "object without kind",
		req:     &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{serviceObject(meta("ns", "a")), {}}},
		wantMsg: "objects[1]: kind is required (one of extensionService, service, endpointSlice, secret, tlsCertificateDelegation)",
		want:    []violation{{"objects[1]", ReasonRequired, "objects[1]: kind is required (one of extensionService, service, endpointSlice, secret, tlsCertificateDelegation)"}},
	}, {
		name:    "missing metadata",
		req:     &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{secretObject(nil)}},
		wantMsg: "objects[0] (Secret): metadata is required",
		want:    []violation{{"objects[0].secret.metadata", ReasonRequired, "objects[0] (Secret): metadata is required"}},
	}, {
		name:    "missing namespace",
		req:     &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{delegationObject(meta("", "d"))}},
		wantMsg: "objects[0] (TLSCertificateDelegation): metadata.namespace is required",
		want:    []violation{{"objects[0].tlsCertificateDelegation.metadata.namespace", ReasonRequired, "objects[0] (TLSCertificateDelegation): metadata.namespace is required"}},
	}, {
		name:    "missing name",
		req:     &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{extensionServiceObject(meta("ns", ""), nil)}},
		wantMsg: "objects[0] (ExtensionService): metadata.name is required",
		want:    []violation{{"objects[0].extensionService.metadata.name", ReasonRequired, "objects[0] (ExtensionService): metadata.name is required"}},
	}, {
		// A "/" in a namespace or name would make "extension/<ns>/<name>"
		// ambiguous between two ExtensionServices.
		name:    "namespace with a slash",
		req:     &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{extensionServiceObject(meta("a/b", "c"), nil)}},
		wantMsg: `objects[0] (ExtensionService "a/b/c"): metadata.namespace "a/b" is not a valid namespace (` + dns1123LabelRule + ")",
		want:    []violation{{"objects[0].extensionService.metadata.namespace", ReasonInvalidName, `objects[0] (ExtensionService "a/b/c"): metadata.namespace "a/b" is not a valid namespace (` + dns1123LabelRule + ")"}},
	}, {
		name:    "name with upper case and a control character",
		req:     &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{serviceObject(meta("ns", "Svc\n"))}},
		wantMsg: `objects[0] (Service "ns/Svc\n"): metadata.name "Svc\n" is not a valid name (` + dns1123SubdomainRule + ")",
		want:    []violation{{"objects[0].service.metadata.name", ReasonInvalidName, `objects[0] (Service "ns/Svc\n"): metadata.name "Svc\n" is not a valid name (` + dns1123SubdomainRule + ")"}},
	}, {
		name: "duplicate within a kind",
		req: &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{
			serviceObject(meta("ns", "a")),
			extensionServiceObject(meta("ns", "a"), target(80)), // another kind may share the name
			serviceObject(meta("other", "a")),                   // another namespace may too
			serviceObject(meta("ns", "a")),
		}},
		wantMsg: `objects[3] (Service "ns/a"): metadata.name duplicates objects[0]: two Services have the same namespace and name`,
		want:    []violation{{"objects[3].service.metadata.name", ReasonDuplicate, `objects[3] (Service "ns/a"): metadata.name duplicates objects[0]: two Services have the same namespace and name`}},
	}, {
		name:    "EndpointSlice without its Service label",
		req:     &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{endpointSliceObject(meta("ns", "name"), nil)}},
		wantMsg: `objects[0] (EndpointSlice "ns/name"): metadata.labels["kubernetes.io/service-name"] is required`,
		want:    []violation{{`objects[0].endpointSlice.metadata.labels["kubernetes.io/service-name"]`, ReasonRequired, `objects[0] (EndpointSlice "ns/name"): metadata.labels["kubernetes.io/service-name"] is required`}},
	}, {
		name:    "target port zero",
		req:     &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{extensionServiceObject(meta("ns", "ext"), target(0))}},
		wantMsg: `objects[0] (ExtensionService "ns/ext"): spec.services[1].port 0 is outside 1..65535`,
		want:    []violation{{"objects[0].extensionService.spec.services[1].port", ReasonOutOfRange, `objects[0] (ExtensionService "ns/ext"): spec.services[1].port 0 is outside 1..65535`}},
	}, {
		name:    "target port above range",
		req:     &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{extensionServiceObject(meta("ns", "ext"), target(65536))}},
		wantMsg: `objects[0] (ExtensionService "ns/ext"): spec.services[1].port 65536 is outside 1..65535`,
		want:    []violation{{"objects[0].extensionService.spec.services[1].port", ReasonOutOfRange, `objects[0] (ExtensionService "ns/ext"): spec.services[1].port 65536 is outside 1..65535`}},
	}, {
		name:    "service port out of range",
		req:     &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{serviceObject(meta("ns", "svc"), &tributaryv1.ServicePort{Port: 80}, &tributaryv1.ServicePort{Port: -1})}},
		wantMsg: `objects[0] (Service "ns/svc"): spec.ports[1].port -1 is outside 1..65535`,
		want:    []violation{{"objects[0].service.spec.ports[1].port", ReasonOutOfRange, `objects[0] (Service "ns/svc"): spec.ports[1].port -1 is outside 1..65535`}},
	}, {
		name: "endpoint slice port out of range",
		req: &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{endpointSliceObject(sliceMeta("ns", "s", "svc"),
			[]*tributaryv1.EndpointPort{{}, tcpPort("grpc", 70000)})}},
		wantMsg: `objects[0] (EndpointSlice "ns/s"): ports[1].port 70000 is outside 1..65535`,
		want:    []violation{{"objects[0].endpointSlice.ports[1].port", ReasonOutOfRange, `objects[0] (EndpointSlice "ns/s"): ports[1].port 70000 is outside 1..65535`}},
	}, {
		name:    "unparsable connect timeout",
		req:     &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{ConnectTimeout: "abc"}},
		wantMsg: `settings.connectTimeout: time: invalid duration "abc"`,
		want:    []violation{{"settings.connectTimeout", ReasonInvalidDuration, `settings.connectTimeout: time: invalid duration "abc"`}},
	}, {
		name:    "negative connect timeout",
		req:     &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{ConnectTimeout: "-1s"}},
		wantMsg: `settings.connectTimeout "-1s" is negative`,
		want:    []violation{{"settings.connectTimeout", ReasonOutOfRange, `settings.connectTimeout "-1s" is negative`}},
	}, {
		name:    "client certificate without namespace",
		req:     &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{ClientCertificate: "envoy-client"}},
		wantMsg: `settings.clientCertificate "envoy-client" is not "namespace/name"`,
		want:    []violation{{"settings.clientCertificate", ReasonInvalidFormat, `settings.clientCertificate "envoy-client" is not "namespace/name"`}},
	}, {
		name:    "client certificate with two slashes",
		req:     &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{ClientCertificate: "a/b/c"}},
		wantMsg: `settings.clientCertificate "a/b/c" is not "namespace/name"`,
		want:    []violation{{"settings.clientCertificate", ReasonInvalidFormat, `settings.clientCertificate "a/b/c" is not "namespace/name"`}},
	}, {
		name:    "client certificate with an empty name",
		req:     &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{ClientCertificate: "ns/"}},
		wantMsg: `settings.clientCertificate "ns/": name "" is not a valid name (` + dns1123SubdomainRule + ")",
		want:    []violation{{"settings.clientCertificate", ReasonInvalidName, `settings.clientCertificate "ns/": name "" is not a valid name (` + dns1123SubdomainRule + ")"}},
	}, {
		name:    "xDS cluster name with a newline",
		req:     &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{XdsClusterName: "contour\nx"}},
		wantMsg: `settings.xdsClusterName "contour\nx" contains a control character`,
		want:    []violation{{"settings.xdsClusterName", ReasonInvalidCharacters, `settings.xdsClusterName "contour\nx" contains a control character`}},
	}, {
		name:    "xDS cluster name too long for an authority",
		req:     &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{XdsClusterName: strings.Repeat("c", maxAuthorityLen+1)}},
		wantMsg: `settings.xdsClusterName is 16385 bytes long; Envoy takes at most 16384 in an HTTP authority`,
		want:    []violation{{"settings.xdsClusterName", ReasonOutOfRange, `settings.xdsClusterName is 16385 bytes long; Envoy takes at most 16384 in an HTTP authority`}},
	}, {
		name: "every problem is reported, settings first",
		req: &tributaryv1.TranslateRequest{
			Settings: &tributaryv1.Settings{ConnectTimeout: "5 seconds"},
			Objects:  []*tributaryv1.KubernetesObject{serviceObject(meta("ns", "a"), &tributaryv1.ServicePort{}), serviceObject(meta("ns", "a"))},
		},
		wantMsg: `settings.connectTimeout: time: unknown unit " seconds" in duration "5 seconds" (and 2 more problems)`,
		want: []violation{
			{"settings.connectTimeout", ReasonInvalidDuration, `settings.connectTimeout: time: unknown unit " seconds" in duration "5 seconds"`},
			{"objects[0].service.spec.ports[0].port", ReasonOutOfRange, `objects[0] (Service "ns/a"): spec.ports[0].port 0 is outside 1..65535`},
			{"objects[1].service.metadata.name", ReasonDuplicate, `objects[1] (Service "ns/a"): metadata.name duplicates objects[0]: two Services have the same namespace and name`},
		},
	}, {
		name:    "violations are capped, the count is not",
		req:     &tributaryv1.TranslateRequest{Objects: manyUnlabelled},
		wantMsg: `objects[0] (EndpointSlice "ns/s0"): metadata.labels["kubernetes.io/service-name"] is required (and 19 more problems)`,
		want:    manyViolations,
	}, {
		name:    "long values are shortened",
		req:     &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{ClientCertificate: strings.Repeat("x", 300)}},
		wantMsg: `settings.clientCertificate "` + strings.Repeat("x", maxQuoted) + `"... is not "namespace/name"`,
		want:    []violation{{"settings.clientCertificate", ReasonInvalidFormat, `settings.clientCertificate "` + strings.Repeat("x", maxQuoted) + `"... is not "namespace/name"`}},
	}}

	translation := tributaryv1.NewTranslationServiceClient(dialBufconn(t, NewGRPCServer(quietOptions())))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := translation.Translate(t.Context(), tt.req)
			checkInvalidArgument(t, err, tt.wantMsg, tt.want)
		})
	}
}

// checkInvalidArgument asserts err is InvalidArgument with exactly wantMsg
// and exactly the want field violations.
func checkInvalidArgument(t *testing.T, err error, wantMsg string, want []violation) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument {
		t.Fatalf("got error %v, want InvalidArgument", err)
	}
	if st.Message() != wantMsg {
		t.Errorf("message:\n got %s\nwant %s", st.Message(), wantMsg)
	}
	wantBR := &errdetails.BadRequest{}
	for _, v := range want {
		wantBR.FieldViolations = append(wantBR.FieldViolations, &errdetails.BadRequest_FieldViolation{Field: v.field, Reason: v.reason, Description: v.description})
	}
	details := st.Details()
	if len(details) != 1 {
		t.Fatalf("got details %v, want one BadRequest", details)
	}
	got, ok := details[0].(*errdetails.BadRequest)
	if !ok {
		t.Fatalf("got detail %T, want *errdetails.BadRequest", details[0])
	}
	if diff := cmp.Diff(wantBR, got, protocmp.Transform()); diff != "" {
		t.Errorf("BadRequest (-want +got):\n%s", diff)
	}
}

// TestDecodeRequestRejectsInProcess covers what only an in-process caller
// (the command line) can send: nil entries in repeated fields and a oneof
// case holding a nil message.
func TestDecodeRequestRejectsInProcess(t *testing.T) {
	tests := []struct {
		name    string
		req     *tributaryv1.TranslateRequest
		wantMsg string
		want    []violation
	}{{
		name:    "nil object",
		req:     &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{nil}},
		wantMsg: "objects[0]: kind is required (one of extensionService, service, endpointSlice, secret, tlsCertificateDelegation)",
		want:    []violation{{"objects[0]", ReasonRequired, "objects[0]: kind is required (one of extensionService, service, endpointSlice, secret, tlsCertificateDelegation)"}},
	}, {
		name:    "nil message in the oneof",
		req:     &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{{Kind: &tributaryv1.KubernetesObject_EndpointSlice{}}}},
		wantMsg: "objects[0] (EndpointSlice): metadata is required",
		want:    []violation{{"objects[0].endpointSlice.metadata", ReasonRequired, "objects[0] (EndpointSlice): metadata is required"}},
	}, {
		name: "nil entries in repeated fields",
		req: &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{
			extensionServiceObject(meta("ns", "ext"), &tributaryv1.ExtensionServiceSpec{Services: []*tributaryv1.ExtensionServiceTarget{nil}}),
			endpointSliceObject(sliceMeta("ns", "s", "svc"), []*tributaryv1.EndpointPort{nil}, nil),
		}},
		wantMsg: `objects[0] (ExtensionService "ns/ext"): spec.services[0].port 0 is outside 1..65535`,
		want:    []violation{{"objects[0].extensionService.spec.services[0].port", ReasonOutOfRange, `objects[0] (ExtensionService "ns/ext"): spec.services[0].port 0 is outside 1..65535`}},
	}, {
		name:    "invalid UTF-8 in the xDS cluster name",
		req:     &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{XdsClusterName: "con\xfftour"}},
		wantMsg: `settings.xdsClusterName "con\xfftour" is not valid UTF-8`,
		want:    []violation{{"settings.xdsClusterName", ReasonInvalidCharacters, `settings.xdsClusterName "con\xfftour" is not valid UTF-8`}},
	}}
	svc := NewTranslationService()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.Translate(t.Context(), tt.req)
			checkInvalidArgument(t, err, tt.wantMsg, tt.want)
		})
	}
}

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
				&tributaryv1.Endpoint{Addresses: []string{"10.0.0.2", "10.0.0.3"}},
				&tributaryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: &tributaryv1.EndpointConditions{Ready: proto.Bool(false), Serving: proto.Bool(true), Terminating: proto.Bool(true)}},
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
			Meta:        source.Meta{Namespace: "ns", Name: "svc-abc", Labels: map[string]string{source.ServiceNameLabel: "svc"}},
			AddressType: "IPv4",
			Endpoints: []source.Endpoint{
				{Addresses: []string{"10.0.0.2", "10.0.0.3"}},
				{Addresses: []string{"10.0.0.1"}, Ready: proto.Bool(false), Serving: proto.Bool(true), Terminating: proto.Bool(true)},
			},
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
	if got := objs.EndpointSlices[0].Endpoints; cap(got) != len(got) {
		t.Errorf("endpoints: cap %d, len %d", cap(got), len(got))
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
