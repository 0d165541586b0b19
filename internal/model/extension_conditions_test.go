package model

import (
	"encoding/pem"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tributary-dev/tributary/internal/source"
)

// TestBuildConditions covers every sub-condition build records: reason,
// type and exact message, in the contract's order, and that any error
// withholds the ExtensionCluster.
func TestBuildConditions(t *testing.T) {
	tests := slices.Concat(xtSpecConditionCases(t), xtValidationConditionCases(), xtTargetConditionCases())
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := xtWorld(t)
			if tc.objs != nil {
				tc.objs(&objs)
			}
			ec, st := xtBuild(t, objs, tc.settings, tc.spec)

			want := Status{Namespace: xtNS, Name: "authz", ResponseTimeout: tc.wantResponseTimeout}
			want.Condition = Condition{
				Type: ConditionValid, Status: ConditionTrue, ObservedGeneration: 7,
				Reason: ReasonValid, Message: MessageValid,
				Errors: tc.wantErrors, Warnings: tc.wantWarnings,
			}
			if len(tc.wantErrors) > 0 {
				want.Condition.Status, want.Condition.Reason, want.Condition.Message = ConditionFalse, ReasonErrorPresent, MessageErrorPresent
			} else {
				want.ClusterName = "extension/ext/authz"
			}
			// Availability has tests of its own (availability_test.go).
			if diff := cmp.Diff(want, st, cmpopts.IgnoreFields(Status{}, "Availability")); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if (ec == nil) != (len(tc.wantErrors) > 0) {
				t.Errorf("got ExtensionCluster %v with %d errors", ec, len(tc.wantErrors))
			}
		})
	}
}

// xtConditionCase is a case of TestBuildConditions: the world changed by
// objs, the settings and the spec built, and the sub-conditions wanted.
type xtConditionCase struct {
	name         string
	objs         func(*source.Objects)
	settings     source.Settings
	spec         source.ExtensionServiceSpec
	wantErrors   []SubCondition
	wantWarnings []SubCondition
	// wantResponseTimeout is Status.ResponseTimeout.
	wantResponseTimeout string
}

// The helpers of the condition cases: a sub-condition of each type, the
// upstream validation and certificate delegation the cases vary, and the
// messages several cases share.

func xtSpecErr(reason, msg string) SubCondition { return xtErr(SubConditionSpec, reason, msg) }
func xtTLSErr(reason, msg string) SubCondition  { return xtErr(SubConditionTLS, reason, msg) }
func xtSvcErr(reason, msg string) SubCondition  { return xtErr(SubConditionService, reason, msg) }

func xtValidation(caSecret string) *source.UpstreamValidation {
	return &source.UpstreamValidation{CASecret: caSecret, SubjectName: "authz.ext.svc"}
}

func xtDelegation(secret string, targets ...string) source.TLSCertificateDelegation {
	return source.TLSCertificateDelegation{
		Meta:        source.Meta{Namespace: "certs", Name: "delegate-" + secret},
		Delegations: []source.CertificateDelegation{{SecretName: secret, TargetNamespaces: targets}},
	}
}

const xtNotDelegated = `service.UpstreamValidation.CACertificate Secret "certs/ca" is not configured for certificate delegation`
const xtPolicyErr = "TLS upstream validation policy error: "

