package source

import (
	"strings"
	"unicode"
)

// ExtensionOptions mirrors tributary.v1.ExtensionOptions: the settings of
// an extension Cluster that Contour's CRD has no field for. A nil group is
// absent; within a group a nil pointer is an unset field. Durations are
// unparsed, as in TimeoutPolicy.
//
// The same groups arrive three ways (an ExtensionService's spec.options,
// its "tributary.dev/" annotations, Settings.ExtensionDefaults); package
// model picks, per group, the first present, and validates it. The json
// tags are the API's field names; each annotation key is derived from them
// ("healthCheck.serviceName" is "tributary.dev/health-check-service-name").
type ExtensionOptions struct {
	HealthCheck                  *HealthCheck                  `json:"healthCheck"`
	OutlierDetection             *OutlierDetection             `json:"outlierDetection"`
	TLS                          *ExtensionTLS                 `json:"tls"`
	HTTP2Keepalive               *HTTP2Keepalive               `json:"http2Keepalive"`
	TCPKeepalive                 *TCPKeepalive                 `json:"tcpKeepalive"`
	ConnectionLimits             *ConnectionLimits             `json:"connectionLimits"`
	SlowStart                    *SlowStart                    `json:"slowStart"`
	ClientSideWeightedRoundRobin *ClientSideWeightedRoundRobin `json:"clientSideWeightedRoundRobin"`
}

// HealthCheck mirrors tributary.v1.HealthCheck.
type HealthCheck struct {
	ServiceName        *string `json:"serviceName"`
	Authority          *string `json:"authority"`
	Interval           *string `json:"interval"`
	Timeout            *string `json:"timeout"`
	UnhealthyThreshold *uint32 `json:"unhealthyThreshold"`
	HealthyThreshold   *uint32 `json:"healthyThreshold"`
	Port               *uint32 `json:"port"`
}

// OutlierDetection mirrors tributary.v1.OutlierDetection.
type OutlierDetection struct {
	ConsecutiveGatewayFailure      *uint32 `json:"consecutiveGatewayFailure"`
	ConsecutiveLocalOriginFailure  *uint32 `json:"consecutiveLocalOriginFailure"`
	FailurePercentageThreshold     *uint32 `json:"failurePercentageThreshold"`
	FailurePercentageMinimumHosts  *uint32 `json:"failurePercentageMinimumHosts"`
	FailurePercentageRequestVolume *uint32 `json:"failurePercentageRequestVolume"`
	Interval                       *string `json:"interval"`
	BaseEjectionTime               *string `json:"baseEjectionTime"`
	MaxEjectionTime                *string `json:"maxEjectionTime"`
	MaxEjectionPercent             *uint32 `json:"maxEjectionPercent"`
}

// ExtensionTLS mirrors tributary.v1.ExtensionTLS.
type ExtensionTLS struct {
	SNI                    *string  `json:"sni"`
	ClientCertificate      *string  `json:"clientCertificate"`
	MinimumProtocolVersion *string  `json:"minimumProtocolVersion"`
	MaximumProtocolVersion *string  `json:"maximumProtocolVersion"`
	CipherSuites           []string `json:"cipherSuites"`
}

// HTTP2Keepalive mirrors tributary.v1.Http2Keepalive.
type HTTP2Keepalive struct {
	Interval *string `json:"interval"`
	Timeout  *string `json:"timeout"`
}

// TCPKeepalive mirrors tributary.v1.TcpKeepalive.
type TCPKeepalive struct {
	Probes   *uint32 `json:"probes"`
	Time     *string `json:"time"`
	Interval *string `json:"interval"`
}

// ConnectionLimits mirrors tributary.v1.ConnectionLimits.
type ConnectionLimits struct {
	MaxConnectionDuration    *string `json:"maxConnectionDuration"`
	MaxRequestsPerConnection *uint32 `json:"maxRequestsPerConnection"`
}

// SlowStart mirrors tributary.v1.SlowStart.
type SlowStart struct {
	Window           *string  `json:"window"`
	Aggression       *float64 `json:"aggression"`
	MinWeightPercent *float64 `json:"minWeightPercent"`
}

// ClientSideWeightedRoundRobin mirrors tributary.v1.ClientSideWeightedRoundRobin.
type ClientSideWeightedRoundRobin struct {
	EnableOOBLoadReport     *bool    `json:"enableOobLoadReport"`
	OOBReportingPeriod      *string  `json:"oobReportingPeriod"`
	BlackoutPeriod          *string  `json:"blackoutPeriod"`
	WeightExpirationPeriod  *string  `json:"weightExpirationPeriod"`
	WeightUpdatePeriod      *string  `json:"weightUpdatePeriod"`
	ErrorUtilizationPenalty *float64 `json:"errorUtilizationPenalty"`
}

// AnnotationKey is the annotation of a field of an option group, derived
// from their JSON names in kebab case: healthCheck, serviceName →
// "tributary.dev/health-check-service-name". An empty field gives the
// group's prefix ("tributary.dev/health-check-").
func AnnotationKey(group, field string) string {
	return AnnotationPrefix + kebab(group) + "-" + kebab(field)
}

// kebab turns camelCase into kebab-case ("http2Keepalive" → "http2-keepalive").
func kebab(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('-')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
