package translate

import (
	"strings"

	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	wrrlocalityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/internal/source"
)

// What the options beyond Contour's CRD add to an ExtensionService's
// output (see Estimator). Each option group present adds a fixed number
// of bytes to the Cluster, bounded from the proto fields it may fill (every
// duration, wrapper and enum at its widest), plus the strings the user
// controls. Which group is in force is model's decision (spec.options,
// else annotations, else the settings' extensionDefaults, per group);
// rather than repeat it, the bound counts a group present in any of the
// three places, and each string at the longest it is in any of them, so
// that it stays a bound whatever model picks. An annotation's value is
// counted at its length as written, whatever it means.

// Bounds of what each option group puts into a Cluster, besides the
// strings counted on their own. A duration field is at most 20 bytes (a
// two-byte tag, a length, a ten-byte seconds varint and a five-byte nanos
// one, each with its tag); a wrapped uint32 at most 9.
const (
	durationFieldBytes = 20
	wrapperFieldBytes  = 9
	// healthCheckFixedBytes: one health_checks entry (timeout, interval
	// and room for four more durations, three thresholds, the
	// grpc_health_check around the two strings, and the entry's own tag
	// and length).
	healthCheckFixedBytes = 6*durationFieldBytes + 3*wrapperFieldBytes + 12 + 6
	// healthCheckConfigBytes is what a health check port adds to every
	// endpoint: Endpoint.health_check_config{port_value}, a tag, a length,
	// and a tagged varint of at most three bytes. The messages around an
	// IP endpoint stay under 128 bytes with it, so their lengths grow no
	// byte longer (see lbEndpoint).
	healthCheckConfigBytes = 6
	// outlierDetectionBytes: outlier_detection with four durations and
	// every one of its twenty-odd wrapped numbers and flags.
	outlierDetectionBytes = 4*durationFieldBytes + 20*wrapperFieldBytes + 16
	// tlsGroupFixedBytes: tls_params with both versions, and the lengths
	// of the TLS messages around the SNI and cipher suites growing.
	tlsGroupFixedBytes = 32
	// sdsConfigFixedBytes: a client certificate's SDS config besides its
	// name and the xDS cluster's name twice.
	sdsConfigFixedBytes = 48
	// http2KeepaliveBytes: connection_keepalive with its durations and
	// jitter, and the six lengths around it (the protocol options' map
	// entry, Any and messages) one byte longer each.
	http2KeepaliveBytes = 4*durationFieldBytes + 12 + 6
	// connectionLimitsBytes: common_http_protocol_options with
	// max_connection_duration and max_requests_per_connection, and the
	// lengths around it growing.
	connectionLimitsBytes = durationFieldBytes + wrapperFieldBytes + 16
	// tcpKeepaliveBytes: upstream_connection_options.tcp_keepalive with
	// its three wrapped numbers.
	tcpKeepaliveBytes = 3*wrapperFieldBytes + 8
	// slowStartFixedBytes: an lb_config with slow_start_config (window,
	// aggression, min_weight_percent), besides the aggression's runtime
	// key; slowStartKeyBytes bounds that key beyond the Cluster's name
	// it holds.
	slowStartFixedBytes = durationFieldBytes + 2*12 + 16
	slowStartKeyBytes   = 64
	// cswrrFixedBytes: load_balancing_policy's wrr_locality around
	// client_side_weighted_round_robin, besides the two policies' names
	// (at most policyNameBytes each) and type URLs: the nine message
	// headers between them at their widest, and the inner policy's flag,
	// four durations and penalty.
	cswrrFixedBytes = 9*4 + 4 + 4*durationFieldBytes + 8
	policyNameBytes = 64
	// dnsFixedBytes is what a STRICT_DNS Cluster adds besides its inline
	// endpoints: dns_lookup_family, and load_assignment's tag and length.
	dnsFixedBytes = 16
	// availabilityFixedBytes is one TargetAvailability in a status besides
	// the Service's name: its tag and length, a port, two counts and the
	// longest reason ("NoReadyEndpoints"), each tagged. A status is
	// estimated, not bounded: a port out of range, wider here, makes the
	// ExtensionService invalid, and its status has no availability.
	availabilityFixedBytes = 2 + 4 + 6 + 6 + 18
	// hostnamePortBytes bounds a DNS endpoint's port (a tagged varint).
	hostnamePortBytes = 3
)

