package objectgen

import "github.com/tributary-dev/tributary/internal/source"

// Hand-written objects, for tests that spell their input out rather than
// draw it: every one in the namespace Namespace.

// Namespace is the namespace of the hand-written objects.
const Namespace = "ns"

// TCPPort is an EndpointSlice port; the name "-" leaves the name unset.
func TCPPort(name string, port int32) source.EndpointPort {
	p := source.EndpointPort{Port: ptr(port), Protocol: ptr("TCP")}
	if name != "-" {
		p.Name = ptr(name)
	}
	return p
}

// Ports lists ports, for Slice.
func Ports(ps ...source.EndpointPort) []source.EndpointPort { return ps }

// Slice is the EndpointSlice name of family ("IPv4", "IPv6") labelled for
// service.
func Slice(name, service, family string, ports []source.EndpointPort, eps ...source.Endpoint) source.EndpointSlice {
	return source.EndpointSlice{
		Meta:        source.Meta{Namespace: Namespace, Name: name},
		Service:     service,
		AddressType: family,
		Ports:       ports,
		Endpoints:   source.MakeEndpoints(eps...),
	}
}

// ReadyAt is a ready endpoint at address.
func ReadyAt(address string) source.Endpoint { return source.Endpoint{Address: address} }

// WithReady is an endpoint at address, ready or not.
func WithReady(ready bool, address string) source.Endpoint {
	return source.Endpoint{Address: address, NotReady: !ready}
}
