package model

import "time"

// The option groups as an ExtensionCluster holds them: validated, with
// defaults applied. A nil group is one the ExtensionService does not use,
// and then the Cluster is exactly what it would be without the feature.

// HealthCheck is an active gRPC health check (grpc.health.v1). It
// guarantees Interval and Timeout are positive, both thresholds at least 1,
// and Port is 0 (the endpoint's own port) or in 1..65535.
type HealthCheck struct {
	ServiceName        string
	Authority          string
	Interval           time.Duration
	Timeout            time.Duration
	UnhealthyThreshold uint32
	HealthyThreshold   uint32
	Port               uint32
}

// OutlierDetection is passive health checking. It guarantees at least one
// detector: a non-zero ConsecutiveGatewayFailure,
// ConsecutiveLocalOriginFailure or FailurePercentageThreshold (in 1..100);
// a zero one is off. FailurePercentageMinimumHosts and
// FailurePercentageRequestVolume are meaningful, zero included, only with
// FailurePercentageThreshold. The durations are positive, MaxEjectionTime
// at least BaseEjectionTime; MaxEjectionPercent is in 0..100.
type OutlierDetection struct {
	ConsecutiveGatewayFailure      uint32
	ConsecutiveLocalOriginFailure  uint32
	FailurePercentageThreshold     uint32
	FailurePercentageMinimumHosts  uint32
	FailurePercentageRequestVolume uint32
	Interval                       time.Duration
	BaseEjectionTime               time.Duration
	MaxEjectionTime                time.Duration
	MaxEjectionPercent             uint32
}

// HTTP2Keepalive sends HTTP/2 PINGs. Interval and Timeout are positive.
type HTTP2Keepalive struct {
	Interval time.Duration
	Timeout  time.Duration
}

// TCPKeepalive sets the socket's keepalive. Zero fields are unset (the
// kernel's defaults); Time and Interval are whole seconds.
type TCPKeepalive struct {
	Probes   uint32
	Time     uint32
	Interval uint32
}

// ConnectionLimits bound one connection's life. Zero is unset.
type ConnectionLimits struct {
	MaxConnectionDuration    time.Duration
	MaxRequestsPerConnection uint32
}

// SlowStart ramps a new endpoint's weight up over Window (positive).
// Aggression is positive; MinWeightPercent is in 0..100.
type SlowStart struct {
	Window           time.Duration
	Aggression       float64
	MinWeightPercent float64
}

// ClientSideWeightedRoundRobin tunes that policy. A nil duration or
// penalty is unset (the policy's default). OOBReportingPeriod and
// WeightExpirationPeriod are positive, BlackoutPeriod is non-negative (zero
// turns the blackout off), WeightUpdatePeriod is at least 100ms (clients
// raise anything shorter to that); all are at most a day.
// ErrorUtilizationPenalty is non-negative and fits a 32-bit float.
type ClientSideWeightedRoundRobin struct {
	EnableOOBLoadReport     bool
	OOBReportingPeriod      *time.Duration
	BlackoutPeriod          *time.Duration
	WeightExpirationPeriod  *time.Duration
	WeightUpdatePeriod      *time.Duration
	ErrorUtilizationPenalty *float64
}

// DNSLocality is one ExternalName target of a STRICT_DNS Cluster: Envoy
// resolves Hostname itself. It guarantees Hostname is a DNS name Envoy
// accepts and Port is in 1..65535.
type DNSLocality struct {
	SubZone  string
	Weight   uint32
	Hostname string
	Port     uint32
}

// TargetAvailability says how much traffic one target Service can take.
type TargetAvailability struct {
	Service        string
	Port           int32
	ReadyEndpoints uint32
	Weight         uint32
	// Reason is why it carries no traffic, "" when it does.
	Reason string
}

// Reasons a target carries no traffic.
const (
	AvailabilityNoReadyEndpoints = "NoReadyEndpoints"
	AvailabilityZeroWeight       = "ZeroWeight"
)
