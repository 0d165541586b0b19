package model

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/tributary-dev/tributary/internal/source"
)

// ReasonClientCertificateNotDelegated is the reason when the tls group's
// clientCertificate names a Secret of another namespace that no
// TLSCertificateDelegation lets the ExtensionService use (the client
// certificate's counterpart of CACertificateNotDelegated).
const ReasonClientCertificateNotDelegated = "ClientCertificateNotDelegated"

// tlsGroup is the JSON name of the tls group.
const tlsGroup = "tls"

// Bounds of the tls group's cipherSuites, the same as the upstreamTLS
// setting's (internal/server): every h2 Cluster repeats the list, and
// BoringSSL knows fewer than 30 names, none longer than 40 bytes.
const (
	maxTLSCipherSuites      = 64
	maxTLSCipherSuiteLength = 128
)

// tlsOptionApplies reports whether a field of the tls group, set to value,
// applies to an extension speaking protocol. TLS exists only for h2: set by
// the ExtensionService itself on h2c or http/1.1, the field is an error
// (the user asked for something that cannot happen); from the settings'
// defaults it simply does not apply, as a default is for every extension
// it fits.
func tlsOptionApplies(opts *optionsInForce, protocol Protocol, field, value string, cond *Condition) bool {
	if protocol == ProtocolH2 {
		return true
	}
	if opts.origins[tlsGroup] != originDefaults {
		cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
			"%s %s does not apply to protocol %s: only an %q extension speaks TLS",
			opts.field(tlsGroup, field), source.Quote(value), source.Quote(protocolLabel(protocol)), protocolH2))
	}
	return false
}

// protocolLabel is the spec.protocol value of p.
func protocolLabel(p Protocol) string {
	switch p {
	case ProtocolH2C:
		return protocolH2C
	case ProtocolHTTP11:
		return protocolHTTP11
	default:
		return protocolH2
	}
}

// protocolOfSpec classifies spec.protocol without reporting anything
// (parseProtocol reports an unknown one, later, in Contour's order); an
// unknown protocol counts as h2, as parseProtocol returns.
func protocolOfSpec(p *string) Protocol {
	switch protocolName(p) {
	case protocolH2C:
		return ProtocolH2C
	case protocolHTTP11:
		return ProtocolHTTP11
	default:
		return ProtocolH2
	}
}

// clientCertificateOption resolves the tls group's clientCertificate for an
// ExtensionService in namespace whose spec.protocol is protocol: set
// reports whether the ExtensionService has one of its own (which then
// replaces the clientCertificate setting, whose Secret is not looked at),
// and sdsName is its SDS name, "" when it is invalid (an error on cond).
//
// The Secret is checked as the setting's is (a kubernetes.io/tls Secret
// whose tls.crt holds a certificate), and one of another namespace needs a
// TLSCertificateDelegation, as the CA Secret of spec.validation does: the
// certificate is an identity, and its owner decides who may present it.
func (b *Builder) clientCertificateOption(namespace string, protocol *string, opts *optionsInForce, cond *Condition) (sdsName string, set bool) {
	t := opts.TLS
	if t == nil || t.ClientCertificate == nil {
		return "", false
	}
	ref := *t.ClientCertificate
	if !tlsOptionApplies(opts, protocolOfSpec(protocol), "clientCertificate", ref, cond) {
		// Set by the ExtensionService, it is an error already: the setting
		// would only add noise. From the defaults it is not applied, and
		// the setting is checked as for any other ExtensionService.
		return "", opts.origins[tlsGroup] != originDefaults
	}
	field := opts.field(tlsGroup, "clientCertificate")
	name, problem := clientCertificateRef(ref, namespace)
	if problem != "" {
		cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf("%s %s %s", field, source.Quote(ref), problem))
		return "", true
	}
	if !b.delegationPermitted(name, namespace) {
		cond.AddError(SubConditionTLS, ReasonClientCertificateNotDelegated, fmt.Sprintf(
			"%s Secret %s is not configured for certificate delegation to namespace %s",
			field, source.Quote(name.String()), source.Quote(namespace)))
		return "", true
	}
	sdsName, err := b.clientCertificateSDSName(name)
	if err != nil {
		cond.AddError(SubConditionTLS, ReasonSecretNotValid, fmt.Sprintf(
			"%s Secret %s is invalid: %v", field, source.Quote(name.String()), err))
		return "", true
	}
	return sdsName, true
}

