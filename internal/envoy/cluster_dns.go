package envoy

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/tributary-dev/tributary/internal/model"
)

// applyExternalName turns c into a STRICT_DNS Cluster when ec's targets
// are ExternalName Services; otherwise it leaves c as it is.
func applyExternalName(c *clusterv3.Cluster, ec *model.ExtensionCluster) {}
