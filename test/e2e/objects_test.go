package e2e

import (
	"net/netip"
	"strconv"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// namespace holds every object of the split test.
const namespace = "e2e"

// servicePort is the port of every target Service. The backends listen on
// other, kernel-chosen ports: their EndpointSlices carry those, and an
// unnamed Service port matches every TCP slice port.
const servicePort = 9000

// target is one ExtensionService target: a Service and its weight.
type target struct {
	service string
	weight  uint32
}

func extensionServiceObject(name string, generation int64, targets ...target) *tributaryv1.KubernetesObject {
	h2c := "h2c"
	spec := &tributaryv1.ExtensionServiceSpec{Protocol: &h2c}
	for _, t := range targets {
		spec.Services = append(spec.Services, &tributaryv1.ExtensionServiceTarget{Name: t.service, Port: servicePort, Weight: t.weight})
	}
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_ExtensionService{ExtensionService: &tributaryv1.ExtensionService{
		Metadata: &tributaryv1.ObjectMeta{Namespace: namespace, Name: name, Generation: generation},
		Spec:     spec,
	}}}
}

func serviceObject(name string) *tributaryv1.KubernetesObject {
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Service{Service: &tributaryv1.Service{
		Metadata: &tributaryv1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: &tributaryv1.ServiceSpec{
			Type:  "ClusterIP",
			Ports: []*tributaryv1.ServicePort{{Port: servicePort, TargetPort: strconv.Itoa(servicePort), Protocol: "TCP"}},
		},
	}}}
}

// endpointSliceObject returns EndpointSlice "<service>-<index>" of service
// holding one ready endpoint at addr, or none when addr is not valid (a
// slice scaled to zero). One slice per backend, since a slice's ports apply
// to all its endpoints and every backend listens on its own port.
func endpointSliceObject(service string, index int, addr netip.AddrPort) *tributaryv1.KubernetesObject {
	tcp := "TCP"
	slice := &tributaryv1.EndpointSlice{
		Metadata: &tributaryv1.ObjectMeta{
			Namespace: namespace,
			Name:      service + "-" + strconv.Itoa(index),
			Labels:    map[string]string{"kubernetes.io/service-name": service},
		},
		AddressType: "IPv4",
	}
	if addr.IsValid() {
		port := int32(addr.Port())
		ready := true
		slice.Ports = []*tributaryv1.EndpointPort{{Port: &port, Protocol: &tcp}}
		slice.Endpoints = []*tributaryv1.Endpoint{{
			Addresses:  []string{addr.Addr().String()},
			Conditions: &tributaryv1.EndpointConditions{Ready: &ready},
		}}
	}
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_EndpointSlice{EndpointSlice: slice}}
}
