package workload

import (
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/source"
)

// The conversions below give the API form of the objects this package
// builds, for tests that send them over the wire. They carry what Standard
// and the tests that change its objects set: metadata, an ExtensionService's
// protocol and targets, a Service's type and ports, and an EndpointSlice's
// address type, ports and endpoints. Anything else (timeouts, TLS, other
// kinds) is not carried.

// APIObjects converts objs, keeping the order of each kind.
func APIObjects(objs *source.Objects) (extensionServices, services, endpointSlices []*tributaryv1.KubernetesObject) {
	for i := range objs.ExtensionServices {
		extensionServices = append(extensionServices, ExtensionServiceObject(&objs.ExtensionServices[i]))
	}
	for i := range objs.Services {
		services = append(services, ServiceObject(&objs.Services[i]))
	}
	for i := range objs.EndpointSlices {
		endpointSlices = append(endpointSlices, EndpointSliceObject(&objs.EndpointSlices[i]))
	}
	return extensionServices, services, endpointSlices
}

// ExtensionServiceObject converts es.
func ExtensionServiceObject(es *source.ExtensionService) *tributaryv1.KubernetesObject {
	spec := &tributaryv1.ExtensionServiceSpec{Protocol: es.Spec.Protocol}
	for _, t := range es.Spec.Services {
		spec.Services = append(spec.Services, &tributaryv1.ExtensionServiceTarget{Name: t.Name, Port: t.Port, Weight: t.Weight})
	}
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_ExtensionService{
		ExtensionService: &tributaryv1.ExtensionService{Metadata: objectMeta(es.Meta), Spec: spec},
	}}
}

// ServiceObject converts svc.
func ServiceObject(svc *source.Service) *tributaryv1.KubernetesObject {
	spec := &tributaryv1.ServiceSpec{Type: svc.Type}
	for _, p := range svc.Ports {
		spec.Ports = append(spec.Ports, &tributaryv1.ServicePort{Name: p.Name, Port: p.Port, TargetPort: p.TargetPort, Protocol: p.Protocol})
	}
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Service{
		Service: &tributaryv1.Service{Metadata: objectMeta(svc.Meta), Spec: spec},
	}}
}

// EndpointSliceObject converts s.
func EndpointSliceObject(s *source.EndpointSlice) *tributaryv1.KubernetesObject {
	slice := &tributaryv1.EndpointSlice{Metadata: objectMeta(s.Meta), AddressType: s.AddressType}
	// Labelled as the EndpointSlice controller labels a slice.
	slice.Metadata.Labels = map[string]string{
		source.ServiceNameLabel:                  s.Service,
		"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
	}
	for _, p := range s.Ports {
		slice.Ports = append(slice.Ports, &tributaryv1.EndpointPort{Name: p.Name, Port: p.Port, Protocol: p.Protocol})
	}
	for i := range s.Endpoints.Len() {
		e := s.Endpoints.At(i)
		// Every condition set, as the EndpointSlice controller sets them: a
		// ready endpoint serves and is not terminating.
		ready, terminating := !e.NotReady, false
		slice.Endpoints = append(slice.Endpoints, &tributaryv1.Endpoint{
			Addresses:  []string{e.Address},
			Conditions: &tributaryv1.EndpointConditions{Ready: &ready, Serving: &ready, Terminating: &terminating},
		})
	}
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_EndpointSlice{EndpointSlice: slice}}
}

func objectMeta(m source.Meta) *tributaryv1.ObjectMeta {
	return &tributaryv1.ObjectMeta{Namespace: m.Namespace, Name: m.Name, Generation: m.Generation}
}
