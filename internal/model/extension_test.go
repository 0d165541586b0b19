package model

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/source"
)

// The tests in this file build whole ExtensionServices against a small
// world: namespace "ext" holds the Service "grpc" (port 9000, named "grpc")
// with one ready endpoint, a CA Secret "ca" and a client certificate Secret
// "client"; namespace "certs" holds more Secrets for delegation cases.

const xtNS = "ext"

// xtCertPEM returns a self-signed certificate in PEM. An ed25519 key from a
// fixed seed and fixed dates make the bytes identical on every run, which is
// what lets tests spell out SDS names that hash the certificate.
func xtCertPEM(t testing.TB, seed byte, commonName string, dnsNames ...string) []byte {
	t.Helper()
	seedBytes := make([]byte, ed25519.SeedSize)
	for i := range seedBytes {
		seedBytes[i] = seed
	}
	key := ed25519.NewKeyFromSeed(seedBytes)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(int64(seed) + 1),
		Subject:               pkix.Name{CommonName: commonName},
		DNSNames:              dnsNames,
		NotBefore:             time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func xtStr(s string) *string { return &s }

func xtDuration(d time.Duration) *time.Duration { return &d }

func xtErr(typ, reason, message string) SubCondition {
	return SubCondition{Type: typ, Status: ConditionTrue, Reason: reason, Message: message}
}

// xtWorld is the base set of objects; tests append to it.
func xtWorld(t testing.TB) source.Objects {
	ca := xtCertPEM(t, 1, "test-ca")
	return source.Objects{
		Services: []source.Service{{
			Meta:  source.Meta{Namespace: xtNS, Name: "grpc"},
			Type:  "ClusterIP",
			Ports: []source.ServicePort{{Name: "grpc", Port: 9000, TargetPort: "9000", Protocol: "TCP"}},
		}},
		EndpointSlices: []source.EndpointSlice{{
			Meta: source.Meta{
				Namespace: xtNS, Name: "grpc-abc",
				Labels: map[string]string{source.ServiceNameLabel: "grpc"},
			},
			AddressType: "IPv4",
			Endpoints:   []source.Endpoint{{Addresses: []string{"10.0.0.1"}}},
			Ports:       []source.EndpointPort{{Name: xtStr("grpc"), Port: new(int32(9000)), Protocol: xtStr("TCP")}},
		}},
		Secrets: []source.Secret{
			{Meta: source.Meta{Namespace: xtNS, Name: "ca"}, Type: "Opaque", CACrt: ca},
			{Meta: source.Meta{Namespace: xtNS, Name: "client"}, Type: "kubernetes.io/tls", TLSCrt: xtCertPEM(t, 2, "envoy-client")},
			{Meta: source.Meta{Namespace: "certs", Name: "ca"}, Type: "kubernetes.io/tls", CACrt: ca},
			{Meta: source.Meta{Namespace: "certs", Name: "other-ca"}, Type: "kubernetes.io/tls", CACrt: ca},
		},
	}
}

// xtClientSDSName is the SDS name of the "client" Secret's certificate; the
// digest was checked independently with `sha1sum` over the PEM bytes.
const xtClientSDSName = "ext/client/" + xtClientDigest

const xtClientDigest = "da07ae6b63"

func xtBuild(t *testing.T, objs source.Objects, settings source.Settings, spec source.ExtensionServiceSpec) (*ExtensionCluster, Status) {
	t.Helper()
	es := source.ExtensionService{Meta: source.Meta{Namespace: xtNS, Name: "authz", Generation: 7}, Spec: spec}
	objs.ExtensionServices = append(objs.ExtensionServices, es)
	b := NewBuilder(NewIndex(&objs), settings)
	return b.Build(&objs.ExtensionServices[len(objs.ExtensionServices)-1])
}

var xtTarget = []source.ExtensionServiceTarget{{Name: "grpc", Port: 9000}}

// xtLocality is the one Locality the base world yields for xtTarget.
var xtLocality = []Locality{{SubZone: "ext/grpc/9000", Weight: 1, Endpoints: []Endpoint{{Address: "10.0.0.1", Port: 9000}}}}

func TestClientCertificateDigest(t *testing.T) {
	// Pins the fixture the SDS name cases rely on: if certificate
	// generation ever stops being deterministic, this fails first.
	world := xtWorld(t)
	got := sdsSecretName(source.NamespacedName{Namespace: xtNS, Name: "client"}, world.Secrets[1].TLSCrt)
	if got != xtClientSDSName {
		t.Fatalf("SDS name = %q, want %q", got, xtClientSDSName)
	}
}

// TestBuildConditions covers every sub-condition build records: reason,
// type and exact message, in the contract's order, and that any error
// withholds the ExtensionCluster.
func TestBuildConditions(t *testing.T) {
	specErr := func(reason, msg string) SubCondition { return xtErr(SubConditionSpec, reason, msg) }
	tlsErr := func(reason, msg string) SubCondition { return xtErr(SubConditionTLS, reason, msg) }
	svcErr := func(reason, msg string) SubCondition { return xtErr(SubConditionService, reason, msg) }
	validation := func(caSecret string) *source.UpstreamValidation {
		return &source.UpstreamValidation{CASecret: caSecret, SubjectName: "authz.ext.svc"}
	}
	delegation := func(secret string, targets ...string) source.TLSCertificateDelegation {
		return source.TLSCertificateDelegation{
			Meta:        source.Meta{Namespace: "certs", Name: "delegate-" + secret},
			Delegations: []source.CertificateDelegation{{SecretName: secret, TargetNamespaces: targets}},
		}
	}
	const notDelegated = `service.UpstreamValidation.CACertificate Secret "certs/ca" is not configured for certificate delegation`
	const policyErr = "TLS upstream validation policy error: "

	tests := []struct {
		name         string
		objs         func(*source.Objects)
		settings     source.Settings
		spec         source.ExtensionServiceSpec
		wantErrors   []SubCondition
		wantWarnings []SubCondition
		// wantResponseTimeout is Status.ResponseTimeout.
		wantResponseTimeout string
	}{
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
			wantErrors: []SubCondition{specErr(ReasonTimeoutPolicyNotValid,
				`spec.timeoutPolicy failed to parse: error parsing response timeout: unable to parse timeout string "X": time: invalid duration "X"`)},
		},
		{
			name: "only the first bad timeout is reported",
			spec: source.ExtensionServiceSpec{Services: xtTarget, TimeoutPolicy: &source.TimeoutPolicy{Idle: "1x", IdleConnection: "2y"}},
			wantErrors: []SubCondition{specErr(ReasonTimeoutPolicyNotValid,
				`spec.timeoutPolicy failed to parse: error parsing idle timeout: unable to parse timeout string "1x": time: unknown unit "x" in duration "1x"`)},
			wantWarnings: []SubCondition{specErr(ReasonIgnoredField,
				`ignoring field ".Spec.TimeoutPolicy.Idle"; idle timeouts are not supported for ExtensionClusters`)},
		},
		{
			name: "unparsable idle connection timeout",
			spec: source.ExtensionServiceSpec{Services: xtTarget, TimeoutPolicy: &source.TimeoutPolicy{Response: "1s", IdleConnection: "soon"}},
			wantErrors: []SubCondition{specErr(ReasonTimeoutPolicyNotValid,
				`spec.timeoutPolicy failed to parse: error parsing idle connection timeout: unable to parse timeout string "soon": time: invalid duration "soon"`)},
		},
		{
			name: "negative timeout",
			spec: source.ExtensionServiceSpec{Services: xtTarget, TimeoutPolicy: &source.TimeoutPolicy{IdleConnection: "-1s"}},
			wantErrors: []SubCondition{specErr(ReasonTimeoutPolicyNotValid,
				`spec.timeoutPolicy failed to parse: error parsing idle connection timeout: unable to parse timeout string "-1s": negative durations are not allowed`)},
		},
		{
			name: "idle timeout is ignored with a warning",
			spec: source.ExtensionServiceSpec{Services: xtTarget, TimeoutPolicy: &source.TimeoutPolicy{Idle: "5s"}},
			wantWarnings: []SubCondition{specErr(ReasonIgnoredField,
				`ignoring field ".Spec.TimeoutPolicy.Idle"; idle timeouts are not supported for ExtensionClusters`)},
		},
		{
			name:     "client certificate Secret missing",
			settings: source.Settings{ClientCertificate: &source.NamespacedName{Namespace: "envoy", Name: "cert"}},
			spec:     source.ExtensionServiceSpec{Services: xtTarget},
			wantErrors: []SubCondition{tlsErr(ReasonSecretNotValid,
				`tls.envoy-client-certificate Secret "envoy/cert" is invalid: Secret not found`)},
		},
		{
			name:     "client certificate Secret checked for h2c too",
			settings: source.Settings{ClientCertificate: &source.NamespacedName{Namespace: "envoy", Name: "cert"}},
			spec:     source.ExtensionServiceSpec{Services: xtTarget, Protocol: xtStr("h2c")},
			wantErrors: []SubCondition{tlsErr(ReasonSecretNotValid,
				`tls.envoy-client-certificate Secret "envoy/cert" is invalid: Secret not found`)},
		},
		{
			name:     "client certificate Secret of type Opaque",
			settings: source.Settings{ClientCertificate: &source.NamespacedName{Namespace: xtNS, Name: "ca"}},
			spec:     source.ExtensionServiceSpec{Services: xtTarget},
			wantErrors: []SubCondition{tlsErr(ReasonSecretNotValid,
				`tls.envoy-client-certificate Secret "ext/ca" is invalid: secret type is not "kubernetes.io/tls"`)},
		},
		{
			name: "client certificate Secret without tls.crt",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "nocrt"}, Type: "kubernetes.io/tls"})
			},
			settings: source.Settings{ClientCertificate: &source.NamespacedName{Namespace: xtNS, Name: "nocrt"}},
			spec:     source.ExtensionServiceSpec{Services: xtTarget},
			wantErrors: []SubCondition{tlsErr(ReasonSecretNotValid,
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
			wantErrors: []SubCondition{tlsErr(ReasonSecretNotValid,
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
			wantErrors: []SubCondition{tlsErr(ReasonSecretNotValid,
				`tls.envoy-client-certificate Secret "ext/anon" is invalid: invalid TLS certificate: certificate has no common name or subject alt name`)},
		},
		{
			name: "Cookie strategy",
			spec: source.ExtensionServiceSpec{Services: xtTarget, LoadBalancerPolicy: &source.LoadBalancerPolicy{Strategy: "Cookie"}},
			wantWarnings: []SubCondition{specErr(ReasonIgnoredField,
				`ignoring field ".Spec.LoadBalancerPolicy"; Cookie load balancer policy is not supported for ExtensionClusters`)},
		},
		{
			name: "RequestHash strategy, then the idle warning",
			spec: source.ExtensionServiceSpec{
				Services: xtTarget, LoadBalancerPolicy: &source.LoadBalancerPolicy{Strategy: "RequestHash"},
				TimeoutPolicy: &source.TimeoutPolicy{Idle: "infinity"},
			},
			wantWarnings: []SubCondition{
				specErr(ReasonIgnoredField, `ignoring field ".Spec.LoadBalancerPolicy"; RequestHash load balancer policy is not supported for ExtensionClusters`),
				specErr(ReasonIgnoredField, `ignoring field ".Spec.TimeoutPolicy.Idle"; idle timeouts are not supported for ExtensionClusters`),
			},
		},
		{
			name: "unsupported protocol",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Protocol: xtStr("h3")},
			wantErrors: []SubCondition{specErr(ReasonUnsupportedProtocol,
				`spec.protocol "h3" is not supported: use "h2", "h2c" or "http/1.1"`)},
		},
		{
			// Naming a target twice warns (DuplicateTarget), but only once
			// everything else is valid: endpoints are not looked at before.
			name: "endpoint checks wait for the rest to be valid",
			spec: source.ExtensionServiceSpec{Services: append(xtTarget, xtTarget...), Protocol: xtStr("h3")},
			wantErrors: []SubCondition{specErr(ReasonUnsupportedProtocol,
				`spec.protocol "h3" is not supported: use "h2", "h2c" or "http/1.1"`)},
		},
		{
			name: "unsupported protocol with validation is not also inconsistent",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Protocol: xtStr("HTTP/2"), Validation: validation("ca")},
			wantErrors: []SubCondition{specErr(ReasonUnsupportedProtocol,
				`spec.protocol "HTTP/2" is not supported: use "h2", "h2c" or "http/1.1"`)},
		},
		{
			name: "validation with h2c, then the targets",
			spec: source.ExtensionServiceSpec{Services: []source.ExtensionServiceTarget{{Name: "gone", Port: 1}}, Protocol: xtStr("h2c"), Validation: validation("ca")},
			wantErrors: []SubCondition{
				specErr(ReasonInconsistentProtocol, `upstream TLS validation not supported for "h2c" protocol`),
				svcErr(ReasonServiceUnresolvedReference, `unresolved service "ext/gone": service "ext/gone" not found`),
			},
		},
		{
			name: "validation with http/1.1",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Protocol: xtStr("http/1.1"), Validation: validation("ca")},
			wantErrors: []SubCondition{specErr(ReasonInconsistentProtocol,
				`upstream TLS validation not supported for "http/1.1" protocol`)},
		},
		{
			name: "CA Secret missing; validation stops further checks",
			spec: source.ExtensionServiceSpec{Services: []source.ExtensionServiceTarget{{Name: "gone", Port: 1}}, Validation: validation("nope")},
			wantErrors: []SubCondition{specErr(ReasonTLSUpstreamValidation,
				policyErr+`invalid CA Secret "ext/nope": Secret not found`)},
		},
		{
			name:       "CA Secret in another namespace without delegation",
			spec:       source.ExtensionServiceSpec{Services: xtTarget, Validation: validation("certs/ca")},
			wantErrors: []SubCondition{tlsErr(ReasonCACertificateNotDelegated, notDelegated)},
		},
		{
			name: "delegation of another Secret does not count",
			objs: func(o *source.Objects) {
				o.TLSCertificateDelegations = append(o.TLSCertificateDelegations, delegation("other-ca", xtNS))
			},
			spec:       source.ExtensionServiceSpec{Services: xtTarget, Validation: validation("certs/ca")},
			wantErrors: []SubCondition{tlsErr(ReasonCACertificateNotDelegated, notDelegated)},
		},
		{
			name: "delegation to other namespaces does not count",
			objs: func(o *source.Objects) {
				o.TLSCertificateDelegations = append(o.TLSCertificateDelegations, delegation("ca", "a", "b"))
			},
			spec:       source.ExtensionServiceSpec{Services: xtTarget, Validation: validation("certs/ca")},
			wantErrors: []SubCondition{tlsErr(ReasonCACertificateNotDelegated, notDelegated)},
		},
		{
			name: "a delegation from another namespace does not count",
			objs: func(o *source.Objects) {
				d := delegation("ca", xtNS)
				d.Namespace = "elsewhere"
				o.TLSCertificateDelegations = append(o.TLSCertificateDelegations, d)
			},
			spec:       source.ExtensionServiceSpec{Services: xtTarget, Validation: validation("certs/ca")},
			wantErrors: []SubCondition{tlsErr(ReasonCACertificateNotDelegated, notDelegated)},
		},
		{
			name: "* among other targets is not a wildcard (as in Contour)",
			objs: func(o *source.Objects) {
				o.TLSCertificateDelegations = append(o.TLSCertificateDelegations, delegation("ca", "a", "*"))
			},
			spec:       source.ExtensionServiceSpec{Services: xtTarget, Validation: validation("certs/ca")},
			wantErrors: []SubCondition{tlsErr(ReasonCACertificateNotDelegated, notDelegated)},
		},
		{
			name: "delegation is checked before existence",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: validation("elsewhere/ca")},
			wantErrors: []SubCondition{tlsErr(ReasonCACertificateNotDelegated,
				`service.UpstreamValidation.CACertificate Secret "elsewhere/ca" is not configured for certificate delegation`)},
		},
		{
			name: "delegated but missing",
			objs: func(o *source.Objects) {
				o.TLSCertificateDelegations = append(o.TLSCertificateDelegations, delegation("gone", "*"))
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: validation("certs/gone")},
			wantErrors: []SubCondition{specErr(ReasonTLSUpstreamValidation,
				policyErr+`invalid CA Secret "certs/gone": Secret not found`)},
		},
		{
			name: "CA Secret of the wrong type",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "token"}, Type: "kubernetes.io/service-account-token", CACrt: o.Secrets[0].CACrt})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: validation("token")},
			wantErrors: []SubCondition{specErr(ReasonTLSUpstreamValidation,
				policyErr+`invalid CA Secret "ext/token": secret type is not "kubernetes.io/tls" or "Opaque"`)},
		},
		{
			name: "CA Secret with empty ca.crt",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "empty"}, Type: "Opaque", CACrt: []byte{}})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: validation("empty")},
			wantErrors: []SubCondition{specErr(ReasonTLSUpstreamValidation,
				policyErr+`invalid CA Secret "ext/empty": empty "ca.crt" key`)},
		},
		{
			name: "CA Secret without ca.crt",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: validation("client")},
			wantErrors: []SubCondition{specErr(ReasonTLSUpstreamValidation,
				policyErr+`invalid CA Secret "ext/client": empty "ca.crt" key`)},
		},
		{
			name: "CA bundle without certificates",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "text"}, Type: "Opaque", CACrt: []byte("hello")})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: validation("text")},
			wantErrors: []SubCondition{specErr(ReasonTLSUpstreamValidation,
				policyErr+`invalid CA Secret "ext/text": invalid CA certificate bundle: failed to locate certificate`)},
		},
		{
			name: "CA bundle with a key in it",
			objs: func(o *source.Objects) {
				key := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "key"}, Type: "Opaque",
					CACrt: append(append([]byte{}, o.Secrets[0].CACrt...), key...)})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: validation("key")},
			wantErrors: []SubCondition{specErr(ReasonTLSUpstreamValidation,
				policyErr+`invalid CA Secret "ext/key": invalid CA certificate bundle: unexpected block type 'PRIVATE KEY'`)},
		},
		{
			name: "CA bundle with a block type that is not UTF-8",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "latin1"}, Type: "Opaque",
					CACrt: pem.EncodeToMemory(&pem.Block{Type: "CL\xc9", Bytes: []byte{1}})})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: validation("latin1")},
			wantErrors: []SubCondition{specErr(ReasonTLSUpstreamValidation,
				policyErr+`invalid CA Secret "ext/latin1": invalid CA certificate bundle: unexpected block type `+"'CL\uFFFD'")},
		},
		{
			name: "CA bundle with a broken PEM block",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "broken"}, Type: "Opaque",
					CACrt: []byte("-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----\n")})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: validation("broken")},
			wantErrors: []SubCondition{specErr(ReasonTLSUpstreamValidation,
				policyErr+`invalid CA Secret "ext/broken": invalid CA certificate bundle: failed to parse PEM block`)},
		},
		{
			name: "CA bundle whose certificate does not parse (Contour would accept it)",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "der"}, Type: "Opaque",
					CACrt: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")})})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: validation("der")},
			wantErrors: []SubCondition{specErr(ReasonTLSUpstreamValidation,
				policyErr+`invalid CA Secret "ext/der": invalid CA certificate bundle: x509: malformed certificate`)},
		},
		{
			name: "missing subject name",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: &source.UpstreamValidation{CASecret: "ca", SubjectNames: []string{"a"}}},
			wantErrors: []SubCondition{specErr(ReasonTLSUpstreamValidation,
				policyErr+`missing subject alternative name`)},
		},
		{
			name: "first subject name differs from subjectName",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: &source.UpstreamValidation{CASecret: "ca", SubjectName: "a", SubjectNames: []string{"b", "a"}}},
			wantErrors: []SubCondition{specErr(ReasonTLSUpstreamValidation,
				policyErr+`first entry of SubjectNames (b) does not match SubjectName (a)`)},
		},
		{
			name: "subject name too long for SNI",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: &source.UpstreamValidation{CASecret: "ca", SubjectName: strings.Repeat("a", 256)}},
			wantErrors: []SubCondition{specErr(ReasonTLSUpstreamValidation,
				policyErr+`subject name "`+strings.Repeat("a", 256)+`" is 256 bytes long, but as the SNI it must be at most 255 bytes`)},
		},
		{
			name: "subjectName not UTF-8 is reported before the mismatch",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: &source.UpstreamValidation{CASecret: "ca", SubjectName: "\xff", SubjectNames: []string{"a"}}},
			wantErrors: []SubCondition{specErr(ReasonTLSUpstreamValidation,
				policyErr+`subject name "\xff" is not valid UTF-8`)},
		},
		{
			name: "subject name not UTF-8",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: &source.UpstreamValidation{CASecret: "ca", SubjectName: "a", SubjectNames: []string{"a", "b\xff"}}},
			wantErrors: []SubCondition{specErr(ReasonTLSUpstreamValidation,
				policyErr+`subject name "b\xff" is not valid UTF-8`)},
		},
		{
			name:       "no targets",
			spec:       source.ExtensionServiceSpec{},
			wantErrors: []SubCondition{specErr(ReasonNoTargets, "spec.services is empty: an ExtensionService needs at least one target Service")},
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
				svcErr(ReasonServiceUnresolvedReference, `unresolved service "ext/grpc": port "9001" on service "ext/grpc" not matched`),
				svcErr(ReasonServiceUnresolvedReference, `unresolved service "ext/udp": unsupported service protocol "UDP"`),
				svcErr(ReasonUnsupportedServiceType, `Service "ext/external" is of unsupported type "ExternalName".`),
				svcErr(ReasonUnsupportedServiceType, `Service "ext/typed-external" is of unsupported type "ExternalName".`),
				svcErr(ReasonUnsupportedServiceType, `Service "ext/leftover-external" is of unsupported type "ExternalName".`),
				svcErr(ReasonServiceUnresolvedReference, `unresolved service "ext/elsewhere": service "ext/elsewhere" not found`),
			},
		},
		{
			name: "an ExternalName Service without the port is unresolved first",
			objs: func(o *source.Objects) {
				o.Services = append(o.Services, source.Service{Meta: source.Meta{Namespace: xtNS, Name: "external"}, Type: "ExternalName", ExternalName: "example.com"})
			},
			spec: source.ExtensionServiceSpec{Services: []source.ExtensionServiceTarget{{Name: "external", Port: 443}}},
			wantErrors: []SubCondition{svcErr(ReasonServiceUnresolvedReference,
				`unresolved service "ext/external": port "443" on service "ext/external" not matched`)},
		},
		{
			name:     "errors accumulate in the contract's order",
			settings: source.Settings{ClientCertificate: &source.NamespacedName{Namespace: "envoy", Name: "cert"}},
			spec: source.ExtensionServiceSpec{
				Services:           []source.ExtensionServiceTarget{{Name: "gone", Port: 1}, {Name: "grpc", Port: 1}},
				Protocol:           xtStr("h2c"),
				Validation:         validation("ca"),
				TimeoutPolicy:      &source.TimeoutPolicy{Response: "10"},
				LoadBalancerPolicy: &source.LoadBalancerPolicy{Strategy: "Cookie"},
			},
			wantErrors: []SubCondition{
				specErr(ReasonTimeoutPolicyNotValid, `spec.timeoutPolicy failed to parse: error parsing response timeout: unable to parse timeout string "10": time: missing unit in duration "10"`),
				tlsErr(ReasonSecretNotValid, `tls.envoy-client-certificate Secret "envoy/cert" is invalid: Secret not found`),
				specErr(ReasonInconsistentProtocol, `upstream TLS validation not supported for "h2c" protocol`),
				svcErr(ReasonServiceUnresolvedReference, `unresolved service "ext/gone": service "ext/gone" not found`),
				svcErr(ReasonServiceUnresolvedReference, `unresolved service "ext/grpc": port "1" on service "ext/grpc" not matched`),
			},
			wantWarnings: []SubCondition{specErr(ReasonIgnoredField,
				`ignoring field ".Spec.LoadBalancerPolicy"; Cookie load balancer policy is not supported for ExtensionClusters`)},
		},
	}
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
			if diff := cmp.Diff(want, st); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
			if (ec == nil) != (len(tc.wantErrors) > 0) {
				t.Errorf("got ExtensionCluster %v with %d errors", ec, len(tc.wantErrors))
			}
		})
	}
}

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
				Localities: []Locality{{SubZone: "ext/grpc/19000", Weight: 1, Endpoints: []Endpoint{{Address: "10.0.0.1", Port: 19000}}}},
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

