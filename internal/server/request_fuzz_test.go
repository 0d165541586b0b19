package server

import (
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// maxErrorText bounds a message or violation description of a refused
// request, whatever the request holds: a few quoted strings and a rule.
const maxErrorText = 2048

// FuzzDecodeRequest decodes whatever TranslateRequest the input unmarshals
// to. A request that passes holds nothing past the limits; one that fails
// fails with InvalidArgument and an error whose size does not grow with
// the request's.
func FuzzDecodeRequest(f *testing.F) {
	long := strings.Repeat("x", 300)
	for _, req := range []*tributaryv1.TranslateRequest{
		smallRequest(),
		{Settings: &tributaryv1.Settings{XdsClusterName: long, UpstreamTls: &tributaryv1.UpstreamTLS{CipherSuites: []string{long}}}},
		{Settings: &tributaryv1.Settings{UpstreamTls: &tributaryv1.UpstreamTLS{CipherSuites: make([]string, 70)}}},
		{Objects: []*tributaryv1.KubernetesObject{extensionServiceObject(meta("ns", "ext"), &tributaryv1.ExtensionServiceSpec{
			Services:   []*tributaryv1.ExtensionServiceTarget{{Name: long, Port: 80}},
			Validation: &tributaryv1.UpstreamValidation{CaSecret: long, SubjectName: long},
			Protocol:   proto.String(long),
		})}},
		{Objects: []*tributaryv1.KubernetesObject{straySlice("stray", map[string]string{long: long, "a/b/c": "-"})}},
	} {
		b, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req := &tributaryv1.TranslateRequest{}
		if proto.Unmarshal(data, req) != nil {
			return
		}
		objs, settings, err := decodeRequest(req)
		if err != nil {
			checkBoundedRefusal(t, err)
			return
		}
		if xdsClusterNameLimit.tooLong(settings.XDSClusterName) {
			t.Errorf("accepted an xdsClusterName of %d bytes", len(settings.XDSClusterName))
		}
		if tls := settings.UpstreamTLS; tls != nil && len(tls.CipherSuites) > maxCipherSuites {
			t.Errorf("accepted %d cipher suites", len(tls.CipherSuites))
		}
		for _, es := range objs.ExtensionServices {
			if v := es.Spec.Validation; v != nil && (caSecretLimit.tooLong(v.CASecret) || subjectNameLimit.tooLong(v.SubjectName)) {
				t.Errorf("accepted a caSecret of %d bytes and a subjectName of %d", len(v.CASecret), len(v.SubjectName))
			}
		}
		// Labels are checked and then dropped (but for a slice's service
		// name), so an accepted request's own must all be valid.
		for _, o := range req.GetObjects() {
			for _, object := range []interface {
				GetMetadata() *tributaryv1.ObjectMeta
			}{
				o.GetExtensionService(), o.GetService(), o.GetEndpointSlice(), o.GetSecret(), o.GetTlsCertificateDelegation(),
			} {
				for k, v := range object.GetMetadata().GetLabels() {
					if !isQualifiedName(k) || !isLabelValue(v) {
						t.Errorf("accepted the label %q=%q", k, v)
					}
				}
			}
		}
	})
}

// checkBoundedRefusal asserts err is InvalidArgument with a bounded message
// and at most maxReportedViolations bounded violations.
func checkBoundedRefusal(t *testing.T, err error) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("refused with %v, want InvalidArgument", err)
	}
	if len(st.Message()) > maxErrorText {
		t.Errorf("message of %d bytes", len(st.Message()))
	}
	for _, d := range st.Details() {
		br, ok := d.(*errdetails.BadRequest)
		if !ok {
			continue
		}
		if len(br.GetFieldViolations()) > maxReportedViolations {
			t.Errorf("%d violations", len(br.GetFieldViolations()))
		}
		for _, v := range br.GetFieldViolations() {
			if len(v.GetDescription()) > maxErrorText || len(v.GetField()) > maxErrorText {
				t.Errorf("violation of %d+%d bytes", len(v.GetField()), len(v.GetDescription()))
			}
		}
	}
}
