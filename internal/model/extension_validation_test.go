package model

import (
	"encoding/pem"
	"slices"
	"strings"

	"github.com/tributary-dev/tributary/internal/source"
)

// xtValidationConditionCases are the cases of the protocol and of upstream
// TLS validation: its CA Secret, delegation, and subject names.
func xtValidationConditionCases() []xtConditionCase {
	return []xtConditionCase{
		{
			name: "unsupported protocol",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Protocol: xtStr("h3")},
			wantErrors: []SubCondition{xtSpecErr(ReasonUnsupportedProtocol,
				`spec.protocol "h3" is not supported: use "h2", "h2c" or "http/1.1"`)},
		},
		{
			// Naming a target twice warns (DuplicateTarget), but only once
			// everything else is valid: endpoints are not looked at before.
			name: "endpoint checks wait for the rest to be valid",
			spec: source.ExtensionServiceSpec{Services: append(xtTarget, xtTarget...), Protocol: xtStr("h3")},
			wantErrors: []SubCondition{xtSpecErr(ReasonUnsupportedProtocol,
				`spec.protocol "h3" is not supported: use "h2", "h2c" or "http/1.1"`)},
		},
		{
			name: "unsupported protocol with validation is not also inconsistent",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Protocol: xtStr("HTTP/2"), Validation: xtValidation("ca")},
			wantErrors: []SubCondition{xtSpecErr(ReasonUnsupportedProtocol,
				`spec.protocol "HTTP/2" is not supported: use "h2", "h2c" or "http/1.1"`)},
		},
		{
			name: "validation with h2c, then the targets",
			spec: source.ExtensionServiceSpec{Services: []source.ExtensionServiceTarget{{Name: "gone", Port: 1}}, Protocol: xtStr("h2c"), Validation: xtValidation("ca")},
			wantErrors: []SubCondition{
				xtSpecErr(ReasonInconsistentProtocol, `upstream TLS validation not supported for "h2c" protocol`),
				xtSvcErr(ReasonServiceUnresolvedReference, `unresolved service "ext/gone": service "ext/gone" not found`),
			},
		},
		{
			name: "validation with http/1.1",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Protocol: xtStr("http/1.1"), Validation: xtValidation("ca")},
			wantErrors: []SubCondition{xtSpecErr(ReasonInconsistentProtocol,
				`upstream TLS validation not supported for "http/1.1" protocol`)},
		},
		{
			name: "CA Secret missing; validation stops further checks",
			spec: source.ExtensionServiceSpec{Services: []source.ExtensionServiceTarget{{Name: "gone", Port: 1}}, Validation: xtValidation("nope")},
			wantErrors: []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
				xtPolicyErr+`invalid CA Secret "ext/nope": Secret not found`)},
		},
		{
			name:       "CA Secret in another namespace without delegation",
			spec:       source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("certs/ca")},
			wantErrors: []SubCondition{xtTLSErr(ReasonCACertificateNotDelegated, xtNotDelegated)},
		},
		{
			name: "delegation of another Secret does not count",
			objs: func(o *source.Objects) {
				o.TLSCertificateDelegations = append(o.TLSCertificateDelegations, xtDelegation("other-ca", xtNS))
			},
			spec:       source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("certs/ca")},
			wantErrors: []SubCondition{xtTLSErr(ReasonCACertificateNotDelegated, xtNotDelegated)},
		},
		{
			name: "delegation to other namespaces does not count",
			objs: func(o *source.Objects) {
				o.TLSCertificateDelegations = append(o.TLSCertificateDelegations, xtDelegation("ca", "a", "b"))
			},
			spec:       source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("certs/ca")},
			wantErrors: []SubCondition{xtTLSErr(ReasonCACertificateNotDelegated, xtNotDelegated)},
		},
		{
			name: "a delegation from another namespace does not count",
			objs: func(o *source.Objects) {
				d := xtDelegation("ca", xtNS)
				d.Namespace = "elsewhere"
				o.TLSCertificateDelegations = append(o.TLSCertificateDelegations, d)
			},
			spec:       source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("certs/ca")},
			wantErrors: []SubCondition{xtTLSErr(ReasonCACertificateNotDelegated, xtNotDelegated)},
		},
		{
			name: "* among other targets is not a wildcard (as in Contour)",
			objs: func(o *source.Objects) {
				o.TLSCertificateDelegations = append(o.TLSCertificateDelegations, xtDelegation("ca", "a", "*"))
			},
			spec:       source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("certs/ca")},
			wantErrors: []SubCondition{xtTLSErr(ReasonCACertificateNotDelegated, xtNotDelegated)},
		},
		{
			name: "delegation is checked before existence",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("elsewhere/ca")},
			wantErrors: []SubCondition{xtTLSErr(ReasonCACertificateNotDelegated,
				`service.UpstreamValidation.CACertificate Secret "elsewhere/ca" is not configured for certificate delegation`)},
		},
		{
			name: "delegated but missing",
			objs: func(o *source.Objects) {
				o.TLSCertificateDelegations = append(o.TLSCertificateDelegations, xtDelegation("gone", "*"))
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("certs/gone")},
			wantErrors: []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
				xtPolicyErr+`invalid CA Secret "certs/gone": Secret not found`)},
		},
		{
			name: "CA Secret of the wrong type",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "token"}, Type: "kubernetes.io/service-account-token", CACrt: o.Secrets[0].CACrt})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("token")},
			wantErrors: []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
				xtPolicyErr+`invalid CA Secret "ext/token": secret type is not "kubernetes.io/tls" or "Opaque"`)},
		},
		{
			name: "CA Secret with empty ca.crt",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "empty"}, Type: "Opaque", CACrt: []byte{}})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("empty")},
			wantErrors: []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
				xtPolicyErr+`invalid CA Secret "ext/empty": empty "ca.crt" key`)},
		},
		{
			name: "CA Secret without ca.crt",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("client")},
			wantErrors: []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
				xtPolicyErr+`invalid CA Secret "ext/client": empty "ca.crt" key`)},
		},
		{
			name: "CA bundle without certificates",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "text"}, Type: "Opaque", CACrt: []byte("hello")})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("text")},
			wantErrors: []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
				xtPolicyErr+`invalid CA Secret "ext/text": invalid CA certificate bundle: failed to locate certificate`)},
		},
		{
			name: "CA bundle with a key in it",
			objs: func(o *source.Objects) {
				key := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "key"}, Type: "Opaque",
					CACrt: append(append([]byte{}, o.Secrets[0].CACrt...), key...)})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("key")},
			wantWarnings: []SubCondition{xtErr(SubConditionTLS, ReasonCACertificateBlocksIgnored,
				`service.UpstreamValidation.CACertificate Secret "ext/key": 1 of 2 PEM blocks are not certificates that parse and are left out, the first because: unexpected block type 'PRIVATE KEY'`)},
		},
		{
			name: "CA bundle with nothing but a key",
			objs: func(o *source.Objects) {
				key := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "key"}, Type: "Opaque", CACrt: key})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("key")},
			wantErrors: []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
				xtPolicyErr+`invalid CA Secret "ext/key": invalid CA certificate bundle: unexpected block type 'PRIVATE KEY'`)},
		},
		{
			// pem.Decode passes over a block that does not decode and
			// returns the next: the broken one is still counted.
			name: "CA bundle with a broken PEM block before a certificate",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "broken"}, Type: "Opaque",
					CACrt: append([]byte("-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----\n"), o.Secrets[0].CACrt...)})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("broken")},
			wantWarnings: []SubCondition{xtErr(SubConditionTLS, ReasonCACertificateBlocksIgnored,
				`service.UpstreamValidation.CACertificate Secret "ext/broken": 1 of 2 PEM blocks are not certificates that parse and are left out, the first because: failed to parse PEM block`)},
		},
		{
			name: "CA bundle with certificates that do not parse after one that does",
			objs: func(o *source.Objects) {
				der := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")})
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "der"}, Type: "Opaque",
					CACrt: slices.Concat(o.Secrets[0].CACrt, der, der)})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("der")},
			wantWarnings: []SubCondition{xtErr(SubConditionTLS, ReasonCACertificateBlocksIgnored,
				`service.UpstreamValidation.CACertificate Secret "ext/der": 2 of 3 PEM blocks are not certificates that parse and are left out, the first because: x509: malformed certificate`)},
		},
		{
			name: "CA bundle with a block type that is not UTF-8",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "latin1"}, Type: "Opaque",
					CACrt: pem.EncodeToMemory(&pem.Block{Type: "CL\xc9", Bytes: []byte{1}})})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("latin1")},
			wantErrors: []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
				xtPolicyErr+`invalid CA Secret "ext/latin1": invalid CA certificate bundle: unexpected block type `+"'CL\uFFFD'")},
		},
		{
			name: "CA bundle with a broken PEM block",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "broken"}, Type: "Opaque",
					CACrt: []byte("-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----\n")})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("broken")},
			wantErrors: []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
				xtPolicyErr+`invalid CA Secret "ext/broken": invalid CA certificate bundle: failed to parse PEM block`)},
		},
		{
			name: "CA bundle whose certificate does not parse (Contour would accept it)",
			objs: func(o *source.Objects) {
				o.Secrets = append(o.Secrets, source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "der"}, Type: "Opaque",
					CACrt: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")})})
			},
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("der")},
			wantErrors: []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
				xtPolicyErr+`invalid CA Secret "ext/der": invalid CA certificate bundle: x509: malformed certificate`)},
		},
		{
			name: "missing subject name",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: &source.UpstreamValidation{CASecret: "ca", SubjectNames: []string{"a"}}},
			wantErrors: []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
				xtPolicyErr+`missing subject alternative name`)},
		},
		{
			name: "first subject name differs from subjectName",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: &source.UpstreamValidation{CASecret: "ca", SubjectName: "a", SubjectNames: []string{"b", "a"}}},
			wantErrors: []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
				xtPolicyErr+`first entry of SubjectNames (b) does not match SubjectName (a)`)},
		},
		{
			name: "subject name too long for SNI",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: &source.UpstreamValidation{CASecret: "ca", SubjectName: strings.Repeat("a", 256)}},
			wantErrors: []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
				xtPolicyErr+`subject name "`+strings.Repeat("a", source.MaxQuotedBytes)+`"... is 256 bytes long, but as the SNI it must be at most 255 bytes`)},
		},
		{
			name: "subjectName not UTF-8 is reported before the mismatch",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: &source.UpstreamValidation{CASecret: "ca", SubjectName: "\xff", SubjectNames: []string{"a"}}},
			wantErrors: []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
				xtPolicyErr+`subject name "\xff" is not valid UTF-8`)},
		},
		{
			name: "subject name not UTF-8",
			spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: &source.UpstreamValidation{CASecret: "ca", SubjectName: "a", SubjectNames: []string{"a", "b\xff"}}},
			wantErrors: []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
				xtPolicyErr+`subject name "b\xff" is not valid UTF-8`)},
		},
	}
}
