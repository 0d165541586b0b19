package envoy

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	wrrlocalityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tributary-dev/tributary/internal/model"
)

// clusterTestCSWRRPolicy is the load_balancing_policy the tests expect:
// wrr_locality choosing the Service by its weight, around
// client_side_weighted_round_robin with cfg choosing the endpoint.
func clusterTestCSWRRPolicy(t *testing.T, cfg *cswrrv3.ClientSideWeightedRoundRobin) *clusterv3.LoadBalancingPolicy {
	return &clusterv3.LoadBalancingPolicy{Policies: []*clusterv3.LoadBalancingPolicy_Policy{{
		TypedExtensionConfig: &corev3.TypedExtensionConfig{
			Name: "envoy.load_balancing_policies.wrr_locality",
			TypedConfig: clusterTestAny(t, &wrrlocalityv3.WrrLocality{
				EndpointPickingPolicy: &clusterv3.LoadBalancingPolicy{Policies: []*clusterv3.LoadBalancingPolicy_Policy{{
					TypedExtensionConfig: &corev3.TypedExtensionConfig{
						Name:        "envoy.load_balancing_policies.client_side_weighted_round_robin",
						TypedConfig: clusterTestAny(t, cfg),
					},
				}}},
			}),
		},
	}}}
}

func TestBuildClusterClientSideWeightedRoundRobin(t *testing.T) {
	dur := func(d time.Duration) *time.Duration { return &d }
	penalty := 0.25
	tests := []struct {
		name string
		ec   func(*model.ExtensionCluster)
		want func(*clusterv3.Cluster)
	}{{
		name: "no tuning: every field left to the client's default",
		ec: func(ec *model.ExtensionCluster) {
			ec.LoadBalancer = model.LoadBalancerClientSideWeightedRoundRobin
			ec.ClientSideWeightedRoundRobin = &model.ClientSideWeightedRoundRobin{}
		},
		want: func(c *clusterv3.Cluster) {
			c.LoadBalancingPolicy = clusterTestCSWRRPolicy(t, &cswrrv3.ClientSideWeightedRoundRobin{})
		},
	}, {
		name: "every field",
		ec: func(ec *model.ExtensionCluster) {
			ec.LoadBalancer = model.LoadBalancerClientSideWeightedRoundRobin
			ec.ClientSideWeightedRoundRobin = &model.ClientSideWeightedRoundRobin{
				EnableOOBLoadReport:     true,
				OOBReportingPeriod:      dur(5 * time.Second),
				BlackoutPeriod:          dur(0),
				WeightExpirationPeriod:  dur(90 * time.Second),
				WeightUpdatePeriod:      dur(100 * time.Millisecond),
				ErrorUtilizationPenalty: &penalty,
			}
		},
		want: func(c *clusterv3.Cluster) {
			c.LoadBalancingPolicy = clusterTestCSWRRPolicy(t, &cswrrv3.ClientSideWeightedRoundRobin{
				EnableOobLoadReport:     wrapperspb.Bool(true),
				OobReportingPeriod:      durationpb.New(5 * time.Second),
				BlackoutPeriod:          &durationpb.Duration{}, // zero: no blackout, not unset
				WeightExpirationPeriod:  durationpb.New(90 * time.Second),
				WeightUpdatePeriod:      &durationpb.Duration{Nanos: 100_000_000},
				ErrorUtilizationPenalty: wrapperspb.Float(0.25),
			})
		},
	}, {
		name: "a zero penalty is written, not left to the default of 1",
		ec: func(ec *model.ExtensionCluster) {
			ec.LoadBalancer = model.LoadBalancerClientSideWeightedRoundRobin
			zero := 0.0
			ec.ClientSideWeightedRoundRobin = &model.ClientSideWeightedRoundRobin{ErrorUtilizationPenalty: &zero}
		},
		want: func(c *clusterv3.Cluster) {
			c.LoadBalancingPolicy = clusterTestCSWRRPolicy(t, &cswrrv3.ClientSideWeightedRoundRobin{
				ErrorUtilizationPenalty: wrapperspb.Float(0),
			})
		},
	}, {
		name: "another strategy: nothing",
		ec:   func(ec *model.ExtensionCluster) { ec.LoadBalancer = model.LoadBalancerLeastRequest },
		want: func(c *clusterv3.Cluster) { c.LbPolicy = clusterv3.Cluster_LEAST_REQUEST },
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The expectation is the Cluster of the bare extension, which
			// keeps lb_policy ROUND_ROBIN and common_lb_config (with its
			// locality weighting) under the typed policy.
			want := BuildCluster(clusterTestExtension())
			tc.want(want)
			ec := clusterTestExtension()
			tc.ec(ec)
			got := BuildCluster(ec)
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("Cluster (-want +got):\n%s", diff)
			}
			validateCluster(t, got)
			validateLoadBalancingPolicy(t, got.GetLoadBalancingPolicy())

			// The fast encoder must write the same Cluster.
			var decoded clusterv3.Cluster
			if err := proto.Unmarshal(NewClusterEncoder().Append(nil, ec), &decoded); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, &decoded, protocmp.Transform()); diff != "" {
				t.Errorf("ClusterEncoder differs from BuildCluster (-build +encoder):\n%s", diff)
			}
		})
	}
}

// validateLoadBalancingPolicy runs ValidateAll on every policy nested in p,
// which ValidateAll on the Cluster cannot see inside their Any fields.
func validateLoadBalancingPolicy(t *testing.T, p *clusterv3.LoadBalancingPolicy) {
	t.Helper()
	for _, policy := range p.GetPolicies() {
		config := policy.GetTypedExtensionConfig()
		if err := config.ValidateAll(); err != nil {
			t.Errorf("policy %s fails ValidateAll: %v", config.GetName(), err)
		}
		m, err := config.GetTypedConfig().UnmarshalNew()
		if err != nil {
			t.Fatalf("policy %s: %v", config.GetName(), err)
		}
		if err := m.(interface{ ValidateAll() error }).ValidateAll(); err != nil {
			t.Errorf("policy %s fails ValidateAll: %v", config.GetName(), err)
		}
		if wrr, ok := m.(*wrrlocalityv3.WrrLocality); ok {
			validateLoadBalancingPolicy(t, wrr.GetEndpointPickingPolicy())
		}
	}
}
