// Package workload generates the standard benchmark input, shared by the
// benchmarks of every package so that their numbers describe the same thing.
package workload

import (
	"fmt"
	"net/netip"

	"github.com/tributary-dev/tributary/internal/source"
)

// Namespaces is how many namespaces the ExtensionServices spread over.
const Namespaces = 100

// TargetPort is the Service port (and pod port) of every target.
const TargetPort = 9000

// Standard returns n ExtensionServices speaking h2c, each splitting traffic
// 80/20 between two Services of its own ("<name>-primary", "<name>-canary")
// with one EndpointSlice ("<service>-x7k2q") of m ready IPv4 endpoints each:
// 2·n·m endpoints in all. ExtensionService e is "ext-<e, 5 digits>" in
// namespace "team-<e mod Namespaces, 3 digits>".
//
// It is deterministic. Pod addresses are distinct across the whole workload
// (up to 2^24 pods) and scattered over 10.0.0.0/8 the way a cluster's pod
// CIDR fills up, so neither a slice nor the workload lists them in order and
// sorting does real work. Objects are listed in an order unrelated to their
// names. Every call returns fresh objects sharing nothing with earlier ones.
func Standard(n, m int) *source.Objects {
	objs := &source.Objects{
		ExtensionServices: make([]source.ExtensionService, 0, n),
		Services:          make([]source.Service, 0, 2*n),
		EndpointSlices:    make([]source.EndpointSlice, 0, 2*n),
	}
	h2c := "h2c"
	tcp, portName, port := "TCP", "grpc", int32(TargetPort)
	slicePorts := []source.EndpointPort{{Name: &portName, Port: &port, Protocol: &tcp}}

	pod := uint32(0) // the next pod, before scattering
	for i := range n {
		// Visit the ExtensionServices out of name order: 7919 is prime, so
		// i ↦ i·7919 mod n is a permutation unless n is a multiple of it.
		e := int(uint64(i) * 7919 % uint64(n))
		if n%7919 == 0 {
			e = i
		}
		ns := fmt.Sprintf("team-%03d", e%Namespaces)
		name := fmt.Sprintf("ext-%05d", e)
		es := source.ExtensionService{
			Meta: source.Meta{Namespace: ns, Name: name, Generation: 1},
			Spec: source.ExtensionServiceSpec{Protocol: &h2c},
		}
		for t, weight := range []uint32{80, 20} {
			svcName := name + []string{"-primary", "-canary"}[t]
			es.Spec.Services = append(es.Spec.Services, source.ExtensionServiceTarget{Name: svcName, Port: TargetPort, Weight: weight})
			objs.Services = append(objs.Services, source.Service{
				Meta: source.Meta{Namespace: ns, Name: svcName},
				Type: "ClusterIP",
				Ports: []source.ServicePort{{
					Name: portName, Port: TargetPort, TargetPort: fmt.Sprint(TargetPort), Protocol: tcp,
				}},
			})
			slice := source.EndpointSlice{
				Meta:        source.Meta{Namespace: ns, Name: svcName + "-x7k2q"},
				Service:     svcName,
				AddressType: "IPv4",
				Ports:       slicePorts,
			}
			var eps source.EndpointsBuilder
			for range m {
				eps.Add(PodAddress(pod).String(), false)
				pod++
			}
			slice.Endpoints = eps.Endpoints()
			objs.EndpointSlices = append(objs.EndpointSlices, slice)
		}
		objs.ExtensionServices = append(objs.ExtensionServices, es)
	}
	return objs
}

// ReadyEndpoint is an endpoint at address that is ready, as the workload's
// endpoints are (EndpointSliceObject sends it ready, serving and not
// terminating).
func ReadyEndpoint(address string) source.Endpoint {
	return source.Endpoint{Address: address}
}

// PodAddress scatters pod number i over 10.0.0.0/8. Multiplying by an odd
// constant is a bijection modulo 2^24, so distinct pods get distinct
// addresses (for the first 2^24 of them).
func PodAddress(i uint32) netip.Addr {
	h := i * 0x9E3779B1 & (1<<24 - 1)
	return netip.AddrFrom4([4]byte{10, byte(h >> 16), byte(h >> 8), byte(h)})
}