// xtSpecConditionCases are the cases of timeouts, the client certificate
// and the load balancer policy; t fails when a certificate cannot be made.
func xtSpecConditionCases(t testing.TB) []xtConditionCase {
	return []xtConditionCase{
		{
			name: "valid",
			spec: source.ExtensionServiceSpec{Services: xtTarget},
		},
		{
			name:                "response timeout is normalised",
			spec:                source.ExtensionServiceSpec{Services: xtTarget, TimeoutPolicy: &source.TimeoutPolicy{Response: "1.5h"}},
			wantResponseTimeout: "1h30m0s",
		},
		{
			name:                "infinite response timeout",
			spec:                source.ExtensionServiceSpec{Services: xtTarget, TimeoutPolicy: &source.TimeoutPolicy{Response: "infinite"}},
			wantResponseTimeout: "infinity",
		},
		{
			name: "unparsable response timeout",
			spec: source.ExtensionServiceSpec{Services: xtTarget, TimeoutPolicy: &source.TimeoutPolicy{Response: "X"}},
			wantErrors: []SubCondition{xtSpecErr(ReasonTimeoutPolicyNotValid,
				`spec.timeoutPolicy failed to parse: error parsing response timeout: unable to parse timeout string "X": time: invalid duration "X"`)},
		},
		{
			name: "only the first bad timeout is reported",
			spec: source.ExtensionServiceSpec{Services: xtTarget, TimeoutPolicy: &source.TimeoutPolicy{Idle: "1x", IdleConnection: "2y"}},
			wantErrors: []SubCondition{xtSpecErr(ReasonTimeoutPolicyNotValid,
				`spec.timeoutPolicy failed to parse: error parsing idle timeout: unable to parse timeout string "1x": time: unknown unit "x" in duration "1x"`)},
			wantWarnings: []SubCondition{xtSpecErr(ReasonIgnoredField,
				`ignoring field ".Spec.TimeoutPolicy.Idle"; idle timeouts are not supported for ExtensionClusters`)},
		},
		{
			name: "unparsable idle connection timeout",
			spec: source.ExtensionServiceSpec{Services: xtTarget, TimeoutPolicy: &source.TimeoutPolicy{Response: "1s", IdleConnection: "soon"}},
			wantErrors: []SubCondition{xtSpecErr(ReasonTimeoutPolicyNotValid,
				`spec.timeoutPolicy failed to parse: error parsing idle connection timeout: unable to parse timeout string "soon": time: invalid duration "soon"`)},
		},
		{
			name: "negative timeout",
			spec: source.ExtensionServiceSpec{Services: xtTarget, TimeoutPolicy: &source.TimeoutPolicy{IdleConnection: "-1s"}},
			wantErrors: []SubCondition{xtSpecErr(ReasonTimeoutPolicyNotValid,
				`spec.timeoutPolicy failed to parse: error parsing idle connection timeout: unable to parse timeout string "-1s": negative durations are not allowed`)},
		},
		{
			name: "idle timeout is ignored with a warning",
			spec: source.ExtensionServiceSpec{Services: xtTarget, TimeoutPolicy: &source.TimeoutPolicy{Idle: "5s"}},
			wantWarnings: []SubCondition{xtSpecErr(ReasonIgnoredField,
				`ignoring field ".Spec.TimeoutPolicy.Idle"; idle timeouts are not supported for ExtensionClusters`)},
		},
		{
			name:     "client certificate Secret missing",
			settings: source.Settings{ClientCertificate: &source.NamespacedName{Namespace: "envoy", Name: "cert"}},
			spec:     source.ExtensionServiceSpec{Services: xtTarget},
			wantErrors: []SubCondition{xtTLSErr(ReasonSecretNotValid,
				`tls.envoy-client-certificate Secret "envoy/cert" is invalid: Secret not found`)},
		},
		{
			name:     "client certificate Secret checked for h2c too",
			settings: source.Settings{ClientCertificate: &source.NamespacedName{Namespace: "envoy", Name: "cert"}},
			spec:     source.ExtensionServiceSpec{Services: xtTarget, Protocol: xtStr("h2c")},
			wantErrors: []SubCondition{xtTLSErr(ReasonSecretNotValid,
				`tls.envoy-client-certificate Secret "envoy/cert" is invalid: Secret not found`)},
		},
		{
			name:     "client certificate Secret of type Opaque",
			settings: source.Settings{ClientCertificate: &source.NamespacedName{Namespace: xtNS, Name: "ca"}},
			spec:     source.ExtensionServiceSpec{Services: xtTarget},
			wantErrors: []SubCondition{xtTLSErr(ReasonSecretNotValid,
				`tls.envoy-client-certificate Secret "ext/ca" is invalid: secret type is not "kubernetes.io/tls"`)},
		},
		{
			name: "client certificate Secret without tls.crt",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "nocrt"}, Type: "kubernetes.io/tls"})
			},
			settings: source.Settings{ClientCertificate: &source.NamespacedName{Namespace: xtNS, Name: "nocrt"}},
			spec:     source.ExtensionServiceSpec{Services: xtTarget},
			wantErrors: []SubCondition{xtTLSErr(ReasonSecretNotValid,
				`tls.envoy-client-certificate Secret "ext/nocrt" is invalid: missing TLS certificate`)},
		},
		{
			name: "client certificate that does not parse",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{
					Meta: source.Meta{Namespace: xtNS, Name: "bad"}, Type: "kubernetes.io/tls",
					TLSCrt: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")}),
				})
			},
			settings: source.Settings{ClientCertificate: &source.NamespacedName{Namespace: xtNS, Name: "bad"}},
			spec:     source.ExtensionServiceSpec{Services: xtTarget},
			wantErrors: []SubCondition{xtTLSErr(ReasonSecretNotValid,
				`tls.envoy-client-certificate Secret "ext/bad" is invalid: invalid TLS certificate: x509: malformed certificate`)},
		},
		{
			name: "client certificate without a name",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{
					Meta: source.Meta{Namespace: xtNS, Name: "anon"}, Type: "kubernetes.io/tls", TLSCrt: xtCertPEM(t, 3, ""),
				})
			},
			settings: source.Settings{ClientCertificate: &source.NamespacedName{Namespace: xtNS, Name: "anon"}},
			spec:     source.ExtensionServiceSpec{Services: xtTarget},
			wantErrors: []SubCondition{xtTLSErr(ReasonSecretNotValid,
				`tls.envoy-client-certificate Secret "ext/anon" is invalid: invalid TLS certificate: certificate has no common name or subject alt name`)},
		},
		{
			name: "Cookie strategy",
			spec: source.ExtensionServiceSpec{Services: xtTarget, LoadBalancerPolicy: &source.LoadBalancerPolicy{Strategy: "Cookie"}},
			wantWarnings: []SubCondition{xtSpecErr(ReasonIgnoredField,
				`ignoring field ".Spec.LoadBalancerPolicy"; Cookie load balancer policy is not supported for ExtensionClusters`)},
		},
		{
			name: "RequestHash strategy, then the idle warning",
			spec: source.ExtensionServiceSpec{
				Services: xtTarget, LoadBalancerPolicy: &source.LoadBalancerPolicy{Strategy: "RequestHash"},
				TimeoutPolicy: &source.TimeoutPolicy{Idle: "infinity"},
			},
			wantWarnings: []SubCondition{
				xtSpecErr(ReasonIgnoredField, `ignoring field ".Spec.LoadBalancerPolicy"; RequestHash load balancer policy is not supported for ExtensionClusters`),
				xtSpecErr(ReasonIgnoredField, `ignoring field ".Spec.TimeoutPolicy.Idle"; idle timeouts are not supported for ExtensionClusters`),
			},
		},
	}
}

