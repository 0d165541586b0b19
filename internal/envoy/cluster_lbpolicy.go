package envoy

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/tributary-dev/tributary/internal/model"
)

// applyClientSideWeightedRoundRobin sets load_balancing_policy for
// strategy ClientSideWeightedRoundRobin; other strategies are left as they
// are.
func applyClientSideWeightedRoundRobin(c *clusterv3.Cluster, ec *model.ExtensionCluster) {}
