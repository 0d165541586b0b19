package envoy

import (
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	cswrrv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	wrrlocalityv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tributary-dev/tributary/internal/model"
)

// The extension names of the two load balancing policies, as Envoy and
// gRPC register them (both pick the policy by the type URL; the name is
// what stats and logs show).
const (
	wrrLocalityPolicyName = "envoy.load_balancing_policies.wrr_locality"
	cswrrPolicyName       = "envoy.load_balancing_policies.client_side_weighted_round_robin"
)

// applyClientSideWeightedRoundRobin sets load_balancing_policy for
// strategy ClientSideWeightedRoundRobin; other strategies are left as they
// are.
//
// The endpoint policy is wrapped in wrr_locality so that each Service
// (a locality) keeps its weight from spec.services and only the endpoints
// inside a Service are weighed by the load they report: used alone,
// client_side_weighted_round_robin would pick across every endpoint of
// the Cluster and the Service weights would be lost. load_balancing_policy
// supersedes lb_policy in the clients that know it, so lb_policy keeps its
// zero value (ROUND_ROBIN), which an older client falls back to;
// common_lb_config stays, since Envoy still reads its panic threshold and
// locality weighting beside a typed policy.
func applyClientSideWeightedRoundRobin(c *clusterv3.Cluster, ec *model.ExtensionCluster) {
	if ec.LoadBalancer != model.LoadBalancerClientSideWeightedRoundRobin || ec.ClientSideWeightedRoundRobin == nil {
		return
	}
	c.LbPolicy = clusterv3.Cluster_ROUND_ROBIN
	c.LoadBalancingPolicy = &clusterv3.LoadBalancingPolicy{Policies: []*clusterv3.LoadBalancingPolicy_Policy{{
		TypedExtensionConfig: &corev3.TypedExtensionConfig{
			Name: wrrLocalityPolicyName,
			TypedConfig: MarshalAny(&wrrlocalityv3.WrrLocality{
				EndpointPickingPolicy: &clusterv3.LoadBalancingPolicy{Policies: []*clusterv3.LoadBalancingPolicy_Policy{{
					TypedExtensionConfig: &corev3.TypedExtensionConfig{
						Name:        cswrrPolicyName,
						TypedConfig: MarshalAny(buildClientSideWeightedRoundRobin(ec.ClientSideWeightedRoundRobin)),
					},
				}}},
			}),
		},
	}}}
}

// buildClientSideWeightedRoundRobin writes the tuning's set fields; an
// unset one stays absent, so the client applies its own default.
func buildClientSideWeightedRoundRobin(t *model.ClientSideWeightedRoundRobin) *cswrrv3.ClientSideWeightedRoundRobin {
	cfg := &cswrrv3.ClientSideWeightedRoundRobin{
		OobReportingPeriod:     cswrrDuration(t.OOBReportingPeriod),
		BlackoutPeriod:         cswrrDuration(t.BlackoutPeriod),
		WeightExpirationPeriod: cswrrDuration(t.WeightExpirationPeriod),
		WeightUpdatePeriod:     cswrrDuration(t.WeightUpdatePeriod),
	}
	if t.EnableOOBLoadReport {
		cfg.EnableOobLoadReport = wrapperspb.Bool(true)
	}
	if p := t.ErrorUtilizationPenalty; p != nil {
		// model guarantees the penalty fits a float.
		cfg.ErrorUtilizationPenalty = wrapperspb.Float(float32(*p))
	}
	return cfg
}

// cswrrDuration is d as a Duration, nil when d is.
func cswrrDuration(d *time.Duration) *durationpb.Duration {
	if d == nil {
		return nil
	}
	return durationpb.New(*d)
}