// xtTargetConditionCases are the cases of the target Services, and of
// errors of every kind together.
func xtTargetConditionCases() []xtConditionCase {
	return []xtConditionCase{
		{
			name:       "no targets",
			spec:       source.ExtensionServiceSpec{},
			wantErrors: []SubCondition{xtSpecErr(ReasonNoTargets, "spec.services is empty: an ExtensionService needs at least one target Service")},
		},
		{
			name: "target errors in spec order",
			objs: func(o *source.Objects) {
				o.Services = append(o.Services,
					source.Service{Meta: source.Meta{Namespace: xtNS, Name: "udp"}, Ports: []source.ServicePort{
						{Port: 53, Protocol: "UDP"}, {Port: 53, Protocol: "TCP"},
					}},
					source.Service{Meta: source.Meta{Namespace: xtNS, Name: "external"}, Type: "ExternalName", ExternalName: "example.com",
						Ports: []source.ServicePort{{Port: 443}}},
					source.Service{Meta: source.Meta{Namespace: xtNS, Name: "typed-external"}, Type: "ExternalName",
						Ports: []source.ServicePort{{Port: 443}}},
					source.Service{Meta: source.Meta{Namespace: xtNS, Name: "leftover-external"}, Type: "ClusterIP", ExternalName: "example.com",
						Ports: []source.ServicePort{{Port: 443}}},
					source.Service{Meta: source.Meta{Namespace: "other", Name: "elsewhere"}, Ports: []source.ServicePort{{Port: 80}}},
				)
			},
			spec: source.ExtensionServiceSpec{Services: []source.ExtensionServiceTarget{
				{Name: "grpc", Port: 9001},
				{Name: "udp", Port: 53},
				{Name: "grpc", Port: 9000},
				{Name: "external", Port: 443},
				{Name: "typed-external", Port: 443},
				{Name: "leftover-external", Port: 443},
				{Name: "elsewhere", Port: 80},
			}},
			wantErrors: []SubCondition{
				xtSvcErr(ReasonServiceUnresolvedReference, `unresolved service "ext/grpc": port "9001" on service "ext/grpc" not matched`),
				xtSvcErr(ReasonServiceUnresolvedReference, `unresolved service "ext/udp": unsupported service protocol "UDP"`),
				xtSvcErr(ReasonUnsupportedServiceType, `Service "ext/external" is of unsupported type "ExternalName".`),
				xtSvcErr(ReasonUnsupportedServiceType, `Service "ext/typed-external" is of unsupported type "ExternalName".`),
				xtSvcErr(ReasonUnsupportedServiceType, `Service "ext/leftover-external" is of unsupported type "ExternalName".`),
				xtSvcErr(ReasonServiceUnresolvedReference, `unresolved service "ext/elsewhere": service "ext/elsewhere" not found`),
			},
		},
		{
			name: "an ExternalName Service without the port is unresolved first",
			objs: func(o *source.Objects) {
				o.Services = append(o.Services, source.Service{Meta: source.Meta{Namespace: xtNS, Name: "external"}, Type: "ExternalName", ExternalName: "example.com"})
			},
			spec: source.ExtensionServiceSpec{Services: []source.ExtensionServiceTarget{{Name: "external", Port: 443}}},
			wantErrors: []SubCondition{xtSvcErr(ReasonServiceUnresolvedReference,
				`unresolved service "ext/external": port "443" on service "ext/external" not matched`)},
		},
		{
			name:     "errors accumulate in the contract's order",
			settings: source.Settings{ClientCertificate: &source.NamespacedName{Namespace: "envoy", Name: "cert"}},
			spec: source.ExtensionServiceSpec{
				Services:           []source.ExtensionServiceTarget{{Name: "gone", Port: 1}, {Name: "grpc", Port: 1}},
				Protocol:           xtStr("h2c"),
				Validation:         xtValidation("ca"),
				TimeoutPolicy:      &source.TimeoutPolicy{Response: "10"},
				LoadBalancerPolicy: &source.LoadBalancerPolicy{Strategy: "Cookie"},
			},
			wantErrors: []SubCondition{
				xtSpecErr(ReasonTimeoutPolicyNotValid, `spec.timeoutPolicy failed to parse: error parsing response timeout: unable to parse timeout string "10": time: missing unit in duration "10"`),
				xtTLSErr(ReasonSecretNotValid, `tls.envoy-client-certificate Secret "envoy/cert" is invalid: Secret not found`),
				xtSpecErr(ReasonInconsistentProtocol, `upstream TLS validation not supported for "h2c" protocol`),
				xtSvcErr(ReasonServiceUnresolvedReference, `unresolved service "ext/gone": service "ext/gone" not found`),
				xtSvcErr(ReasonServiceUnresolvedReference, `unresolved service "ext/grpc": port "1" on service "ext/grpc" not matched`),
			},
			wantWarnings: []SubCondition{xtSpecErr(ReasonIgnoredField,
				`ignoring field ".Spec.LoadBalancerPolicy"; Cookie load balancer policy is not supported for ExtensionClusters`)},
		},
	}
}