// TestBuildRefusesNamesEnvoyCannotTake: the cluster name comes from the
// object's metadata, which the API does not restrict.
func TestBuildRefusesNamesEnvoyCannotTake(t *testing.T) {
	for _, tc := range []struct{ namespace, name, message string }{
		{xtNS, "a\nb", `cluster name "extension/ext/a\nb" derived from metadata.namespace and metadata.name contains a control character`},
		{"e\x7f", "a", `cluster name "extension/e\x7f/a" derived from metadata.namespace and metadata.name contains a control character`},
		{xtNS, "\xc3", `cluster name "extension/ext/\xc3" derived from metadata.namespace and metadata.name is not valid UTF-8`},
	} {
		objs := xtWorld(t)
		objs.ExtensionServices = []source.ExtensionService{{
			Meta: source.Meta{Namespace: tc.namespace, Name: tc.name},
			Spec: source.ExtensionServiceSpec{Services: xtTarget},
		}}
		ec, st := NewBuilder(NewIndex(&objs), source.Settings{}).Build(&objs.ExtensionServices[0])
		if ec != nil {
			t.Errorf("%q/%q: got an ExtensionCluster", tc.namespace, tc.name)
		}
		want := []SubCondition{xtErr(SubConditionSpec, ReasonInvalidName, tc.message)}
		// The target lies in "ext"; other namespaces add a lookup error.
		if diff := cmp.Diff(want, st.Condition.Errors[:1]); diff != "" {
			t.Errorf("%q/%q (-want +got):\n%s", tc.namespace, tc.name, diff)
		}
	}
}

