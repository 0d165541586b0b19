package server

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// TestDecodeRequestLimits: each string Kubernetes bounds, and each setting,
// is refused past its limit with InvalidArgument naming the field, and
// accepted at it.
func TestDecodeRequestLimits(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	es := func(spec *tributaryv1.ExtensionServiceSpec) []*tributaryv1.KubernetesObject {
		return []*tributaryv1.KubernetesObject{extensionServiceObject(meta("ns", "ext"), spec)}
	}
	labelled := func(labels map[string]string) []*tributaryv1.KubernetesObject {
		m := meta("ns", "svc")
		m.Labels = labels
		return []*tributaryv1.KubernetesObject{serviceObject(m)}
	}
	const esRef = `objects[0] (ExtensionService "ns/ext"): `
	tests := []struct {
		name       string
		over, at   *tributaryv1.TranslateRequest
		field, msg string
		reason     string
	}{{
		name:  "CA Secret reference",
		over:  &tributaryv1.TranslateRequest{Objects: es(&tributaryv1.ExtensionServiceSpec{Validation: &tributaryv1.UpstreamValidation{CaSecret: long(318)}})},
		at:    &tributaryv1.TranslateRequest{Objects: es(&tributaryv1.ExtensionServiceSpec{Validation: &tributaryv1.UpstreamValidation{CaSecret: long(317)}})},
		field: "objects[0].extensionService.spec.validation.caSecret",
		msg:   esRef + "spec.validation.caSecret is 318 bytes long; " + caSecretLimit.why,
	}, {
		name:  "subject name",
		over:  &tributaryv1.TranslateRequest{Objects: es(&tributaryv1.ExtensionServiceSpec{Validation: &tributaryv1.UpstreamValidation{SubjectName: long(256)}})},
		at:    &tributaryv1.TranslateRequest{Objects: es(&tributaryv1.ExtensionServiceSpec{Validation: &tributaryv1.UpstreamValidation{SubjectName: long(255)}})},
		field: "objects[0].extensionService.spec.validation.subjectName",
		msg:   esRef + "spec.validation.subjectName is 256 bytes long; " + subjectNameLimit.why,
	}, {
		name:  "protocol",
		over:  &tributaryv1.TranslateRequest{Objects: es(&tributaryv1.ExtensionServiceSpec{Protocol: proto.String(long(33))})},
		at:    &tributaryv1.TranslateRequest{Objects: es(&tributaryv1.ExtensionServiceSpec{Protocol: proto.String(long(32))})},
		field: "objects[0].extensionService.spec.protocol",
		msg:   esRef + "spec.protocol is 33 bytes long; " + keywordLimit.why,
	}, {
		name:   "label value",
		over:   &tributaryv1.TranslateRequest{Objects: labelled(map[string]string{"app": long(64), "b": "ok"})},
		at:     &tributaryv1.TranslateRequest{Objects: labelled(map[string]string{"app": long(63), "example.com/b": ""})},
		field:  `objects[0].service.metadata.labels["app"]`,
		msg:    `objects[0] (Service "ns/svc"): metadata.labels["app"] "` + long(64) + `" is not a valid label value (` + labelValueRule + ")",
		reason: ReasonInvalidName,
	}, {
		name:   "label key",
		over:   &tributaryv1.TranslateRequest{Objects: labelled(map[string]string{"Example.com/x": "v"})},
		at:     &tributaryv1.TranslateRequest{Objects: labelled(map[string]string{"example.com/X_y.z": "v"})},
		field:  `objects[0].service.metadata.labels["Example.com/x"]`,
		msg:    `objects[0] (Service "ns/svc"): metadata.labels["Example.com/x"] has an invalid key (` + labelKeyRule + ")",
		reason: ReasonInvalidName,
	}, {
		name: "endpoint address",
		over: &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{endpointSliceObject(sliceMeta("ns", "s", "svc"), nil,
			&tributaryv1.Endpoint{Addresses: []string{"10.0.0.1", long(254)}})}},
		at: &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{endpointSliceObject(sliceMeta("ns", "s", "svc"), nil,
			&tributaryv1.Endpoint{Addresses: []string{"10.0.0.1", long(253)}})}},
		field: "objects[0].endpointSlice.endpoints[0].addresses[1]",
		msg:   `objects[0] (EndpointSlice "ns/s"): endpoints[0].addresses[1] is 254 bytes long; ` + addressLimit.why,
	}, {
		name: "EndpointSlice port name",
		over: &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{endpointSliceObject(sliceMeta("ns", "s", "svc"),
			[]*tributaryv1.EndpointPort{{Name: proto.String("grpc")}, {Name: proto.String(long(64))}})}},
		at: &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{endpointSliceObject(sliceMeta("ns", "s", "svc"),
			[]*tributaryv1.EndpointPort{{Name: proto.String("grpc")}, {Name: proto.String(long(63))}})}},
		field: "objects[0].endpointSlice.ports[1].name",
		msg:   `objects[0] (EndpointSlice "ns/s"): ports[1].name is 64 bytes long; ` + portNameLimit.why,
	}, {
		name: "EndpointSlice port protocol",
		over: &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{endpointSliceObject(sliceMeta("ns", "s", "svc"),
			[]*tributaryv1.EndpointPort{{Protocol: proto.String(long(33))}})}},
		at: &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{endpointSliceObject(sliceMeta("ns", "s", "svc"),
			[]*tributaryv1.EndpointPort{{Protocol: proto.String(long(32))}})}},
		field: "objects[0].endpointSlice.ports[0].protocol",
		msg:   `objects[0] (EndpointSlice "ns/s"): ports[0].protocol is 33 bytes long; ` + keywordLimit.why,
	}, {
		name: "addresses of one endpoint",
		over: &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{endpointSliceObject(sliceMeta("ns", "s", "svc"), nil,
			&tributaryv1.Endpoint{Addresses: make([]string, 101)})}},
		at: &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{endpointSliceObject(sliceMeta("ns", "s", "svc"), nil,
			&tributaryv1.Endpoint{Addresses: make([]string, 100)})}},
		field: "objects[0].endpointSlice.endpoints[0].addresses",
		msg:   `objects[0] (EndpointSlice "ns/s"): endpoints[0].addresses holds 101 addresses; Kubernetes allows at most 100 per endpoint`,
	}, {
		name: "Secret data",
		over: &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{{Kind: &tributaryv1.KubernetesObject_Secret{Secret: &tributaryv1.Secret{
			Metadata: meta("ns", "ca"), CaCrt: make([]byte, 1<<19), TlsCrt: make([]byte, 1<<19+1)}}}}},
		at: &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{{Kind: &tributaryv1.KubernetesObject_Secret{Secret: &tributaryv1.Secret{
			Metadata: meta("ns", "ca"), CaCrt: make([]byte, 1<<19), TlsCrt: make([]byte, 1<<19)}}}}},
		field: "objects[0].secret.data",
		msg:   `objects[0] (Secret "ns/ca"): data holds 1048577 bytes of ca.crt and tls.crt; Kubernetes stores at most 1048576 bytes of data in a Secret`,
	}, {
		name: "delegated namespace",
		over: &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{{Kind: &tributaryv1.KubernetesObject_TlsCertificateDelegation{TlsCertificateDelegation: &tributaryv1.TLSCertificateDelegation{
			Metadata: meta("ns", "d"), Delegations: []*tributaryv1.CertificateDelegation{{SecretName: "ca", TargetNamespaces: []string{"*", long(64)}}}}}}}},
		at: &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{{Kind: &tributaryv1.KubernetesObject_TlsCertificateDelegation{TlsCertificateDelegation: &tributaryv1.TLSCertificateDelegation{
			Metadata: meta("ns", "d"), Delegations: []*tributaryv1.CertificateDelegation{{SecretName: "ca", TargetNamespaces: []string{"*", long(63)}}}}}}}},
		field: "objects[0].tlsCertificateDelegation.delegations[0].targetNamespaces[1]",
		msg:   `objects[0] (TLSCertificateDelegation "ns/d"): delegations[0].targetNamespaces[1] is 64 bytes long; ` + namespaceLimit.why,
	}, {
		// 1,024 suites of 1 KB for 2,000 ExtensionServices took 4.7 GB.
		name:  "cipher suites",
		over:  &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{UpstreamTls: &tributaryv1.UpstreamTLS{CipherSuites: make([]string, 65)}}},
		at:    &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{UpstreamTls: &tributaryv1.UpstreamTLS{CipherSuites: make([]string, 64)}}},
		field: "settings.upstreamTls.cipherSuites",
		msg:   `settings.upstreamTls.cipherSuites holds 65 names; at most 64: BoringSSL knows fewer than 30 cipher suites, and every h2 Cluster repeats the list`,
	}, {
		name:  "one cipher suite",
		over:  &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{UpstreamTls: &tributaryv1.UpstreamTLS{CipherSuites: []string{"ECDHE-RSA-AES128-GCM-SHA256", long(129)}}}},
		at:    &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{UpstreamTls: &tributaryv1.UpstreamTLS{CipherSuites: []string{"ECDHE-RSA-AES128-GCM-SHA256", long(128)}}}},
		field: "settings.upstreamTls.cipherSuites[1]",
		msg:   `settings.upstreamTls.cipherSuites[1] is 129 bytes long; ` + cipherSuiteLimit.why,
	}, {
		name:  "connect timeout",
		over:  &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{ConnectTimeout: strings.Repeat("1", 63) + "s" + "0"}},
		at:    &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{ConnectTimeout: strings.Repeat("0", 62) + "1s"}},
		field: "settings.connectTimeout",
		msg:   `settings.connectTimeout is 65 bytes long; ` + durationLimit.why,
	}}
	translation := tributaryv1.NewTranslationServiceClient(dialBufconn(t, NewGRPCServer(quietOptions())))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason := tt.reason
			if reason == "" {
				reason = ReasonOutOfRange
			}
			_, err := translation.Translate(t.Context(), tt.over)
			checkInvalidArgument(t, err, tt.msg, []violation{{tt.field, reason, tt.msg}})
			if _, err := translation.Translate(t.Context(), tt.at); err != nil {
				t.Errorf("at the limit: %v", err)
			}
		})
	}
}