// The type URLs of the two load balancing policies.
var (
	wrrLocalityTypeURL = typeURL(&wrrlocalityv3.WrrLocality{})
	cswrrTypeURL       = typeURL(&cswrrv3.ClientSideWeightedRoundRobin{})
)

func typeURL(m proto.Message) string {
	return "type.googleapis.com/" + string(m.ProtoReflect().Descriptor().FullName())
}

// cswrrBytes bounds the load_balancing_policy of strategy
// ClientSideWeightedRoundRobin.
var cswrrBytes = cswrrFixedBytes + 2*stringField(policyNameBytes) +
	stringField(len(wrrLocalityTypeURL)) + stringField(len(cswrrTypeURL))

// optionGroups is a set of option groups.
type optionGroups uint16

const (
	optHealthCheck optionGroups = 1 << iota
	optOutlierDetection
	optTLS
	optHTTP2Keepalive
	optTCPKeepalive
	optConnectionLimits
	optSlowStart
	optCSWRR
)

// optionSizes is what one place of option groups can put into a Cluster:
// the groups present, and the user's strings at their longest.
type optionSizes struct {
	groups optionGroups
	// healthCheckPort: a health check port is set, which every endpoint
	// repeats.
	healthCheckPort bool
	// clientCertificate: tls.clientCertificate is set.
	clientCertificate bool
	// serviceName, authority and sni are the lengths of those strings.
	serviceName, authority, sni int
	// ciphers bounds the encoded tls.cipherSuites.
	ciphers int64
}

// merge makes s a bound of both s and o.
func (s *optionSizes) merge(o *optionSizes) {
	s.groups |= o.groups
	s.healthCheckPort = s.healthCheckPort || o.healthCheckPort
	s.clientCertificate = s.clientCertificate || o.clientCertificate
	s.serviceName = max(s.serviceName, o.serviceName)
	s.authority = max(s.authority, o.authority)
	s.sni = max(s.sni, o.sni)
	s.ciphers = max(s.ciphers, o.ciphers)
}

// sizesOf measures option groups as spec.options and extensionDefaults
// hold them.
func sizesOf(o *source.ExtensionOptions) optionSizes {
	var s optionSizes
	if o == nil {
		return s
	}
	if hc := o.HealthCheck; hc != nil {
		s.groups |= optHealthCheck
		s.healthCheckPort = hc.Port != nil
		s.serviceName = lenOf(hc.ServiceName)
		s.authority = lenOf(hc.Authority)
	}
	if tls := o.TLS; tls != nil {
		s.groups |= optTLS
		s.sni = lenOf(tls.SNI)
		s.clientCertificate = tls.ClientCertificate != nil
		for _, c := range tls.CipherSuites {
			s.ciphers += stringField(len(c))
		}
	}
	for _, g := range []struct {
		present bool
		group   optionGroups
	}{
		{o.OutlierDetection != nil, optOutlierDetection}, {o.HTTP2Keepalive != nil, optHTTP2Keepalive},
		{o.TCPKeepalive != nil, optTCPKeepalive}, {o.ConnectionLimits != nil, optConnectionLimits},
		{o.SlowStart != nil, optSlowStart}, {o.ClientSideWeightedRoundRobin != nil, optCSWRR},
	} {
		if g.present {
			s.groups |= g.group
		}
	}
	return s
}

func lenOf(s *string) int {
	if s == nil {
		return 0
	}
	return len(*s)
}

// The annotations' keys start with their group's prefix; the ones whose
// value lands in the Cluster as a string are named. TestAnnotationGroups
// holds them to model's keys.
var annotationGroups = []struct {
	prefix string
	group  optionGroups
}{
	{source.AnnotationKey("healthCheck", ""), optHealthCheck},
	{source.AnnotationKey("outlierDetection", ""), optOutlierDetection},
	{source.AnnotationKey("tls", ""), optTLS},
	{source.AnnotationKey("http2Keepalive", ""), optHTTP2Keepalive},
	{source.AnnotationKey("tcpKeepalive", ""), optTCPKeepalive},
	{source.AnnotationKey("connectionLimits", ""), optConnectionLimits},
	{source.AnnotationKey("slowStart", ""), optSlowStart},
	{source.AnnotationKey("clientSideWeightedRoundRobin", ""), optCSWRR},
}