// checkClientCertificateName checks the form of the tls group's
// clientCertificate ("name" or "namespace/name") without looking the
// Secret up; an error goes on cond.
func checkClientCertificateName(opts *optionsInForce, cond *Condition) {
	t := opts.TLS
	if t == nil || t.ClientCertificate == nil {
		return
	}
	if _, problem := clientCertificateRef(*t.ClientCertificate, ""); problem != "" {
		cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf("%s %s %s",
			opts.field(tlsGroup, "clientCertificate"), source.Quote(*t.ClientCertificate), problem))
	}
}

// clientCertificateRef reads a clientCertificate reference: "name" (in
// namespace) or "namespace/name", each part a valid Kubernetes name.
// problem says what is wrong with it, "" when nothing is.
func clientCertificateRef(ref, namespace string) (name source.NamespacedName, problem string) {
	ns, n, found := strings.Cut(ref, "/")
	if !found {
		ns, n = namespace, ref
	} else if ns == "" || strings.Contains(n, "/") {
		return name, `is not "name" or "namespace/name"`
	}
	if found && !IsDNS1123Label(ns) {
		return name, fmt.Sprintf("has namespace %s, which is not a namespace name (at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit)", source.Quote(ns))
	}
	if !IsDNS1123Subdomain(n) {
		return name, fmt.Sprintf("has name %s, which is not a Secret name (at most 253 lowercase letters, digits, '-' or '.', each dot-separated part starting and ending with a letter or digit)", source.Quote(n))
	}
	return source.NamespacedName{Namespace: ns, Name: n}, ""
}

// extensionSNI is the tls group's sni; set is false without one (or when
// it does not apply, or is invalid: an error on cond). It replaces the
// first subject name of spec.validation as the SNI, and works without
// spec.validation too.
func extensionSNI(opts *optionsInForce, protocol Protocol, cond *Condition) (sni string, set bool) {
	t := opts.TLS
	if t == nil || t.SNI == nil {
		return "", false
	}
	sni = *t.SNI
	if !tlsOptionApplies(opts, protocol, "sni", sni, cond) {
		return "", false
	}
	if problem := sniProblem(sni); problem != "" {
		cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
			"%s %s %s", opts.field(tlsGroup, "sni"), source.Quote(sni), problem))
		return "", false
	}
	return sni, true
}

// sniProblem says why name cannot be sent as SNI, "" when it can. The SNI
// extension carries a DNS host name (RFC 6066 section 3): ASCII labels,
// no IP literal, no trailing dot. Envoy checks only the 255-byte length;
// anything else it would send as given, and the extension's server would
// refuse or misroute the handshake.
func sniProblem(name string) string {
	switch {
	case name == "":
		return "is empty: leave it unset to send the first subject name of spec.validation"
	case len(name) > maxSNIBytes:
		return fmt.Sprintf("is %d bytes long; an SNI is at most %d bytes", len(name), maxSNIBytes)
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return "is an IP address, which SNI cannot carry (RFC 6066): use a host name"
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || !isSNILabel(label) {
			return "is not a host name: dot-separated labels of 1 to 63 ASCII letters, digits, '-' or '_'"
		}
	}
	return ""
}

