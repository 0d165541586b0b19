package model

import (
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/tributary-dev/tributary/internal/source"
)

// Reasons of the sub-conditions build records.
const (
	ReasonInvalidName                = "InvalidName"
	ReasonTimeoutPolicyNotValid      = "TimeoutPolicyNotValid"
	ReasonSecretNotValid             = "SecretNotValid"
	ReasonIgnoredField               = "IgnoredField"
	ReasonUnsupportedProtocol        = "UnsupportedProtocol"
	ReasonCACertificateNotDelegated  = "CACertificateNotDelegated"
	ReasonTLSUpstreamValidation      = "TLSUpstreamValidation"
	ReasonInconsistentProtocol       = "InconsistentProtocol"
	ReasonNoTargets                  = "NoTargets"
	ReasonServiceUnresolvedReference = "ServiceUnresolvedReference"
	ReasonUnsupportedServiceType     = "UnsupportedServiceType"
	// ReasonCACertificateBlocksIgnored: some PEM blocks of the CA Secret's
	// ca.crt are not certificates that parse; they are left out of the
	// bundle Envoy is given (a warning: the rest still validates).
	ReasonCACertificateBlocksIgnored = "CACertificateBlocksIgnored"
)

// The spec.loadBalancerPolicy.strategy values that mean something.
const (
	strategyWeightedLeastRequest = "WeightedLeastRequest"
	strategyRandom               = "Random"
	strategyCookie               = "Cookie"
	strategyRequestHash          = "RequestHash"
	// strategyClientSideWeightedRoundRobin is not in Contour's list, but
	// its CRD's strategy has no enum, so Contour accepts it today (and
	// balances by round robin); here it means what it says.
	strategyClientSideWeightedRoundRobin = "ClientSideWeightedRoundRobin"
)

// The spec.protocol values.
const (
	protocolH2     = "h2"
	protocolH2C    = "h2c"
	protocolHTTP11 = "http/1.1"
)

// serviceTypeExternalName is the Service type that has no endpoints.
const serviceTypeExternalName = "ExternalName"