func TestShortenName(t *testing.T) {
	// Expected values come from Contour's Hashname(60, ...) (v1.33.8) run
	// on the same input, except the UTF-8 case, where Contour would split
	// the "é" and this keeps whole characters.
	for _, tc := range []struct {
		limit int
		parts []string
		want  string
	}{
		{60, []string{"ns", "client", "0123456789"}, "ns/client/0123456789"},
		{60, []string{"ns", strings.Repeat("n", 45), "0123456789"}, "ns/" + strings.Repeat("n", 45) + "/0123456789"},
		{60, []string{"ns", strings.Repeat("n", 46), "0123456789"}, "ns/nnnnnnnnnnnnn-90d3af/0123456789"},
		{60, []string{"ns", strings.Repeat("n", 47), "0123456789"}, "ns/nnnnnnnnnnnnn-3ab736/0123456789"},
		{60, []string{"projectcontour", "a-client-certificate-with-a-rather-long-name", "0123456789"}, "projectcontour/a-client-cert-85731a/0123456789"},
		{60, []string{"a-namespace-that-is-quite-long-indeed-yes", "a-client-certificate-with-a-rather-long-name", "0123456789"}, "a-namespace-t-7a8cc8/a-client-cert-7a8cc8/0123456789"},
		{5, []string{"abcdefgh", "ijklmnop", "qrstuvwx"}, "d4e85"},
		{20, []string{"abcdefgh", "ijklmnop", "qrstuvwx"}, "d4e859077ac52479c946"},
		{60, []string{"ns", strings.Repeat("é", 30), "0123456789"}, "ns/éééééé-6fb774/0123456789"},
	} {
		parts := append([]string(nil), tc.parts...)
		if got := shortenName(tc.limit, tc.parts...); got != tc.want {
			t.Errorf("shortenName(%d, %q) = %q, want %q", tc.limit, tc.parts, got, tc.want)
		}
		if diff := cmp.Diff(parts, tc.parts); diff != "" {
			t.Errorf("shortenName changed its argument: %s", diff)
		}
	}
}

