package envoy

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tributary-dev/tributary/internal/model"
)

// BuildClusterLoadAssignment returns the ClusterLoadAssignment for ec: one
// LocalityLbEndpoints per Locality, in order, each with its own sub_zone so
// that clients keep the localities (and their weights) apart. A Locality
// without weight leaves load_balancing_weight unset, which is how the
// xDS API says "no traffic" under locality-weighted balancing. Sockets keep
// the default TCP protocol, so only address and port_value are set. A
// health check on a port of its own (ec.HealthCheck.Port) is written on
// every endpoint as health_check_config.port_value: Envoy reads the port
// to check from the endpoint, never from the Cluster's health check.
//
// This is the reference encoding: AppendClusterLoadAssignment must produce
// exactly the bytes proto.Marshal gives for it.
func BuildClusterLoadAssignment(ec *model.ExtensionCluster) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: ec.Name}
	if len(ec.Localities) == 0 {
		return cla
	}
	healthCheck := healthCheckPort(ec)
	cla.Endpoints = make([]*endpointv3.LocalityLbEndpoints, len(ec.Localities))
	for i := range ec.Localities {
		loc := &ec.Localities[i]
		lle := &endpointv3.LocalityLbEndpoints{
			Locality:    &corev3.Locality{SubZone: loc.SubZone},
			LbEndpoints: make([]*endpointv3.LbEndpoint, len(loc.Endpoints)),
		}
		if loc.Weight > 0 {
			lle.LoadBalancingWeight = wrapperspb.UInt32(loc.Weight)
		}
		for j, ep := range loc.Endpoints {
			lle.LbEndpoints[j] = buildLbEndpoint(ep.Address.String(), ep.Port, healthCheck)
		}
		cla.Endpoints[i] = lle
	}
	return cla
}

// buildLbEndpoint is one endpoint at address and port (an IP, or a name a
// STRICT_DNS Cluster resolves), health checked on healthCheck when it is
// not 0.
func buildLbEndpoint(address string, port, healthCheck uint32) *endpointv3.LbEndpoint {
	endpoint := &endpointv3.Endpoint{
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address:       address,
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
		}}},
	}
	if healthCheck != 0 {
		endpoint.HealthCheckConfig = &endpointv3.Endpoint_HealthCheckConfig{PortValue: healthCheck}
	}
	return &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: endpoint}}
}

// healthCheckPort is the port Envoy health checks every endpoint of ec on
// when it is not the endpoint's own, else 0.
func healthCheckPort(ec *model.ExtensionCluster) uint32 {
	if ec.HealthCheck == nil {
		return 0
	}
	return ec.HealthCheck.Port
}