// build validates everything but endpoints, then calls buildLocalities.
// It records problems on st.Condition in the contract's order (timeouts,
// client certificate, load balancer and idle warnings, protocol, validation,
// protocol consistency, targets) and returns nil when it stops early.
//
// The settings are trusted: the API boundary has checked that XDSClusterName
// is non-empty, valid UTF-8 without control characters, and that
// ConnectTimeout is positive (NewBuilder fills the defaults), so the
// ExtensionCluster guarantees about them hold without checks here.
//
// Endpoints are looked at only when everything else is valid: an
// ExtensionService with an error yields nothing, so resolving its endpoints
// would be work for a status that already says it is invalid.
func (b *Builder) build(es *source.ExtensionService, found []TargetService, st *Status) *ExtensionCluster {
	cond := &st.Condition
	// b's own, set whole: nothing of the ExtensionService built before
	// stays (see Builder).
	ec := &b.cluster
	*ec = ExtensionCluster{
		Name:           ClusterName(es.Namespace, es.Name),
		XDSClusterName: b.settings.XDSClusterName,
		ConnectTimeout: b.settings.ConnectTimeout,
	}
	if err := checkClusterName(ec.Name); err != nil {
		cond.AddError(SubConditionSpec, ReasonInvalidName, err.Error())
	}

	timeouts, err := parseTimeoutPolicy(es.Spec.TimeoutPolicy)
	if err != nil {
		cond.AddError(SubConditionSpec, ReasonTimeoutPolicyNotValid, "spec.timeoutPolicy failed to parse: "+err.Error())
	}
	st.ResponseTimeout = timeouts.response.String()
	if t := timeouts.idleConnection; t.set {
		d := t.duration
		ec.IdleConnectionTimeout = &d
	}

	// Options come after the timeouts: an ExtensionService that sets none
	// keeps Contour's order of errors exactly.
	opts := b.resolveOptions(es, cond)

	// A client certificate of the ExtensionService's own replaces the
	// setting's, which is then not looked at.
	clientCertSDSName, ownClientCert := b.clientCertificateOption(es.Namespace, es.Spec.Protocol, opts, cond)
	if name := b.settings.ClientCertificate; name != nil && !ownClientCert {
		// Contour checks the setting for every ExtensionService, whatever
		// its protocol; so does this.
		if clientCertSDSName, err = b.clientCertificateSDSName(*name); err != nil {
			cond.AddError(SubConditionTLS, ReasonSecretNotValid,
				fmt.Sprintf("tls.envoy-client-certificate Secret %s is invalid: %v", source.Quote(name.String()), err))
		}
	}

	ec.LoadBalancer = b.loadBalancer(es.Spec.LoadBalancerPolicy, cond)
	if tp := es.Spec.TimeoutPolicy; tp != nil && tp.Idle != "" {
		cond.AddWarning(SubConditionSpec, ReasonIgnoredField,
			`ignoring field ".Spec.TimeoutPolicy.Idle"; idle timeouts are not supported for ExtensionClusters`)
	}

	protocol, protocolOK := parseProtocol(es.Spec.Protocol, cond)
	ec.Protocol = protocol
	ec.CircuitBreakers = b.circuitBreakers(es.Spec.CircuitBreakerPolicy)

	var validation upstreamValidation
	if v := es.Spec.Validation; v != nil {
		validation, err = b.lookupUpstreamValidation(v, es.Namespace)
		if err != nil {
			if errors.Is(err, errNotDelegated) {
				cond.AddError(SubConditionTLS, ReasonCACertificateNotDelegated,
					fmt.Sprintf("service.UpstreamValidation.CACertificate Secret %s is not configured for certificate delegation",
						source.Quote(CASecretName(v.CASecret, es.Namespace).String())))
			} else {
				cond.AddError(SubConditionSpec, ReasonTLSUpstreamValidation, "TLS upstream validation policy error: "+err.Error())
			}
			return nil
		}
		if validation.caSkipped != "" {
			cond.AddWarning(SubConditionTLS, ReasonCACertificateBlocksIgnored, fmt.Sprintf(
				"service.UpstreamValidation.CACertificate Secret %s: %s",
				source.Quote(CASecretName(v.CASecret, es.Namespace).String()), validation.caSkipped))
		}
		if protocolOK && protocol != ProtocolH2 {
			cond.AddError(SubConditionSpec, ReasonInconsistentProtocol,
				fmt.Sprintf("upstream TLS validation not supported for %s protocol", source.Quote(protocolName(es.Spec.Protocol))))
		}
	}

	sni, ownSNI := extensionSNI(opts, protocol, cond)
	params := b.extensionTLSParams(opts, protocol, cond)
	if protocol == ProtocolH2 {
		ec.TLS = &UpstreamTLS{
			CACertificate:            validation.caCertificate,
			SubjectNames:             validation.subjectNames,
			ClientCertificateSDSName: clientCertSDSName,
			Params:                   params,
		}
		if len(validation.subjectNames) > 0 {
			ec.TLS.SNI = validation.subjectNames[0]
		}
		if ownSNI {
			ec.TLS.SNI = sni
		}
	}

	ec.HealthCheck = b.healthCheck(opts, protocol, cond)
	ec.OutlierDetection = b.outlierDetection(opts, cond)
	ec.HTTP2Keepalive = b.http2Keepalive(opts, protocol, cond)
	ec.TCPKeepalive = b.tcpKeepalive(opts, cond)
	ec.ConnectionLimits = b.connectionLimits(opts, cond)
	ec.SlowStart = b.slowStart(opts, ec.LoadBalancer, cond)
	ec.ClientSideWeightedRoundRobin = b.clientSideWeightedRoundRobin(opts, ec.LoadBalancer, cond)

	if len(es.Spec.Services) == 0 {
		cond.AddError(SubConditionSpec, ReasonNoTargets,
			"spec.services is empty: an ExtensionService needs at least one target Service")
	}
	if found == nil {
		found = b.index.LookUpTargetServices(&b.scratch.found, es)
	}
	// Cleared, not just truncated: a target left from a larger build would
	// keep its Service alive.
	clear(b.scratch.resolved)
	targets := b.scratch.resolved[:0]
	for i, target := range es.Spec.Services {
		name := source.NamespacedName{Namespace: es.Namespace, Name: target.Name}
		if t, ok := b.resolveTarget(name, found[i], target, cond); ok {
			targets = append(targets, t)
		}
	}
	b.scratch.resolved = targets

	if len(cond.Errors) > 0 {
		return nil
	}
	external, ok := targetsAreExternalNames(es.Namespace, targets, cond)
	switch {
	case !ok:
		return nil
	case external:
		// Envoy resolves the names itself: a STRICT_DNS Cluster, no
		// endpoints to collect.
		if ec.DNS = buildDNSLocalities(es.Namespace, targets, st); ec.DNS == nil {
			return nil
		}
		return ec
	}
	ec.Localities = b.buildLocalities(es.Namespace, targets, st)
	return ec
}

