package server

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// TestUnboundedFieldsReachTheStatus: the ExtensionService strings that
// Contour's CRD does not bound (a target's name, subjectNames past the
// first, the timeouts, the load balancer strategy) are not the request's
// to refuse. A 1 MiB one makes that ExtensionService invalid, or is read
// as it is, in its status, with a message that quotes at most 100 bytes of
// it; a valid ExtensionService beside it is still translated.
func TestUnboundedFieldsReachTheStatus(t *testing.T) {
	const mib = 1 << 20
	a := strings.Repeat("a", mib)
	ok := extensionServiceObject(meta("ns", "ok"), &tributaryv1.ExtensionServiceSpec{
		Services: []*tributaryv1.ExtensionServiceTarget{{Name: "b", Port: 9000}},
	})
	target := func(name string) []*tributaryv1.ExtensionServiceTarget {
		return []*tributaryv1.ExtensionServiceTarget{{Name: name, Port: 9000}}
	}
	validCondition := []*tributaryv1.DetailedCondition{{Type: "Valid", Status: "True", Reason: "Valid", Message: "Valid ExtensionService"}}
	available := []*tributaryv1.TargetAvailability{{Service: "b", Port: 9000, ReadyEndpoints: 1, Weight: 1}}
	quoted := `"` + strings.Repeat("a", 100) + `"...`
	tests := []struct {
		name   string
		spec   *tributaryv1.ExtensionServiceSpec
		status *tributaryv1.ExtensionServiceStatus
	}{{
		name: "target name",
		spec: &tributaryv1.ExtensionServiceSpec{Services: target(a)},
		status: invalidStatus(&tributaryv1.SubCondition{Type: "ServiceError", Status: "True", Reason: "ServiceUnresolvedReference",
			Message: `unresolved service "ns/` + strings.Repeat("a", 97) + `"...: service "ns/` + strings.Repeat("a", 97) + `"... not found`}),
	}, {
		name: "second subject name",
		spec: &tributaryv1.ExtensionServiceSpec{Services: target("b"), Validation: &tributaryv1.UpstreamValidation{
			CaSecret: "ca", SubjectName: "authz.ns.svc", SubjectNames: []string{"authz.ns.svc", a},
		}},
		status: invalidStatus(&tributaryv1.SubCondition{Type: "SpecError", Status: "True", Reason: "TLSUpstreamValidation",
			Message: `TLS upstream validation policy error: subject name ` + quoted + ` is 1048576 bytes long, but a subject name must be at most 255 bytes`}),
	}, {
		name: "response timeout",
		spec: &tributaryv1.ExtensionServiceSpec{Services: target("b"), TimeoutPolicy: &tributaryv1.TimeoutPolicy{Response: strings.Repeat("1", mib)}},
		status: invalidStatus(&tributaryv1.SubCondition{Type: "SpecError", Status: "True", Reason: "TimeoutPolicyNotValid",
			Message: `spec.timeoutPolicy failed to parse: error parsing response timeout: unable to parse timeout string "` + strings.Repeat("1", 100) + `"...: time: invalid duration "` + strings.Repeat("1", 176) + `...`}),
	}, {
		name:   "load balancer strategy",
		spec:   &tributaryv1.ExtensionServiceSpec{Services: target("b"), LoadBalancerPolicy: &tributaryv1.LoadBalancerPolicy{Strategy: a}},
		status: &tributaryv1.ExtensionServiceStatus{Conditions: validCondition, ClusterName: "extension/ns/large", Availability: available},
	}, {
		name:   "response timeout that parses",
		spec:   &tributaryv1.ExtensionServiceSpec{Services: target("b"), TimeoutPolicy: &tributaryv1.TimeoutPolicy{Response: strings.Repeat("1s", mib/2)}},
		status: &tributaryv1.ExtensionServiceStatus{Conditions: validCondition, ClusterName: "extension/ns/large", ResponseTimeout: "145h38m8s", Availability: available},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{
				caSecret(t, 1), service("b"), slice("b", "10.0.1.1"),
				extensionServiceObject(meta("ns", "large"), tc.spec), ok,
			}}
			resp, err := NewTranslationService().Translate(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"extension/ns/ok"}
			if tc.status.GetClusterName() != "" {
				want = []string{"extension/ns/large", "extension/ns/ok"}
			}
			var got []string
			for _, c := range resp.GetClusters() {
				got = append(got, c.GetName())
			}
			if !slices.Equal(got, want) {
				t.Errorf("got Clusters %q, want %q", got, want)
			}
			tc.status.Namespace, tc.status.Name = "ns", "large"
			if diff := cmp.Diff(tc.status, resp.GetStatuses()[0], protocmp.Transform()); diff != "" {
				t.Errorf("status of ns/large (-want +got):\n%s", diff)
			}
			if n := proto.Size(resp.GetStatuses()[0]); n > 1024 {
				t.Errorf("status of ns/large is %d bytes, want at most 1 KiB", n)
			}
		})
	}
}

// invalidStatus is the status of an ExtensionService that errors make
// invalid.
func invalidStatus(errors ...*tributaryv1.SubCondition) *tributaryv1.ExtensionServiceStatus {
	return &tributaryv1.ExtensionServiceStatus{Conditions: []*tributaryv1.DetailedCondition{{
		Type: "Valid", Status: "False", Reason: "ErrorPresent",
		Message: "At least one error present, see Errors for details", Errors: errors,
	}}}
}
