package envoy

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tributary-dev/tributary/internal/model"
)

// TestBuildClusterHealth holds the health options to the exact Envoy
// fields: each case's expected Cluster is the one without the option plus
// the fields spelled out here, so nothing else may change.
func TestBuildClusterHealth(t *testing.T) {
	tests := []struct {
		name string
		ec   func(*model.ExtensionCluster)
		want func(*clusterv3.Cluster)
	}{{
		name: "gRPC health check with every field",
		ec: func(ec *model.ExtensionCluster) {
			ec.HealthCheck = &model.HealthCheck{
				ServiceName: "envoy.service.auth.v3.Authorization", Authority: "authz.example",
				Interval: 7 * time.Second, Timeout: 1500 * time.Millisecond,
				UnhealthyThreshold: 4, HealthyThreshold: 2, Port: 8081,
			}
		},
		want: func(c *clusterv3.Cluster) {
			c.HealthChecks = []*corev3.HealthCheck{{
				Timeout:            durationpb.New(1500 * time.Millisecond),
				Interval:           durationpb.New(7 * time.Second),
				UnhealthyThreshold: wrapperspb.UInt32(4),
				HealthyThreshold:   wrapperspb.UInt32(2),
				HealthChecker: &corev3.HealthCheck_GrpcHealthCheck_{GrpcHealthCheck: &corev3.HealthCheck_GrpcHealthCheck{
					ServiceName: "envoy.service.auth.v3.Authorization", Authority: "authz.example",
				}},
			}}
		},
	}, {
		name: "gRPC health check with empty names keeps grpc_health_check present",
		ec: func(ec *model.ExtensionCluster) {
			ec.HealthCheck = &model.HealthCheck{Interval: 5 * time.Second, Timeout: time.Second, UnhealthyThreshold: 3, HealthyThreshold: 1}
		},
		want: func(c *clusterv3.Cluster) {
			c.HealthChecks = []*corev3.HealthCheck{{
				Timeout:            durationpb.New(time.Second),
				Interval:           durationpb.New(5 * time.Second),
				UnhealthyThreshold: wrapperspb.UInt32(3),
				HealthyThreshold:   wrapperspb.UInt32(1),
				HealthChecker:      &corev3.HealthCheck_GrpcHealthCheck_{GrpcHealthCheck: &corev3.HealthCheck_GrpcHealthCheck{}},
			}}
		},
	}, {
		name: "outlier detection with every detector, each enforced at 100%",
		ec: func(ec *model.ExtensionCluster) {
			ec.OutlierDetection = &model.OutlierDetection{
				ConsecutiveGatewayFailure: 3, ConsecutiveLocalOriginFailure: 4,
				FailurePercentageThreshold: 60, FailurePercentageMinimumHosts: 2, FailurePercentageRequestVolume: 20,
				Interval: time.Second, BaseEjectionTime: 10 * time.Second, MaxEjectionTime: time.Minute, MaxEjectionPercent: 50,
			}
		},
		want: func(c *clusterv3.Cluster) {
			c.OutlierDetection = &clusterv3.OutlierDetection{
				Interval:                               durationpb.New(time.Second),
				BaseEjectionTime:                       durationpb.New(10 * time.Second),
				MaxEjectionTime:                        durationpb.New(time.Minute),
				MaxEjectionPercent:                     wrapperspb.UInt32(50),
				ConsecutiveGatewayFailure:              wrapperspb.UInt32(3),
				EnforcingConsecutiveGatewayFailure:     wrapperspb.UInt32(100),
				SplitExternalLocalOriginErrors:         true,
				ConsecutiveLocalOriginFailure:          wrapperspb.UInt32(4),
				EnforcingConsecutiveLocalOriginFailure: wrapperspb.UInt32(100),
				FailurePercentageThreshold:             wrapperspb.UInt32(60),
				EnforcingFailurePercentage:             wrapperspb.UInt32(100),
				FailurePercentageMinimumHosts:          wrapperspb.UInt32(2),
				FailurePercentageRequestVolume:         wrapperspb.UInt32(20),
			}
		},
	}, {
		name: "outlier detection by gateway failures alone leaves the other detectors unset and writes max_ejection_percent 0",
		ec: func(ec *model.ExtensionCluster) {
			ec.OutlierDetection = &model.OutlierDetection{
				ConsecutiveGatewayFailure: 5,
				Interval:                  10 * time.Second, BaseEjectionTime: 30 * time.Second, MaxEjectionTime: 300 * time.Second,
			}
		},
		want: func(c *clusterv3.Cluster) {
			c.OutlierDetection = &clusterv3.OutlierDetection{
				Interval:                           durationpb.New(10 * time.Second),
				BaseEjectionTime:                   durationpb.New(30 * time.Second),
				MaxEjectionTime:                    durationpb.New(300 * time.Second),
				MaxEjectionPercent:                 wrapperspb.UInt32(0),
				ConsecutiveGatewayFailure:          wrapperspb.UInt32(5),
				EnforcingConsecutiveGatewayFailure: wrapperspb.UInt32(100),
			}
		},
	}, {
		name: "failure percentage alone, with minimum hosts and request volume 0 written out",
		ec: func(ec *model.ExtensionCluster) {
			ec.OutlierDetection = &model.OutlierDetection{
				FailurePercentageThreshold: 100,
				Interval:                   24 * time.Hour, BaseEjectionTime: time.Nanosecond, MaxEjectionTime: time.Nanosecond, MaxEjectionPercent: 100,
			}
		},
		want: func(c *clusterv3.Cluster) {
			c.OutlierDetection = &clusterv3.OutlierDetection{
				Interval:                       durationpb.New(24 * time.Hour),
				BaseEjectionTime:               durationpb.New(time.Nanosecond),
				MaxEjectionTime:                durationpb.New(time.Nanosecond),
				MaxEjectionPercent:             wrapperspb.UInt32(100),
				FailurePercentageThreshold:     wrapperspb.UInt32(100),
				EnforcingFailurePercentage:     wrapperspb.UInt32(100),
				FailurePercentageMinimumHosts:  wrapperspb.UInt32(0),
				FailurePercentageRequestVolume: wrapperspb.UInt32(0),
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := BuildCluster(clusterTestExtension())
			tc.want(want)
			ec := clusterTestExtension()
			tc.ec(ec)
			got := BuildCluster(ec)
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("Cluster (-want +got):\n%s", diff)
			}
			validateCluster(t, got)
		})
	}
}

// TestBuildClusterHealthNil proves a nil group leaves the Cluster exactly
// as it is, which the golden cases of extensions without options rely on.
func TestBuildClusterHealthNil(t *testing.T) {
	c := &clusterv3.Cluster{Name: "x"}
	applyHealthCheck(c, nil)
	applyOutlierDetection(c, nil)
	if diff := cmp.Diff(&clusterv3.Cluster{Name: "x"}, c, protocmp.Transform()); diff != "" {
		t.Errorf("nil groups changed the Cluster (-want +got):\n%s", diff)
	}
}
