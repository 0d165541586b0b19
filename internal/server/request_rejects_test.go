package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/source"
)

type violation struct{ field, reason, description string }

// TestDecodeRequestRejects sends malformed requests over gRPC and checks the
// exact status: code, message and every BadRequest field violation.
func TestDecodeRequestRejects(t *testing.T) {
	target := func(port int32) *tributaryv1.ExtensionServiceSpec {
		return &tributaryv1.ExtensionServiceSpec{Services: []*tributaryv1.ExtensionServiceTarget{{Name: "svc", Port: 443}, {Name: "svc", Port: port}}}
	}
	manyBadPorts := make([]*tributaryv1.KubernetesObject, 20)
	for i := range manyBadPorts {
		manyBadPorts[i] = serviceObject(meta("ns", fmt.Sprintf("s%d", i)), &tributaryv1.ServicePort{})
	}
	var manyViolations []violation
	for i := range maxReportedViolations {
		manyViolations = append(manyViolations, violation{
			fmt.Sprintf(`objects[%d].service.spec.ports[0].port`, i), ReasonOutOfRange,
			fmt.Sprintf(`objects[%d] (Service "ns/s%d"): spec.ports[0].port 0 is outside 1..65535`, i, i),
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
		// Every Cluster repeats the name: 16 KB names made 4,000
		// ExtensionServices a 133 MB response.
		name:    "xDS cluster name too long",
		req:     &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{XdsClusterName: strings.Repeat("c", 254)}},
		wantMsg: `settings.xdsClusterName is 254 bytes long; ` + xdsClusterNameLimit.why,
		want:    []violation{{"settings.xdsClusterName", ReasonOutOfRange, `settings.xdsClusterName is 254 bytes long; ` + xdsClusterNameLimit.why}},
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
		req:     &tributaryv1.TranslateRequest{Objects: manyBadPorts},
		wantMsg: `objects[0] (Service "ns/s0"): spec.ports[0].port 0 is outside 1..65535 (and 19 more problems)`,
		want:    manyViolations,
	}, {
		name:    "long values are shortened",
		req:     &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{ClientCertificate: strings.Repeat("x", 300)}},
		wantMsg: `settings.clientCertificate "` + strings.Repeat("x", source.MaxQuotedBytes) + `"... is not "namespace/name"`,
		want:    []violation{{"settings.clientCertificate", ReasonInvalidFormat, `settings.clientCertificate "` + strings.Repeat("x", source.MaxQuotedBytes) + `"... is not "namespace/name"`}},
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
