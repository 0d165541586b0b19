package envoy

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tributary-dev/tributary/internal/model"
)

// applyHealthCheck adds the active gRPC health check (grpc.health.v1);
// nil adds nothing. Envoy's health checker connects with the Cluster's
// own transport socket, so an h2 extension is checked over the same TLS
// as its traffic. A health check port other than the serving port goes on
// every endpoint of the ClusterLoadAssignment (health_check_config), not
// here: the Cluster has no place for it.
func applyHealthCheck(c *clusterv3.Cluster, hc *model.HealthCheck) {
	if hc == nil {
		return
	}
	c.HealthChecks = []*corev3.HealthCheck{{
		Timeout:            durationpb.New(hc.Timeout),
		Interval:           durationpb.New(hc.Interval),
		UnhealthyThreshold: wrapperspb.UInt32(hc.UnhealthyThreshold),
		HealthyThreshold:   wrapperspb.UInt32(hc.HealthyThreshold),
		HealthChecker: &corev3.HealthCheck_GrpcHealthCheck_{GrpcHealthCheck: &corev3.HealthCheck_GrpcHealthCheck{
			ServiceName: hc.ServiceName,
			Authority:   hc.Authority,
		}},
	}}
}

// applyOutlierDetection adds passive health checking; nil adds nothing.
//
// Envoy enforces some detectors at 0% unless told otherwise (consecutive
// gateway failure, failure percentage), which would detect and never
// eject: each detector the model sets is enforced at 100%. Setting the
// local-origin detector also turns on split_external_local_origin_errors,
// without which Envoy ignores it and counts connection failures as 503s.
// The detectors the model has no field for (consecutive_5xx, success
// rate) keep Envoy's defaults. max_ejection_percent is always written:
// it is what stops ejection, which counts the endpoints of every Service
// of the Cluster together, from removing a small Service whole.
func applyOutlierDetection(c *clusterv3.Cluster, od *model.OutlierDetection) {
	if od == nil {
		return
	}
	out := &clusterv3.OutlierDetection{
		Interval:           durationpb.New(od.Interval),
		BaseEjectionTime:   durationpb.New(od.BaseEjectionTime),
		MaxEjectionTime:    durationpb.New(od.MaxEjectionTime),
		MaxEjectionPercent: wrapperspb.UInt32(od.MaxEjectionPercent),
	}
	if n := od.ConsecutiveGatewayFailure; n > 0 {
		out.ConsecutiveGatewayFailure = wrapperspb.UInt32(n)
		out.EnforcingConsecutiveGatewayFailure = wrapperspb.UInt32(100)
	}
	if n := od.ConsecutiveLocalOriginFailure; n > 0 {
		out.SplitExternalLocalOriginErrors = true
		out.ConsecutiveLocalOriginFailure = wrapperspb.UInt32(n)
		out.EnforcingConsecutiveLocalOriginFailure = wrapperspb.UInt32(100)
	}
	if p := od.FailurePercentageThreshold; p > 0 {
		out.FailurePercentageThreshold = wrapperspb.UInt32(p)
		out.EnforcingFailurePercentage = wrapperspb.UInt32(100)
		out.FailurePercentageMinimumHosts = wrapperspb.UInt32(od.FailurePercentageMinimumHosts)
		out.FailurePercentageRequestVolume = wrapperspb.UInt32(od.FailurePercentageRequestVolume)
	}
	c.OutlierDetection = out
}
