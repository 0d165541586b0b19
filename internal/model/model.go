// Package model validates the input of a translation into ExtensionClusters:
// the small, checked description of one Envoy Cluster and its weighted
// ClusterLoadAssignment that package envoy turns into protos.
//
// The pipeline is source (what the API delivered) → model (what it means,
// with a status condition per ExtensionService) → envoy (protos and wire
// bytes). Every value an ExtensionCluster holds has been checked against the
// rules Envoy's API enforces, so the builders in package envoy never have to
// reject anything.
package model

import (
	"time"

	"github.com/tributary-dev/tributary/internal/endpoints"
	"github.com/tributary-dev/tributary/internal/source"
)

// Protocol is the protocol Envoy speaks to an extension.
type Protocol int

// The protocols spec.protocol accepts.
const (
	ProtocolH2     Protocol = iota // HTTP/2 over TLS (the default).
	ProtocolH2C                    // HTTP/2 in cleartext.
	ProtocolHTTP11                 // HTTP/1.1 in cleartext.
)

// LoadBalancer is the Cluster's load balancing policy.
type LoadBalancer int

// The policies spec.loadBalancerPolicy.strategy maps to.
const (
	LoadBalancerRoundRobin   LoadBalancer = iota // RoundRobin and anything unknown.
	LoadBalancerLeastRequest                     // WeightedLeastRequest.
	LoadBalancerRandom                           // Random.
	// LoadBalancerClientSideWeightedRoundRobin weighs each Service's
	// endpoints by the load they report (ORCA), inside wrr_locality so that
	// the Services keep their weights.
	LoadBalancerClientSideWeightedRoundRobin
)

// TLSVersion is a TLS protocol version bound for upstream connections.
type TLSVersion int

// The versions the upstreamTLS setting can name.
const (
	TLSAuto TLSVersion = iota // Envoy's default.
	TLS12
	TLS13
)

// ExtensionCluster is one valid ExtensionService, ready to become a Cluster
// and a ClusterLoadAssignment. It guarantees:
//   - Name and XDSClusterName are non-empty and free of control characters;
//   - ConnectTimeout is positive;
//   - TLS is non-nil exactly when Protocol is ProtocolH2, and its SNI fits
//     Envoy's 255-byte limit;
//   - CircuitBreakers is nil unless at least one threshold is non-zero;
//   - Localities satisfy the Locality guarantees, have distinct SubZones, and
//     no address:port appears in two of them; when any Locality exists, at
//     least one has a non-zero Weight;
//   - DNS is non-empty exactly when every target is an ExternalName Service
//     (the Cluster is then STRICT_DNS and Localities is empty); its
//     entries have distinct SubZones and, when any exists, one has a
//     non-zero Weight;
//   - SlowStart is nil unless LoadBalancer is round robin or least request;
//     ClientSideWeightedRoundRobin is non-nil exactly when LoadBalancer is
//     LoadBalancerClientSideWeightedRoundRobin;
//   - HTTP2Keepalive is nil unless the Protocol is HTTP/2 (h2 or h2c);
//   - the option groups (HealthCheck through ClientSideWeightedRoundRobin)
//     keep the guarantees their types state, and all of them are nil for
//     an ExtensionService that sets no option, so that its Cluster is
//     Contour's.
type ExtensionCluster struct {
	// Name is "extension/<namespace>/<name>": the Cluster name, its EDS
	// service_name and the ClusterLoadAssignment's cluster_name.
	Name string
	// XDSClusterName is the Envoy cluster that serves EDS.
	XDSClusterName string
	Protocol       Protocol
	LoadBalancer   LoadBalancer
	ConnectTimeout time.Duration
	// IdleConnectionTimeout is nil when unset; zero means no timeout.
	IdleConnectionTimeout *time.Duration
	CircuitBreakers       *source.CircuitBreakers
	TLS                   *UpstreamTLS
	Localities            []Locality
	DNS                   []DNSLocality

	HealthCheck                  *HealthCheck
	OutlierDetection             *OutlierDetection
	HTTP2Keepalive               *HTTP2Keepalive
	TCPKeepalive                 *TCPKeepalive
	ConnectionLimits             *ConnectionLimits
	SlowStart                    *SlowStart
	ClientSideWeightedRoundRobin *ClientSideWeightedRoundRobin
}