// ClusterName is the name of the Cluster and ClusterLoadAssignment of an
// ExtensionService. Being derived from the namespaced name alone, it is
// unique and stays the same when the spec changes, so Envoy updates the
// Cluster rather than replacing it.
func ClusterName(namespace, name string) string {
	return "extension/" + namespace + "/" + name
}

// checkClusterName refuses a name that cannot travel in a protobuf string
// (invalid UTF-8) or that would make an unreadable Envoy stat and log name
// (control characters). Kubernetes never allows either; the API might.
func checkClusterName(name string) error {
	// Nearly every name is ASCII, where a control is below a space or DEL:
	// one pass over the bytes, and runes only past ASCII.
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= utf8.RuneSelf || c < ' ' || c == 0x7f {
			return checkClusterNameRunes(name)
		}
	}
	return nil
}

func checkClusterNameRunes(name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("cluster name %s derived from metadata.namespace and metadata.name is not valid UTF-8", source.Quote(name))
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("cluster name %s derived from metadata.namespace and metadata.name contains a control character", source.Quote(name))
		}
	}
	return nil
}

// loadBalancer maps spec.loadBalancerPolicy.strategy; anything unknown means
// round robin, as in Contour. Cookie and RequestHash need a hash policy an
// ExtensionService cannot express, so they fall back to round robin with a
// warning.
func (b *Builder) loadBalancer(p *source.LoadBalancerPolicy, cond *Condition) LoadBalancer {
	if p == nil {
		return LoadBalancerRoundRobin
	}
	switch p.Strategy {
	case strategyWeightedLeastRequest:
		return LoadBalancerLeastRequest
	case strategyRandom:
		return LoadBalancerRandom
	case strategyClientSideWeightedRoundRobin:
		return LoadBalancerClientSideWeightedRoundRobin
	case strategyCookie, strategyRequestHash:
		cond.AddWarning(SubConditionSpec, ReasonIgnoredField, fmt.Sprintf(
			"ignoring field %q; %s load balancer policy is not supported for ExtensionClusters",
			".Spec.LoadBalancerPolicy", p.Strategy))
	}
	return LoadBalancerRoundRobin
}

// parseProtocol reads spec.protocol; absent or empty means h2, as in
// Contour. Contour relies on its CRD to refuse anything else; here an
// unknown protocol is an error (and ok is false), so it never silently
// becomes h2 over TLS.
func parseProtocol(p *string, cond *Condition) (protocol Protocol, ok bool) {
	switch protocolName(p) {
	case protocolH2:
		return ProtocolH2, true
	case protocolH2C:
		return ProtocolH2C, true
	case protocolHTTP11:
		return ProtocolHTTP11, true
	}
	cond.AddError(SubConditionSpec, ReasonUnsupportedProtocol, fmt.Sprintf(
		"spec.protocol %s is not supported: use %q, %q or %q", source.Quote(*p), protocolH2, protocolH2C, protocolHTTP11))
	return ProtocolH2, false
}

