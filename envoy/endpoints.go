package envoy

import (
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	"github.com/tributary-dev/tributary/model"
)

// BuildClusterLoadAssignment returns the ClusterLoadAssignment for ec.
func BuildClusterLoadAssignment(ec *model.ExtensionCluster) *endpointv3.ClusterLoadAssignment {
	panic("TODO")
}