var (
	annotationServiceName       = source.AnnotationKey("healthCheck", "serviceName")
	annotationAuthority         = source.AnnotationKey("healthCheck", "authority")
	annotationHealthCheckPort   = source.AnnotationKey("healthCheck", "port")
	annotationSNI               = source.AnnotationKey("tls", "sni")
	annotationClientCertificate = source.AnnotationKey("tls", "clientCertificate")
	annotationCipherSuites      = source.AnnotationKey("tls", "cipherSuites")
)

// annotationSizes measures option groups as annotations write them. A key
// of no group makes the ExtensionService invalid, and adds nothing.
func annotationSizes(annotations map[string]string) optionSizes {
	var s optionSizes
	for key, value := range annotations {
		for _, g := range annotationGroups {
			if strings.HasPrefix(key, g.prefix) {
				s.groups |= g.group
				break
			}
		}
		switch key {
		case annotationServiceName:
			s.serviceName = len(value)
		case annotationAuthority:
			s.authority = len(value)
		case annotationHealthCheckPort:
			s.healthCheckPort = true
		case annotationSNI:
			s.sni = len(value)
		case annotationClientCertificate:
			s.clientCertificate = true
		case annotationCipherSuites:
			// Comma-separated: each name is a string field of at most
			// the whole value's length.
			names := int64(strings.Count(value, ",") + 1)
			s.ciphers = int64(len(value)) + names*(stringField(len(value))-int64(len(value)))
		}
	}
	return s
}

// optionsOf bounds the option groups of es from the three places they
// come from; defaults are the settings' (measured once).
func (e *Estimator) optionsOf(es *source.ExtensionService) optionSizes {
	s := e.defaults
	if es.Spec.Options != nil {
		spec := sizesOf(es.Spec.Options)
		s.merge(&spec)
	}
	if len(es.Annotations) > 0 {
		annotated := annotationSizes(es.Annotations)
		s.merge(&annotated)
	}
	if p := es.Spec.LoadBalancerPolicy; p != nil && p.Strategy == clientSideWeightedRoundRobin {
		s.groups |= optCSWRR
	}
	return s
}

// clientSideWeightedRoundRobin is the strategy that gets a
// load_balancing_policy.
const clientSideWeightedRoundRobin = "ClientSideWeightedRoundRobin"

// clusterBytes bounds what the options s add to the Cluster of an
// ExtensionService whose Cluster name is name bytes long and which speaks
// TLS when tls.
func (e *Estimator) clusterBytes(s *optionSizes, name int, tls bool) int64 {
	var n int64
	if s.groups&optHealthCheck != 0 {
		// An empty authority is the Cluster's name.
		n += healthCheckFixedBytes + stringField(s.serviceName) + stringField(max(s.authority, name))
	}
	if s.groups&optTLS != 0 && tls {
		n += tlsGroupFixedBytes + stringField(s.sni) + s.ciphers
		if s.clientCertificate {
			n += sdsConfigFixedBytes + stringField(sdsNameBytes) + 2*stringField(e.xds)
		}
	}
	for _, g := range []struct {
		group optionGroups
		bytes int64
	}{
		{optOutlierDetection, outlierDetectionBytes}, {optHTTP2Keepalive, http2KeepaliveBytes},
		{optTCPKeepalive, tcpKeepaliveBytes}, {optConnectionLimits, connectionLimitsBytes},
		{optSlowStart, slowStartFixedBytes + stringField(name+slowStartKeyBytes)}, {optCSWRR, cswrrBytes},
	} {
		if s.groups&g.group != 0 {
			n += g.bytes
		}
	}
	return n
}

// perEndpoint is what the options s add to every endpoint.
func (s *optionSizes) perEndpoint() int {
	if s.healthCheckPort {
		return healthCheckConfigBytes
	}
	return 0
}

// dnsLocality bounds one locality of a STRICT_DNS Cluster's inline
// endpoints: the sub-zone, the weight, and one endpoint at the DNS name
// host, with health bytes of health_check_config.
func dnsLocality(subZone, host, health int) int64 {
	return messageField(localityFixedBytes + stringField(subZone) + lbEndpoint(host, hostnamePortBytes, health))
}