// protocolName is spec.protocol with the default applied.
func protocolName(p *string) string {
	if p == nil || *p == "" {
		return protocolH2
	}
	return *p
}

// circuitBreakers returns the thresholds in force: the ExtensionService's
// policy replaces the global defaults as a whole, never field by field. The
// result is nil when no threshold is set, since Envoy then keeps its own
// defaults.
func (b *Builder) circuitBreakers(policy *source.CircuitBreakers) *source.CircuitBreakers {
	cb := b.settings.GlobalCircuitBreakers
	if policy != nil {
		cb = policy
	}
	if cb == nil || *cb == (source.CircuitBreakers{}) {
		return nil
	}
	c := *cb
	return &c
}

// tlsParams maps the upstreamTLS setting; nil stays nil.
func tlsParams(s *source.UpstreamTLS) *TLSParams {
	if s == nil {
		return nil
	}
	return &TLSParams{
		Minimum:      tlsVersion(s.MinimumProtocolVersion),
		Maximum:      tlsVersion(s.MaximumProtocolVersion),
		CipherSuites: s.CipherSuites,
	}
}

// tlsVersion maps "1.2" and "1.3"; anything else leaves the choice to Envoy.
func tlsVersion(v string) TLSVersion {
	switch v {
	case "1.2":
		return TLS12
	case "1.3":
		return TLS13
	}
	return TLSAuto
}

// resolveTarget finds the port a spec target names on found, what its
// name resolved to: in the ExtensionService's namespace only (a
// cross-namespace reference would let an ExtensionService reach Services
// its author does not own).
func (b *Builder) resolveTarget(name source.NamespacedName, found TargetService, target source.ExtensionServiceTarget, cond *Condition) (resolvedTarget, bool) {
	svc, port, err := b.lookupService(name, found, target.Port)
	if err != nil {
		cond.AddError(SubConditionService, ReasonServiceUnresolvedReference,
			fmt.Sprintf("unresolved service %s: %v", source.Quote(name.String()), err))
		return resolvedTarget{}, false
	}
	// An ExternalName Service has no endpoints to balance over: it is
	// Contour's error unless the setting allows it (see externalname.go).
	if isExternalName(svc) && !b.resolveExternalName(name, svc, cond) {
		return resolvedTarget{}, false
	}
	return resolvedTarget{service: svc, port: port, weight: target.Weight}, true
}

// lookupService returns the Service found under name and its first port
// whose number is port or whose name is port written in decimal, as
// Contour matches. The first matching port decides: if its protocol is
// neither TCP nor empty, the lookup fails even if a later port would
// match.
//
// The Service's EndpointSlices come with it; b remembers them for the
// collector (see resolvedSlices).
func (b *Builder) lookupService(name source.NamespacedName, found TargetService, port int32) (*source.Service, source.ServicePort, error) {
	svc := found.Service
	if svc == nil {
		return nil, source.ServicePort{}, fmt.Errorf("service %s not found", source.Quote(name.String()))
	}
	for _, p := range svc.Ports {
		if p.Port != port && !isDecimal(p.Name, port) {
			continue
		}
		if p.Protocol != "" && p.Protocol != "TCP" {
			return nil, source.ServicePort{}, fmt.Errorf("unsupported service protocol %s", source.Quote(p.Protocol))
		}
		b.resolved.remember(found)
		return svc, p, nil
	}
	return nil, source.ServicePort{}, fmt.Errorf("port %q on service %s not matched", strconv.Itoa(int(port)), source.Quote(name.String()))
}

// isDecimal reports whether name is n written in decimal, without making
// the string: every port of every target is compared.
func isDecimal(name string, n int32) bool {
	var digits [11]byte // "-2147483648"
	return name == string(strconv.AppendInt(digits[:0], int64(n), 10))
}
