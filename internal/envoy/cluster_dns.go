package envoy

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tributary-dev/tributary/internal/model"
)

// applyExternalName turns c into a STRICT_DNS Cluster when ec's targets
// are ExternalName Services (ec.DNS is set); otherwise it leaves c as it
// is.
//
// Envoy then resolves each name itself, every dns_refresh_rate (Envoy's
// default, 5s), and every address a name resolves to becomes a host of
// that name's locality. The inline load_assignment keeps one locality per
// Service port, with its weight, exactly as the ClusterLoadAssignment of
// an EDS Cluster would. Envoy documents load_assignment as the
// EDS-equivalent assignment of a non-EDS Cluster, and the locality weights
// of any assignment as honoured when common_lb_config has
// locality_weighted_lb_config, which BuildCluster sets for every Cluster:
// so Envoy splits traffic between the Services by their weights here too.
//
// dns_lookup_family is V4_PREFERRED rather than Envoy's default AUTO,
// which asks for IPv6 addresses first: most Kubernetes pod networks are
// IPv4-only or dual-stack, and an external name that publishes AAAA
// records (most public ones do) would otherwise give an IPv4-only Envoy
// hosts it cannot reach. V4_PREFERRED still falls back to IPv6 for a
// name with no IPv4 address.
func applyExternalName(c *clusterv3.Cluster, ec *model.ExtensionCluster) {
	if ec.DNS == nil {
		return
	}
	c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
	c.EdsClusterConfig = nil
	c.DnsLookupFamily = clusterv3.Cluster_V4_PREFERRED
	c.LoadAssignment = buildDNSLoadAssignment(ec)
}

// buildDNSLoadAssignment is the inline assignment of a STRICT_DNS Cluster:
// one LocalityLbEndpoints per DNSLocality, its one endpoint the name and
// port to resolve. A locality of weight 0 leaves load_balancing_weight
// unset (no traffic), as in BuildClusterLoadAssignment. A health check
// on a port of its own (ec.HealthCheck.Port) goes on each endpoint, the
// only place Envoy reads it from.
func buildDNSLoadAssignment(ec *model.ExtensionCluster) *endpointv3.ClusterLoadAssignment {
	healthCheck := healthCheckPort(ec)
	cla := &endpointv3.ClusterLoadAssignment{
		ClusterName: ec.Name,
		Endpoints:   make([]*endpointv3.LocalityLbEndpoints, len(ec.DNS)),
	}
	for i, l := range ec.DNS {
		lle := &endpointv3.LocalityLbEndpoints{
			Locality:    &corev3.Locality{SubZone: l.SubZone},
			LbEndpoints: []*endpointv3.LbEndpoint{buildLbEndpoint(l.Hostname, l.Port, healthCheck)},
		}
		if l.Weight > 0 {
			lle.LoadBalancingWeight = wrapperspb.UInt32(l.Weight)
		}
		cla.Endpoints[i] = lle
	}
	return cla
}