func TestParseTimeout(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    timeoutSetting
		str     string
		wantErr string
	}{
		{in: "", want: timeoutSetting{}},
		{in: "0s", want: timeoutSetting{}},
		{in: "0", want: timeoutSetting{}},
		{in: "infinity", want: timeoutSetting{set: true}, str: "infinity"},
		{in: "infinite", want: timeoutSetting{set: true}, str: "infinity"},
		{in: "500ms", want: timeoutSetting{set: true, duration: 500 * time.Millisecond}, str: "500ms"},
		{in: "1.5h", want: timeoutSetting{set: true, duration: 90 * time.Minute}, str: "1h30m0s"},
		{in: "Infinity", wantErr: `unable to parse timeout string "Infinity": time: invalid duration "Infinity"`},
		{in: "-5ms", wantErr: `unable to parse timeout string "-5ms": negative durations are not allowed`},
	} {
		got, err := parseTimeout(tc.in)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("parseTimeout(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseTimeout(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want || got.String() != tc.str {
			t.Errorf("parseTimeout(%q) = %+v (%q), want %+v (%q)", tc.in, got, got.String(), tc.want, tc.str)
		}
	}
}

// BenchmarkBuildTLS measures one ExtensionService with validation and a
// client certificate, whose Secrets are parsed on every Build.
func BenchmarkBuildTLS(b *testing.B) {
	objs := xtWorld(b)
	objs.ExtensionServices = []source.ExtensionService{{
		Meta: source.Meta{Namespace: xtNS, Name: "authz"},
		Spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: &source.UpstreamValidation{CASecret: "ca", SubjectName: "authz"}},
	}}
	builder := NewBuilder(NewIndex(&objs), source.Settings{ClientCertificate: &source.NamespacedName{Namespace: xtNS, Name: "client"}})
	b.ReportAllocs()
	for b.Loop() {
		if ec, _ := builder.Build(&objs.ExtensionServices[0]); ec == nil {
			b.Fatal("invalid")
		}
	}
}