// isSNILabel reports whether every byte of label is an ASCII letter,
// digit, '-' or '_' (which some internal names use, and TLS servers
// accept).
func isSNILabel(label string) bool {
	for i := range len(label) {
		c := label[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// extensionTLSParams are the TLS parameters in force: the tls group's
// versions and cipher suites when it sets any (they replace the
// upstreamTLS setting's parameters whole, as circuitBreakerPolicy replaces
// globalCircuitBreakers; what the group leaves unset is Envoy's default),
// else the upstreamTLS setting's.
//
// Unlike the setting, whose unknown versions mean Envoy's default, as in
// Contour, a version here must be "1.2" or "1.3": the option is new, so
// there is no existing configuration to keep working, and a typo must not
// silently mean the default.
func (b *Builder) extensionTLSParams(opts *optionsInForce, protocol Protocol, cond *Condition) *TLSParams {
	t := opts.TLS
	if t == nil || (t.MinimumProtocolVersion == nil && t.MaximumProtocolVersion == nil && t.CipherSuites == nil) {
		return b.tlsParams
	}
	applies := true
	for _, f := range []struct {
		name  string
		value *string
	}{
		{"minimumProtocolVersion", t.MinimumProtocolVersion},
		{"maximumProtocolVersion", t.MaximumProtocolVersion},
		{"cipherSuites", cipherSuitesValue(t.CipherSuites)},
	} {
		if f.value != nil && !tlsOptionApplies(opts, protocol, f.name, *f.value, cond) {
			applies = false
		}
	}
	if !applies {
		return b.tlsParams
	}
	params := &TLSParams{
		Minimum:      tlsOptionVersion(opts, "minimumProtocolVersion", t.MinimumProtocolVersion, cond),
		Maximum:      tlsOptionVersion(opts, "maximumProtocolVersion", t.MaximumProtocolVersion, cond),
		CipherSuites: checkTLSCipherSuites(opts, t.CipherSuites, cond),
	}
	if params.Minimum != TLSAuto && params.Maximum != TLSAuto && params.Minimum > params.Maximum {
		cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
			"%s %s is below %s %s",
			opts.field(tlsGroup, "maximumProtocolVersion"), source.Quote(*t.MaximumProtocolVersion),
			opts.field(tlsGroup, "minimumProtocolVersion"), source.Quote(*t.MinimumProtocolVersion)))
	}
	return params
}

// cipherSuitesValue is the list as its user wrote it, for a message; nil
// when unset.
func cipherSuitesValue(suites []string) *string {
	if suites == nil {
		return nil
	}
	s := strings.Join(suites, ",")
	return &s
}

// tlsOptionVersion reads a version of the tls group: unset is Envoy's
// default, "1.2" and "1.3" are themselves, anything else is an error.
func tlsOptionVersion(opts *optionsInForce, field string, raw *string, cond *Condition) TLSVersion {
	if raw == nil {
		return TLSAuto
	}
	switch *raw {
	case "1.2":
		return TLS12
	case "1.3":
		return TLS13
	}
	cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
		`%s %s must be "1.2" or "1.3"`, opts.field(tlsGroup, field), source.Quote(*raw)))
	return TLSAuto
}

// checkTLSCipherSuites bounds the group's cipherSuites as the upstreamTLS
// setting's are bounded, and refuses an empty name, which would break the
// colon-separated list Envoy gives BoringSSL. Whether BoringSSL knows a
// name is Envoy's to say, as for the setting.
func checkTLSCipherSuites(opts *optionsInForce, suites []string, cond *Condition) []string {
	if suites == nil {
		return nil
	}
	field := opts.field(tlsGroup, "cipherSuites")
	if len(suites) > maxTLSCipherSuites {
		cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
			"%s holds %d names; at most %d: BoringSSL knows fewer than 30 cipher suites, and the Cluster repeats the list",
			field, len(suites), maxTLSCipherSuites))
		return nil
	}
	for _, suite := range suites {
		switch {
		case suite == "":
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, field+" holds an empty name")
			return nil
		case len(suite) > maxTLSCipherSuiteLength:
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
				"%s name %s is %d bytes long; at most %d: the longest BoringSSL cipher suite name is under 40 bytes",
				field, source.Quote(suite), len(suite), maxTLSCipherSuiteLength))
			return nil
		case strings.ContainsAny(suite, ": \t"):
			// Envoy joins the names with ':' for BoringSSL; a name holding
			// one would smuggle in names the bound above never counted.
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
				"%s name %s holds ':' or a space; give one name per entry", field, source.Quote(suite)))
			return nil
		}
	}
	return suites
}

// ClientCertificateSecrets lists every Secret es may present as its own
// client certificate, from each place the tls group can come from
// (spec.options, the annotation, settings.ExtensionDefaults), whichever is
// in force: a caller tracking what es depends on (a Sync session) rebuilds
// es when any of them changes, which costs a rebuild at worst and never
// misses one. References that do not parse are left out: they name no
// Secret.
func ClientCertificateSecrets(es *source.ExtensionService, settings source.Settings) []source.NamespacedName {
	var refs []string
	if o := es.Spec.Options; o != nil && o.TLS != nil && o.TLS.ClientCertificate != nil {
		refs = append(refs, *o.TLS.ClientCertificate)
	}
	if ref, ok := es.Annotations[source.AnnotationKey(tlsGroup, "clientCertificate")]; ok {
		refs = append(refs, ref)
	}
	if d := settings.ExtensionDefaults; d != nil && d.TLS != nil && d.TLS.ClientCertificate != nil {
		refs = append(refs, *d.TLS.ClientCertificate)
	}
	var names []source.NamespacedName
	for _, ref := range refs {
		if name, problem := clientCertificateRef(ref, es.Namespace); problem == "" {
			names = append(names, name)
		}
	}
	return names
}
