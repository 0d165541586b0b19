package envoy_test

import (
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tributary-dev/tributary/internal/envoy"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
)

// claTestSocket is the reference LbEndpoint for address:port, written out
// field by field so the test does not share code with the builder.
func claTestSocket(address string, port uint32) *endpointv3.LbEndpoint {
	return &endpointv3.LbEndpoint{
		HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Protocol:      corev3.SocketAddress_TCP,
				Address:       address,
				PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
			}}},
		}},
	}
}

// claTestHealthChecked is claTestSocket health checked on healthPort.
func claTestHealthChecked(address string, port, healthPort uint32) *endpointv3.LbEndpoint {
	lbe := claTestSocket(address, port)
	lbe.GetEndpoint().HealthCheckConfig = &endpointv3.Endpoint_HealthCheckConfig{PortValue: healthPort}
	return lbe
}

func TestBuildClusterLoadAssignment(t *testing.T) {
	tests := []struct {
		name string
		ec   *model.ExtensionCluster
		want *endpointv3.ClusterLoadAssignment
	}{{
		name: "no locality is the cluster name alone",
		ec:   &model.ExtensionCluster{Name: "extension/ns/empty", XDSClusterName: "contour"},
		want: &endpointv3.ClusterLoadAssignment{ClusterName: "extension/ns/empty"},
	}, {
		name: "weighted localities with their own sub_zone, an unweighted one without load_balancing_weight",
		ec: &model.ExtensionCluster{
			Name: "extension/ns/auth", XDSClusterName: "contour",
			Localities: []model.Locality{
				{SubZone: "ns/primary/80", Weight: 80, Endpoints: []model.Endpoint{
					{Address: source.MakeAddress("10.0.0.1"), Port: 8080}, {Address: source.MakeAddress("10.0.0.2"), Port: 8080}, {Address: source.MakeAddress("2001:db8::1"), Port: 8443},
				}},
				{SubZone: "ns/canary/80", Weight: 20, Endpoints: []model.Endpoint{{Address: source.MakeAddress("10.1.0.1"), Port: 9090}}},
				{SubZone: "ns/dark/80", Endpoints: []model.Endpoint{{Address: source.MakeAddress("10.2.0.1"), Port: 65535}}},
			},
		},
		want: &endpointv3.ClusterLoadAssignment{
			ClusterName: "extension/ns/auth",
			Endpoints: []*endpointv3.LocalityLbEndpoints{{
				Locality:            &corev3.Locality{SubZone: "ns/primary/80"},
				LoadBalancingWeight: wrapperspb.UInt32(80),
				LbEndpoints: []*endpointv3.LbEndpoint{
					claTestSocket("10.0.0.1", 8080), claTestSocket("10.0.0.2", 8080), claTestSocket("2001:db8::1", 8443),
				},
			}, {
				Locality:            &corev3.Locality{SubZone: "ns/canary/80"},
				LoadBalancingWeight: wrapperspb.UInt32(20),
				LbEndpoints:         []*endpointv3.LbEndpoint{claTestSocket("10.1.0.1", 9090)},
			}, {
				Locality:    &corev3.Locality{SubZone: "ns/dark/80"},
				LbEndpoints: []*endpointv3.LbEndpoint{claTestSocket("10.2.0.1", 65535)},
			}},
		},
	}, {
		name: "a health check on a port of its own puts health_check_config on every endpoint of every locality",
		ec: &model.ExtensionCluster{
			Name: "extension/ns/auth", XDSClusterName: "contour",
			HealthCheck: &model.HealthCheck{Interval: 5 * time.Second, Timeout: time.Second, UnhealthyThreshold: 3, HealthyThreshold: 1, Port: 8081},
			Localities: []model.Locality{
				{SubZone: "ns/primary/80", Weight: 80, Endpoints: []model.Endpoint{{Address: source.MakeAddress("10.0.0.1"), Port: 8080}, {Address: source.MakeAddress("2001:db8::1"), Port: 8080}}},
				{SubZone: "ns/dark/80", Endpoints: []model.Endpoint{{Address: source.MakeAddress("10.2.0.1"), Port: 9090}}},
			},
		},
		want: &endpointv3.ClusterLoadAssignment{
			ClusterName: "extension/ns/auth",
			Endpoints: []*endpointv3.LocalityLbEndpoints{{
				Locality:            &corev3.Locality{SubZone: "ns/primary/80"},
				LoadBalancingWeight: wrapperspb.UInt32(80),
				LbEndpoints:         []*endpointv3.LbEndpoint{claTestHealthChecked("10.0.0.1", 8080, 8081), claTestHealthChecked("2001:db8::1", 8080, 8081)},
			}, {
				Locality:    &corev3.Locality{SubZone: "ns/dark/80"},
				LbEndpoints: []*endpointv3.LbEndpoint{claTestHealthChecked("10.2.0.1", 9090, 8081)},
			}},
		},
	}, {
		name: "a health check on the endpoints' own port changes nothing",
		ec: &model.ExtensionCluster{
			Name: "extension/ns/auth", XDSClusterName: "contour",
			HealthCheck: &model.HealthCheck{Interval: 5 * time.Second, Timeout: time.Second, UnhealthyThreshold: 3, HealthyThreshold: 1},
			Localities:  []model.Locality{{SubZone: "ns/primary/80", Weight: 1, Endpoints: []model.Endpoint{{Address: source.MakeAddress("10.0.0.1"), Port: 8080}}}},
		},
		want: &endpointv3.ClusterLoadAssignment{
			ClusterName: "extension/ns/auth",
			Endpoints: []*endpointv3.LocalityLbEndpoints{{
				Locality:            &corev3.Locality{SubZone: "ns/primary/80"},
				LoadBalancingWeight: wrapperspb.UInt32(1),
				LbEndpoints:         []*endpointv3.LbEndpoint{claTestSocket("10.0.0.1", 8080)},
			}},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := envoy.BuildClusterLoadAssignment(tc.ec)
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("ClusterLoadAssignment (-want +got):\n%s", diff)
			}
			if err := got.ValidateAll(); err != nil {
				t.Errorf("ValidateAll: %v", err)
			}
			if err := envoy.CheckClusterLoadAssignment(got); err != nil {
				t.Errorf("CheckClusterLoadAssignment: %v", err)
			}
		})
	}
}
