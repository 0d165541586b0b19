package model

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/source"
)

// optCase is one ExtensionService of the option tests: the base world
// (xtWorld) changed by objs, under settings, with its annotations and
// spec; want is the whole ExtensionCluster's option-relevant part, checked
// by the test that runs the cases.
type optCase struct {
	name        string
	objs        func(*source.Objects)
	settings    source.Settings
	annotations map[string]string
	spec        source.ExtensionServiceSpec
	wantErrors  []SubCondition
}

// optBuild builds the case's ExtensionService and fails t unless its
// errors are exactly wantErrors (an ExtensionCluster comes back exactly
// when there are none).
func optBuild(t *testing.T, tc optCase) *ExtensionCluster {
	t.Helper()
	objs := xtWorld(t)
	if tc.objs != nil {
		tc.objs(&objs)
	}
	es := source.ExtensionService{Meta: source.Meta{Namespace: xtNS, Name: "authz", Annotations: tc.annotations}, Spec: tc.spec}
	if es.Spec.Services == nil {
		es.Spec.Services = xtTarget
	}
	objs.ExtensionServices = append(objs.ExtensionServices, es)
	ec, st := buildOf(NewBuilder(NewIndex(&objs), tc.settings), &objs.ExtensionServices[len(objs.ExtensionServices)-1], nil)
	if diff := cmp.Diff(tc.wantErrors, st.Condition.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if (ec == nil) != (len(tc.wantErrors) > 0) {
		t.Fatalf("ExtensionCluster %v with errors %v", ec, st.Condition.Errors)
	}
	return ec
}

func optSpecErr(msg string) SubCondition { return xtSpecErr(ReasonOptionNotValid, msg) }

// tlsOptions is a spec with the tls group as spec.options.
func tlsOptions(protocol *string, v *source.UpstreamValidation, g source.ExtensionTLS) source.ExtensionServiceSpec {
	return source.ExtensionServiceSpec{Protocol: protocol, Validation: v, Options: &source.ExtensionOptions{TLS: &g}}
}

// certsClient adds "certs/client", the "client" certificate in namespace
// certs, and optionally a delegation of it to the given namespaces.
func certsClient(t *testing.T, targets ...string) func(*source.Objects) {
	return func(o *source.Objects) {
		o.Secrets = append(o.Secrets, source.Secret{
			Meta: source.Meta{Namespace: "certs", Name: "client"}, Type: "kubernetes.io/tls", TLSCrt: xtCertPEM(t, 2, "envoy-client"),
		})
		if len(targets) > 0 {
			o.TLSCertificateDelegations = append(o.TLSCertificateDelegations, xtDelegation("client", targets...))
		}
	}
}

// TestTLSOptions holds the tls group to what it promises: the SNI, the
// client certificate and the TLS parameters of an h2 extension, each
// replacing what spec.validation or the settings would give, every
// validation error with its exact message, and the group on a cleartext
// extension (an error when the ExtensionService sets it, nothing when it
// is a default).
func TestTLSOptions(t *testing.T) {
	setting := &source.UpstreamTLS{MinimumProtocolVersion: "1.2", CipherSuites: []string{"ECDHE-ECDSA-AES128-GCM-SHA256"}}
	settingParams := &TLSParams{Minimum: TLS12, CipherSuites: []string{"ECDHE-ECDSA-AES128-GCM-SHA256"}}
	missingClientCert := source.Settings{ClientCertificate: &source.NamespacedName{Namespace: xtNS, Name: "missing"}}
	h2c, http11 := xtStr("h2c"), xtStr("http/1.1")
	tests := []struct {
		optCase
		want *UpstreamTLS
	}{{
		optCase: optCase{name: "sni without validation", spec: tlsOptions(nil, nil, source.ExtensionTLS{SNI: xtStr("authz.internal")})},
		want:    &UpstreamTLS{SNI: "authz.internal"},
	}, {
		optCase: optCase{
			name: "sni replaces the first subject name as SNI, not as a name to verify",
			spec: tlsOptions(nil, xtValidation("ca"), source.ExtensionTLS{SNI: xtStr("authz-v2.internal")}),
		},
		want: &UpstreamTLS{SNI: "authz-v2.internal", CACertificate: xtCertPEM(t, 1, "test-ca"), SubjectNames: []string{"authz.ext.svc"}},
	}, {
		optCase: optCase{name: "sni from an annotation", annotations: map[string]string{"tributary.dev/tls-sni": "Authz_1.example"}},
		want:    &UpstreamTLS{SNI: "Authz_1.example"},
	}, {
		optCase: optCase{name: "sni from the defaults", settings: source.Settings{ExtensionDefaults: &source.ExtensionOptions{
			TLS: &source.ExtensionTLS{SNI: xtStr("authz.internal")},
		}}},
		want: &UpstreamTLS{SNI: "authz.internal"},
	}, {
		optCase: optCase{
			name:        "spec.options replaces the annotations' group whole",
			annotations: map[string]string{"tributary.dev/tls-sni": "from.annotation", "tributary.dev/tls-client-certificate": "client"},
			spec:        tlsOptions(nil, nil, source.ExtensionTLS{SNI: xtStr("from.spec")}),
		},
		want: &UpstreamTLS{SNI: "from.spec"},
	}, {
		optCase: optCase{
			name: "sni empty",
			spec: tlsOptions(nil, nil, source.ExtensionTLS{SNI: xtStr("")}),
			wantErrors: []SubCondition{optSpecErr(
				`spec.options.tls.sni "" is empty: leave it unset to send the first subject name of spec.validation`)},
		},
	}, {
		optCase: optCase{
			name:       "sni too long",
			spec:       tlsOptions(nil, nil, source.ExtensionTLS{SNI: xtStr(strings.Repeat("a.", 128))}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.tls.sni "` + strings.Repeat("a.", 50) + `"... is 256 bytes long; an SNI is at most 255 bytes`)},
		},
	}, {
		optCase: optCase{
			name:        "sni an IP address",
			annotations: map[string]string{"tributary.dev/tls-sni": "10.0.0.1"},
			wantErrors:  []SubCondition{optSpecErr(`"tributary.dev/tls-sni" "10.0.0.1" is an IP address, which SNI cannot carry (RFC 6066): use a host name`)},
		},
	}, {
		optCase: optCase{
			name:       "sni with a space",
			spec:       tlsOptions(nil, nil, source.ExtensionTLS{SNI: xtStr("authz internal")}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.tls.sni "authz internal" is not a host name: dot-separated labels of 1 to 63 ASCII letters, digits, '-' or '_'`)},
		},
	}, {
		optCase: optCase{
			name:       "sni with a control character",
			spec:       tlsOptions(nil, nil, source.ExtensionTLS{SNI: xtStr("authz\n.internal")}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.tls.sni "authz\n.internal" is not a host name: dot-separated labels of 1 to 63 ASCII letters, digits, '-' or '_'`)},
		},
	}, {
		optCase: optCase{
			name:       "sni with an empty label (a trailing dot)",
			spec:       tlsOptions(nil, nil, source.ExtensionTLS{SNI: xtStr("authz.internal.")}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.tls.sni "authz.internal." is not a host name: dot-separated labels of 1 to 63 ASCII letters, digits, '-' or '_'`)},
		},
	}, {
		optCase: optCase{
			name:       "sni with a label of 64 bytes",
			spec:       tlsOptions(nil, nil, source.ExtensionTLS{SNI: xtStr(strings.Repeat("a", 64) + ".internal")}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.tls.sni "` + strings.Repeat("a", 64) + `.internal" is not a host name: dot-separated labels of 1 to 63 ASCII letters, digits, '-' or '_'`)},
		},
	}, {
		optCase: optCase{
			name:       "sni not ASCII",
			spec:       tlsOptions(nil, nil, source.ExtensionTLS{SNI: xtStr("bücher.example")}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.tls.sni "bücher.example" is not a host name: dot-separated labels of 1 to 63 ASCII letters, digits, '-' or '_'`)},
		},
	}, {
		optCase: optCase{
			name: "the tls group on h2c, set by the ExtensionService: one error per field",
			spec: tlsOptions(h2c, nil, source.ExtensionTLS{SNI: xtStr("authz.internal"), MinimumProtocolVersion: xtStr("1.3"), CipherSuites: []string{"A", "B"}}),
			wantErrors: []SubCondition{
				optSpecErr(`spec.options.tls.sni "authz.internal" does not apply to protocol "h2c": only an "h2" extension speaks TLS`),
				optSpecErr(`spec.options.tls.minimumProtocolVersion "1.3" does not apply to protocol "h2c": only an "h2" extension speaks TLS`),
				optSpecErr(`spec.options.tls.cipherSuites "A,B" does not apply to protocol "h2c": only an "h2" extension speaks TLS`),
			},
		},
	}, {
		optCase: optCase{
			name:        "the tls group on http/1.1, from annotations",
			annotations: map[string]string{"tributary.dev/tls-maximum-protocol-version": "1.2"},
			spec:        source.ExtensionServiceSpec{Protocol: http11},
			wantErrors: []SubCondition{optSpecErr(
				`"tributary.dev/tls-maximum-protocol-version" "1.2" does not apply to protocol "http/1.1": only an "h2" extension speaks TLS`)},
		},
	}, {
		optCase: optCase{
			name: "the tls group from the defaults does not apply to h2c",
			spec: source.ExtensionServiceSpec{Protocol: h2c},
			settings: source.Settings{ExtensionDefaults: &source.ExtensionOptions{
				TLS: &source.ExtensionTLS{SNI: xtStr("authz.internal"), MinimumProtocolVersion: xtStr("1.3")},
			}},
		},
	}, {
		optCase: optCase{
			name:     "client certificate of the ExtensionService's namespace, replacing the setting (whose Secret is not looked at)",
			settings: missingClientCert,
			spec:     tlsOptions(nil, nil, source.ExtensionTLS{ClientCertificate: xtStr("client")}),
		},
		want: &UpstreamTLS{ClientCertificateSDSName: xtClientSDSName},
	}, {
		optCase: optCase{
			name:        "client certificate \"namespace/name\" of its own namespace, from an annotation",
			annotations: map[string]string{"tributary.dev/tls-client-certificate": "ext/client"},
		},
		want: &UpstreamTLS{ClientCertificateSDSName: xtClientSDSName},
	}, {
		optCase: optCase{
			name:     "client certificate \"name\" from the defaults is looked up in each ExtensionService's namespace",
			settings: source.Settings{ExtensionDefaults: &source.ExtensionOptions{TLS: &source.ExtensionTLS{ClientCertificate: xtStr("client")}}},
		},
		want: &UpstreamTLS{ClientCertificateSDSName: xtClientSDSName},
	}, {
		optCase: optCase{
			name: "client certificate of another namespace, delegated",
			objs: certsClient(t, xtNS),
			spec: tlsOptions(nil, nil, source.ExtensionTLS{ClientCertificate: xtStr("certs/client")}),
		},
		want: &UpstreamTLS{ClientCertificateSDSName: "certs/client/" + xtClientDigest},
	}, {
		optCase: optCase{
			name: "client certificate of another namespace, delegated to every namespace",
			objs: certsClient(t, "*"),
			spec: tlsOptions(nil, nil, source.ExtensionTLS{ClientCertificate: xtStr("certs/client")}),
		},
		want: &UpstreamTLS{ClientCertificateSDSName: "certs/client/" + xtClientDigest},
	}, {
		optCase: optCase{
			name:     "client certificate of another namespace, not delegated (and the setting is not checked)",
			objs:     certsClient(t, "other"),
			settings: missingClientCert,
			spec:     tlsOptions(nil, nil, source.ExtensionTLS{ClientCertificate: xtStr("certs/client")}),
			wantErrors: []SubCondition{xtTLSErr(ReasonClientCertificateNotDelegated,
				`spec.options.tls.clientCertificate Secret "certs/client" is not configured for certificate delegation to namespace "ext"`)},
		},
	}, {
		optCase: optCase{
			name: "client certificate missing",
			spec: tlsOptions(nil, nil, source.ExtensionTLS{ClientCertificate: xtStr("nope")}),
			wantErrors: []SubCondition{xtTLSErr(ReasonSecretNotValid,
				`spec.options.tls.clientCertificate Secret "ext/nope" is invalid: Secret not found`)},
		},
	}, {
		optCase: optCase{
			name:        "client certificate not a kubernetes.io/tls Secret",
			annotations: map[string]string{"tributary.dev/tls-client-certificate": "ca"},
			wantErrors: []SubCondition{xtTLSErr(ReasonSecretNotValid,
				`"tributary.dev/tls-client-certificate" Secret "ext/ca" is invalid: secret type is not "kubernetes.io/tls"`)},
		},
	}, {
		optCase: optCase{
			name:       "client certificate with two slashes",
			spec:       tlsOptions(nil, nil, source.ExtensionTLS{ClientCertificate: xtStr("a/b/c")}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.tls.clientCertificate "a/b/c" is not "name" or "namespace/name"`)},
		},
	}, {
		optCase: optCase{
			name:       "client certificate with an empty namespace",
			spec:       tlsOptions(nil, nil, source.ExtensionTLS{ClientCertificate: xtStr("/client")}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.tls.clientCertificate "/client" is not "name" or "namespace/name"`)},
		},
	}, {
		optCase: optCase{
			name: "client certificate with a bad namespace",
			spec: tlsOptions(nil, nil, source.ExtensionTLS{ClientCertificate: xtStr("Certs/client")}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.tls.clientCertificate "Certs/client" has namespace "Certs", which is not a namespace name ` +
				`(at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit)`)},
		},
	}, {
		optCase: optCase{
			name: "client certificate with a bad name",
			spec: tlsOptions(nil, nil, source.ExtensionTLS{ClientCertificate: xtStr("client_cert")}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.tls.clientCertificate "client_cert" has name "client_cert", which is not a Secret name ` +
				`(at most 253 lowercase letters, digits, '-' or '.', each dot-separated part starting and ending with a letter or digit)`)},
		},
	}, {
		optCase: optCase{name: "the setting's parameters without versions or ciphers in the group", settings: source.Settings{UpstreamTLS: setting},
			spec: tlsOptions(nil, nil, source.ExtensionTLS{SNI: xtStr("authz.internal")})},
		want: &UpstreamTLS{SNI: "authz.internal", Params: settingParams},
	}, {
		optCase: optCase{name: "one version in the group replaces the setting's parameters whole", settings: source.Settings{UpstreamTLS: setting},
			spec: tlsOptions(nil, nil, source.ExtensionTLS{MaximumProtocolVersion: xtStr("1.3")})},
		want: &UpstreamTLS{Params: &TLSParams{Maximum: TLS13}},
	}, {
		optCase: optCase{name: "every parameter, from annotations", annotations: map[string]string{
			"tributary.dev/tls-minimum-protocol-version": "1.2",
			"tributary.dev/tls-maximum-protocol-version": "1.2",
			"tributary.dev/tls-cipher-suites":            "[ECDHE-ECDSA-AES128-GCM-SHA256|ECDHE-ECDSA-CHACHA20-POLY1305], ECDHE-RSA-AES128-GCM-SHA256",
		}},
		want: &UpstreamTLS{Params: &TLSParams{Minimum: TLS12, Maximum: TLS12, CipherSuites: []string{
			"[ECDHE-ECDSA-AES128-GCM-SHA256|ECDHE-ECDSA-CHACHA20-POLY1305]", "ECDHE-RSA-AES128-GCM-SHA256",
		}}},
	}, {
		optCase: optCase{
			name: "versions other than 1.2 and 1.3 are errors, unlike the setting's",
			spec: tlsOptions(nil, nil, source.ExtensionTLS{MinimumProtocolVersion: xtStr("1.1"), MaximumProtocolVersion: xtStr("TLSv1_3")}),
			wantErrors: []SubCondition{
				optSpecErr(`spec.options.tls.minimumProtocolVersion "1.1" must be "1.2" or "1.3"`),
				optSpecErr(`spec.options.tls.maximumProtocolVersion "TLSv1_3" must be "1.2" or "1.3"`),
			},
		},
	}, {
		optCase: optCase{
			name:       "maximum below minimum",
			spec:       tlsOptions(nil, nil, source.ExtensionTLS{MinimumProtocolVersion: xtStr("1.3"), MaximumProtocolVersion: xtStr("1.2")}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.tls.maximumProtocolVersion "1.2" is below spec.options.tls.minimumProtocolVersion "1.3"`)},
		},
	}, {
		optCase: optCase{
			name: "too many cipher suites",
			spec: tlsOptions(nil, nil, source.ExtensionTLS{CipherSuites: make([]string, 65)}),
			wantErrors: []SubCondition{optSpecErr(
				`spec.options.tls.cipherSuites holds 65 names; at most 64: BoringSSL knows fewer than 30 cipher suites, and the Cluster repeats the list`)},
		},
	}, {
		optCase: optCase{
			name: "a cipher suite name too long",
			spec: tlsOptions(nil, nil, source.ExtensionTLS{CipherSuites: []string{strings.Repeat("A", 129)}}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.tls.cipherSuites name "` + strings.Repeat("A", 100) +
				`"... is 129 bytes long; at most 128: the longest BoringSSL cipher suite name is under 40 bytes`)},
		},
	}, {
		optCase: optCase{
			name:       "an empty cipher suite name",
			spec:       tlsOptions(nil, nil, source.ExtensionTLS{CipherSuites: []string{"A", ""}}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.tls.cipherSuites holds an empty name`)},
		},
	}, {
		optCase: optCase{
			name:       "a cipher suite list in one name",
			spec:       tlsOptions(nil, nil, source.ExtensionTLS{CipherSuites: []string{"A:B"}}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.tls.cipherSuites name "A:B" holds ':' or a space; give one name per entry`)},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ec := optBuild(t, tc.optCase)
			if ec == nil {
				return
			}
			if diff := cmp.Diff(tc.want, ec.TLS); diff != "" {
				t.Errorf("TLS (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClientCertificateOptionByProtocol: on a cleartext extension the
// clientCertificate of the ExtensionService's own is an error and keeps
// the setting from being checked (an error already stands), while a
// default's is not applied and the setting is checked, as Contour checks
// it for every ExtensionService.
func TestClientCertificateOptionByProtocol(t *testing.T) {
	objs := xtWorld(t)
	b := NewBuilder(NewIndex(&objs), source.Settings{})
	group := &source.ExtensionOptions{TLS: &source.ExtensionTLS{ClientCertificate: xtStr("nope")}}
	tests := []struct {
		name       string
		protocol   *string
		spec       *source.ExtensionOptions
		defaults   *source.ExtensionOptions
		wantSet    bool
		wantErrors []SubCondition
	}{{
		name: "own, on h2c", protocol: xtStr("h2c"), spec: group, wantSet: true,
		wantErrors: []SubCondition{optSpecErr(`spec.options.tls.clientCertificate "nope" does not apply to protocol "h2c": only an "h2" extension speaks TLS`)},
	}, {
		name: "default, on http/1.1", protocol: xtStr("http/1.1"), defaults: group,
	}, {
		name: "default, on h2 (unset)", defaults: group, wantSet: true,
		wantErrors: []SubCondition{xtTLSErr(ReasonSecretNotValid,
			`setting extensionDefaults.tls.clientCertificate Secret "ext/nope" is invalid: Secret not found`)},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b.settings.ExtensionDefaults = tc.defaults
			var cond Condition
			opts := b.resolveOptions(&source.ExtensionService{Meta: source.Meta{Namespace: xtNS}, Spec: source.ExtensionServiceSpec{Options: tc.spec}}, &cond)
			sds, set := b.clientCertificateOption(xtNS, tc.protocol, opts, &cond)
			if sds != "" || set != tc.wantSet {
				t.Errorf("got %q, %v; want \"\", %v", sds, set, tc.wantSet)
			}
			if diff := cmp.Diff(tc.wantErrors, cond.Errors); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckExtensionDefaultsTLS: a default tls group is checked as if it
// applied to an h2 extension; its clientCertificate only for its form.
func TestCheckExtensionDefaultsTLS(t *testing.T) {
	got := CheckExtensionDefaults(source.Settings{ExtensionDefaults: &source.ExtensionOptions{TLS: &source.ExtensionTLS{
		SNI:                    xtStr("a b"),
		ClientCertificate:      xtStr("ns/"),
		MinimumProtocolVersion: xtStr("1.0"),
		CipherSuites:           []string{""},
	}}})
	want := []string{
		`setting extensionDefaults.tls.clientCertificate "ns/" has name "", which is not a Secret name (at most 253 lowercase letters, digits, '-' or '.', each dot-separated part starting and ending with a letter or digit)`,
		`setting extensionDefaults.tls.sni "a b" is not a host name: dot-separated labels of 1 to 63 ASCII letters, digits, '-' or '_'`,
		`setting extensionDefaults.tls.minimumProtocolVersion "1.0" must be "1.2" or "1.3"`,
		`setting extensionDefaults.tls.cipherSuites holds an empty name`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if got := CheckExtensionDefaults(source.Settings{ExtensionDefaults: &source.ExtensionOptions{TLS: &source.ExtensionTLS{
		ClientCertificate: xtStr("certs/client"), SNI: xtStr("authz.internal"),
	}}}); len(got) != 0 {
		t.Errorf("valid defaults: %q", got)
	}
}
