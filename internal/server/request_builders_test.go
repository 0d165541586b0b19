package server

import (
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/source"
)

func meta(ns, name string) *tributaryv1.ObjectMeta {
	return &tributaryv1.ObjectMeta{Namespace: ns, Name: name}
}

func extensionServiceObject(m *tributaryv1.ObjectMeta, spec *tributaryv1.ExtensionServiceSpec) *tributaryv1.KubernetesObject {
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_ExtensionService{
		ExtensionService: &tributaryv1.ExtensionService{Metadata: m, Spec: spec}}}
}

func serviceObject(m *tributaryv1.ObjectMeta, ports ...*tributaryv1.ServicePort) *tributaryv1.KubernetesObject {
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Service{
		Service: &tributaryv1.Service{Metadata: m, Spec: &tributaryv1.ServiceSpec{Type: "ClusterIP", Ports: ports}}}}
}

func endpointSliceObject(m *tributaryv1.ObjectMeta, ports []*tributaryv1.EndpointPort, endpoints ...*tributaryv1.Endpoint) *tributaryv1.KubernetesObject {
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_EndpointSlice{
		EndpointSlice: &tributaryv1.EndpointSlice{Metadata: m, AddressType: "IPv4", Endpoints: endpoints, Ports: ports}}}
}

func secretObject(m *tributaryv1.ObjectMeta) *tributaryv1.KubernetesObject {
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Secret{
		Secret: &tributaryv1.Secret{Metadata: m, Type: "kubernetes.io/tls"}}}
}

func delegationObject(m *tributaryv1.ObjectMeta) *tributaryv1.KubernetesObject {
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_TlsCertificateDelegation{
		TlsCertificateDelegation: &tributaryv1.TLSCertificateDelegation{Metadata: m}}}
}

// sliceMeta is the metadata of an EndpointSlice of Service svc.
func sliceMeta(ns, name, svc string) *tributaryv1.ObjectMeta {
	m := meta(ns, name)
	m.Labels = map[string]string{source.ServiceNameLabel: svc}
	return m
}

func tcpPort(name string, port int32) *tributaryv1.EndpointPort {
	return &tributaryv1.EndpointPort{Name: proto.String(name), Port: proto.Int32(port), Protocol: proto.String("TCP")}
}
