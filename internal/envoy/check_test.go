package envoy_test

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tributary-dev/tributary/internal/envoy"
)

func checkTestLocality(subZone string, weight *wrapperspb.UInt32Value, sockets ...*endpointv3.LbEndpoint) *endpointv3.LocalityLbEndpoints {
	return &endpointv3.LocalityLbEndpoints{Locality: &corev3.Locality{SubZone: subZone}, LoadBalancingWeight: weight, LbEndpoints: sockets}
}

func TestCheckClusterLoadAssignment(t *testing.T) {
	tests := []struct {
		name    string
		cla     *endpointv3.ClusterLoadAssignment
		wantErr string // "" for a CLA that passes
	}{{
		name: "no locality passes",
		cla:  &endpointv3.ClusterLoadAssignment{ClusterName: "c"},
	}, {
		name: "weighted and unweighted localities pass",
		cla: &endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointv3.LocalityLbEndpoints{
			checkTestLocality("a", wrapperspb.UInt32(80), claTestSocket("10.0.0.1", 80)),
			checkTestLocality("b", nil, claTestSocket("10.0.0.1", 81), claTestSocket("10.0.0.2", 80)),
		}},
	}, {
		name: "the same locality at two priorities passes",
		cla: &endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointv3.LocalityLbEndpoints{
			checkTestLocality("a", wrapperspb.UInt32(1), claTestSocket("10.0.0.1", 80)),
			{Locality: &corev3.Locality{SubZone: "a"}, Priority: 1, LoadBalancingWeight: wrapperspb.UInt32(1),
				LbEndpoints: []*endpointv3.LbEndpoint{claTestSocket("10.0.0.2", 80)}},
		}},
	}, {
		name: "a present weight of 0",
		cla: &endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointv3.LocalityLbEndpoints{
			checkTestLocality("a", wrapperspb.UInt32(1), claTestSocket("10.0.0.1", 80)),
			checkTestLocality("b", wrapperspb.UInt32(0), claTestSocket("10.0.0.2", 80)),
		}},
		wantErr: `endpoints[1] (region "", zone "", sub_zone "b"): load_balancing_weight is present but 0; a present weight must be at least 1`,
	}, {
		name: "no locality carries a weight",
		cla: &endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointv3.LocalityLbEndpoints{
			checkTestLocality("a", nil, claTestSocket("10.0.0.1", 80)),
			checkTestLocality("b", nil, claTestSocket("10.0.0.2", 80)),
		}},
		wantErr: "none of the 2 localities has a load_balancing_weight, so clients would send no traffic",
	}, {
		name: "two localities alike at one priority",
		cla: &endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointv3.LocalityLbEndpoints{
			checkTestLocality("a", wrapperspb.UInt32(1), claTestSocket("10.0.0.1", 80)),
			checkTestLocality("b", wrapperspb.UInt32(1), claTestSocket("10.0.0.2", 80)),
			checkTestLocality("a", wrapperspb.UInt32(1), claTestSocket("10.0.0.3", 80)),
		}},
		wantErr: `endpoints[0] and endpoints[2] have the same locality (region "", zone "", sub_zone "a") at priority 0`,
	}, {
		name: "two localities without any locality field",
		cla: &endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointv3.LocalityLbEndpoints{
			{LoadBalancingWeight: wrapperspb.UInt32(1), LbEndpoints: []*endpointv3.LbEndpoint{claTestSocket("10.0.0.1", 80)}},
			{LoadBalancingWeight: wrapperspb.UInt32(1), LbEndpoints: []*endpointv3.LbEndpoint{claTestSocket("10.0.0.2", 80)}},
		}},
		wantErr: `endpoints[0] and endpoints[1] have the same locality (region "", zone "", sub_zone "") at priority 0`,
	}, {
		name: "one address:port in two localities",
		cla: &endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointv3.LocalityLbEndpoints{
			checkTestLocality("a", wrapperspb.UInt32(1), claTestSocket("10.0.0.1", 80)),
			checkTestLocality("b", wrapperspb.UInt32(1), claTestSocket("10.0.0.2", 80), claTestSocket("10.0.0.1", 80)),
		}},
		wantErr: "address [10.0.0.1]:80 appears twice: in endpoints[0] and in endpoints[1].lb_endpoints[1]",
	}, {
		name: "one address:port twice in a locality",
		cla: &endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointv3.LocalityLbEndpoints{
			checkTestLocality("a", wrapperspb.UInt32(1), claTestSocket("10.0.0.1", 80), claTestSocket("10.0.0.1", 80)),
		}},
		wantErr: "address [10.0.0.1]:80 appears twice: in endpoints[0] and in endpoints[0].lb_endpoints[1]",
	}, {
		name: "one IPv6 address spelled two ways",
		cla: &endpointv3.ClusterLoadAssignment{ClusterName: "c", Endpoints: []*endpointv3.LocalityLbEndpoints{
			checkTestLocality("a", wrapperspb.UInt32(1), claTestSocket("2001:db8::1", 80)),
			checkTestLocality("b", wrapperspb.UInt32(1), claTestSocket("2001:0DB8:0::1", 80)),
		}},
		wantErr: "address [2001:db8::1]:80 appears twice: in endpoints[0] and in endpoints[1].lb_endpoints[0]",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := envoy.CheckClusterLoadAssignment(tc.cla)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("CheckClusterLoadAssignment: unexpected error %v", err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("CheckClusterLoadAssignment: no error, want %q", tc.wantErr)
			case tc.wantErr != "" && err.Error() != tc.wantErr:
				t.Errorf("CheckClusterLoadAssignment error:\n got %q\nwant %q", err, tc.wantErr)
			}
		})
	}
}
