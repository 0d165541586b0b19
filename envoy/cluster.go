package envoy

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/tributary-dev/tributary/model"
)

// BuildCluster returns the EDS Cluster for ec.
func BuildCluster(ec *model.ExtensionCluster) *clusterv3.Cluster {
	panic("TODO")
}