// UpstreamTLS is the TLS Envoy uses towards an h2 extension.
type UpstreamTLS struct {
	// SNI is the first subject name, or "" without validation.
	SNI string
	// CACertificate is the PEM CA bundle to verify the extension with, or nil
	// for no verification. It has been parsed successfully.
	CACertificate []byte
	// SubjectNames are the accepted DNS SANs; non-empty exactly when
	// CACertificate is non-nil.
	SubjectNames []string
	// ClientCertificateSDSName names, over SDS, the certificate Envoy
	// presents; "" for none.
	ClientCertificateSDSName string
	// Params is nil when the upstreamTLS setting is unset.
	Params *TLSParams
}

// TLSParams bound the TLS handshake.
type TLSParams struct {
	Minimum      TLSVersion
	Maximum      TLSVersion
	CipherSuites []string
}

// Locality is the share of one target Service. It guarantees that Endpoints
// is non-empty, sorted by address (as IPs) then port, with no repeated
// address:port, and that every Address is a valid IP literal and every Port
// lies in 1..65535. Weight zero means the locality carries no weight.
type Locality struct {
	// SubZone is "<namespace>/<service>/<port>", distinct per target.
	SubZone   string
	Weight    uint32
	Endpoints []Endpoint
}

// Endpoint is one address:port. Package endpoints picks them, and its type
// is this one so that Localities point into what it returns, uncopied.
type Endpoint = endpoints.Endpoint

// Condition types, statuses and reasons shared by every ExtensionService.
const (
	ConditionValid      = "Valid"
	ConditionTrue       = "True"
	ConditionFalse      = "False"
	ReasonValid         = "Valid"
	ReasonErrorPresent  = "ErrorPresent"
	MessageValid        = "Valid ExtensionService"
	MessageErrorPresent = "At least one error present, see Errors for details"
	SubConditionSpec    = "SpecError"
	SubConditionService = "ServiceError"
	SubConditionTLS     = "TLSError"
)

// Status is what translation says about one ExtensionService.
type Status struct {
	Namespace string
	Name      string
	// ClusterName is set only when the ExtensionService is valid.
	ClusterName string
	// ResponseTimeout is spec.timeoutPolicy.response normalised ("10s",
	// "infinity"), or "" when unset or invalid.
	ResponseTimeout string
	Condition       Condition
	// Availability has one entry per distinct target, in spec order, once
	// the targets have resolved; nil otherwise.
	Availability []TargetAvailability
}

// Condition mirrors Contour's DetailedCondition.
type Condition struct {
	Type               string
	Status             string
	ObservedGeneration int64
	Reason             string
	Message            string
	Errors             []SubCondition
	Warnings           []SubCondition
}

// SubCondition is one error or warning.
type SubCondition struct {
	Type    string
	Status  string
	Reason  string
	Message string
}

// AddError records an error; any error withholds the ExtensionService's
// Envoy resources.
func (c *Condition) AddError(typ, reason, message string) {
	c.Errors = append(c.Errors, SubCondition{Type: typ, Status: ConditionTrue, Reason: reason, Message: message})
}

// AddWarning records a warning; warnings never withhold output.
func (c *Condition) AddWarning(typ, reason, message string) {
	c.Warnings = append(c.Warnings, SubCondition{Type: typ, Status: ConditionTrue, Reason: reason, Message: message})
}

// finish sets the summary fields from the errors recorded so far.
func (c *Condition) finish() {
	c.Type = ConditionValid
	if len(c.Errors) == 0 {
		c.Status, c.Reason, c.Message = ConditionTrue, ReasonValid, MessageValid
		return
	}
	c.Status, c.Reason, c.Message = ConditionFalse, ReasonErrorPresent, MessageErrorPresent
}
