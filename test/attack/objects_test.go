package attack

import (
	"bytes"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/workload"
)

// The legitimate client's objects: ExtensionService legit/ext (h2c)
// targets Service backend, whose EndpointSlice has two ready endpoints.
const (
	legitNamespace = "legit"
	legitCluster   = "extension/legit/ext"
)

var legitAddresses = []string{"10.1.0.1", "10.1.0.2"}

// The attacks' objects live in namespace attack; their ExtensionServices
// target Service backend there.
const attackNamespace = "attack"

// targetPort is the port of every target Service; its pods listen on
// podPort.
const (
	targetPort = 9000
	podPort    = 9001
)

func legitObjects() []*tributaryv1.KubernetesObject {
	return []*tributaryv1.KubernetesObject{
		extensionService(legitNamespace, "ext", "h2c", nil, "backend"),
		service(legitNamespace, "backend"),
		endpointSlice(legitNamespace, "backend-1", "backend", legitAddresses...),
	}
}

func legitRequest() *tributaryv1.TranslateRequest {
	return &tributaryv1.TranslateRequest{Objects: legitObjects()}
}

// checkLegitAnswer fails the test unless resp is the translation of
// legitObjects: one valid ExtensionService, whose Cluster and
// ClusterLoadAssignment are named for it, with one locality holding the two
// endpoints at the pods' port.
func checkLegitAnswer(t *testing.T, resp *tributaryv1.TranslateResponse) {
	t.Helper()
	tr, err := client.Unpack(resp)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Clusters) != 1 || tr.Clusters[0].GetName() != legitCluster {
		t.Fatalf("the legitimate Translate gave Clusters %v, want one, %s", resp.GetClusters(), legitCluster)
	}
	if len(tr.ClusterLoadAssignments) != 1 || tr.ClusterLoadAssignments[0].GetClusterName() != legitCluster {
		t.Fatalf("the legitimate Translate gave ClusterLoadAssignments %v, want one, %s", resp.GetClusterLoadAssignments(), legitCluster)
	}
	var got []string
	for _, loc := range tr.ClusterLoadAssignments[0].GetEndpoints() {
		for _, e := range loc.GetLbEndpoints() {
			sa := e.GetEndpoint().GetAddress().GetSocketAddress()
			got = append(got, fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue()))
		}
	}
	want := []string{fmt.Sprintf("%s:%d", legitAddresses[0], podPort), fmt.Sprintf("%s:%d", legitAddresses[1], podPort)}
	if len(tr.ClusterLoadAssignments[0].GetEndpoints()) != 1 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the legitimate ClusterLoadAssignment has %d localities with endpoints %v, want one with %v",
			len(tr.ClusterLoadAssignments[0].GetEndpoints()), got, want)
	}
	if len(tr.Statuses) != 1 || tr.Statuses[0].GetConditions()[0].GetStatus() != "True" {
		t.Fatalf("the legitimate Translate gave statuses %v, want one, valid", tr.Statuses)
	}
}

// ballastRequest is the legitimate request plus Opaque Secrets of n bytes
// in all that nothing references: translating them costs next to nothing,
// decoding them allocates n bytes. Each holds at most half of the 1 MiB
// Kubernetes allows a Secret.
func ballastRequest(n int) *tributaryv1.TranslateRequest {
	const most = 512 << 10
	req := legitRequest()
	for i := 0; n > 0; i++ {
		k := min(n, most)
		req.Objects = append(req.Objects, secret(legitNamespace, fmt.Sprintf("ballast-%02d", i), "Opaque", bytes.Repeat([]byte{'b'}, k), nil))
		n -= k
	}
	return req
}

// extensionService is ExtensionService ns/name speaking protocol, with
// spec.validation v (or none), splitting traffic equally between the
// Services targets at targetPort.
func extensionService(ns, name, protocol string, v *tributaryv1.UpstreamValidation, targets ...string) *tributaryv1.KubernetesObject {
	spec := &tributaryv1.ExtensionServiceSpec{Protocol: proto.String(protocol), Validation: v}
	for _, target := range targets {
		spec.Services = append(spec.Services, &tributaryv1.ExtensionServiceTarget{Name: target, Port: targetPort})
	}
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_ExtensionService{
		ExtensionService: &tributaryv1.ExtensionService{Metadata: &tributaryv1.ObjectMeta{Namespace: ns, Name: name, Generation: 1}, Spec: spec}}}
}

// service is ClusterIP Service ns/name with port grpc (targetPort to
// podPort).
func service(ns, name string) *tributaryv1.KubernetesObject {
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Service{Service: &tributaryv1.Service{
		Metadata: &tributaryv1.ObjectMeta{Namespace: ns, Name: name},
		Spec: &tributaryv1.ServiceSpec{Type: "ClusterIP", Ports: []*tributaryv1.ServicePort{
			{Name: "grpc", Port: targetPort, TargetPort: fmt.Sprint(podPort), Protocol: "TCP"},
		}},
	}}}
}

// endpointSlice is IPv4 EndpointSlice ns/name of Service svc (no
// kubernetes.io/service-name label when svc is empty), port grpc at
// podPort, with a ready endpoint at each of addresses.
func endpointSlice(ns, name, svc string, addresses ...string) *tributaryv1.KubernetesObject {
	m := &tributaryv1.ObjectMeta{Namespace: ns, Name: name}
	if svc != "" {
		m.Labels = map[string]string{source.ServiceNameLabel: svc}
	}
	slice := &tributaryv1.EndpointSlice{Metadata: m, AddressType: "IPv4", Ports: []*tributaryv1.EndpointPort{
		{Name: proto.String("grpc"), Port: proto.Int32(podPort), Protocol: proto.String("TCP")},
	}}
	for _, a := range addresses {
		slice.Endpoints = append(slice.Endpoints, &tributaryv1.Endpoint{
			Addresses: []string{a}, Conditions: &tributaryv1.EndpointConditions{Ready: proto.Bool(true)},
		})
	}
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_EndpointSlice{EndpointSlice: slice}}
}

// secret is Secret ns/name of type typ with the keys ca.crt and tls.crt.
func secret(ns, name, typ string, caCrt, tlsCrt []byte) *tributaryv1.KubernetesObject {
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Secret{Secret: &tributaryv1.Secret{
		Metadata: &tributaryv1.ObjectMeta{Namespace: ns, Name: name}, Type: typ, CaCrt: caCrt, TlsCrt: tlsCrt,
	}}}
}

// backend is Service attack/backend and its EndpointSlice, with one ready
// endpoint: what every attacking ExtensionService targets.
func backend() []*tributaryv1.KubernetesObject {
	return []*tributaryv1.KubernetesObject{
		service(attackNamespace, "backend"),
		endpointSlice(attackNamespace, "backend-1", "backend", "10.2.0.1"),
	}
}

// validatingExtensionServices returns n h2 ExtensionServices in namespace
// attack, "ext-00000" on, each validating the backend's certificate against
// CA Secret attack/ca.
func validatingExtensionServices(n int) []*tributaryv1.KubernetesObject {
	out := make([]*tributaryv1.KubernetesObject, n)
	for i := range out {
		out[i] = extensionService(attackNamespace, fmt.Sprintf("ext-%05d", i), "h2",
			&tributaryv1.UpstreamValidation{CaSecret: "ca", SubjectName: "backend.attack.svc"}, "backend")
	}
	return out
}

// plainExtensionServices returns n ExtensionServices in namespace attack,
// "ext-00000" on, speaking protocol to the backend without validation.
func plainExtensionServices(n int, protocol string) []*tributaryv1.KubernetesObject {
	out := make([]*tributaryv1.KubernetesObject, n)
	for i := range out {
		out[i] = extensionService(attackNamespace, fmt.Sprintf("ext-%05d", i), protocol, nil, "backend")
	}
	return out
}

// heavyRequest is a legitimate but large request: workload.Standard's n
// ExtensionServices with m endpoints per Service.
func heavyRequest(n, m int) *tributaryv1.TranslateRequest {
	es, svcs, slices := workload.APIObjects(workload.Standard(n, m))
	return &tributaryv1.TranslateRequest{Objects: append(append(es, svcs...), slices...)}
}

// size describes a message's encoded size for the table.
func size(m proto.Message) string {
	return kilobytes(proto.Size(m))
}

func kilobytes(n int) string {
	if n >= 10<<20 {
		return fmt.Sprintf("%.0f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.0f KB", float64(n)/1e3)
}

// fanOutRequest is a small request with a large, legitimate output: n
// ExtensionServices, each splitting traffic between the same services
// Services of endpoints endpoints each, so every ClusterLoadAssignment
// repeats all services × endpoints endpoints. Translating it is
// expensive for its size, which is what a deadline scenario needs: the
// request arrives at once, the work takes long.
func fanOutRequest(n, services, endpoints int) *tributaryv1.TranslateRequest {
	targets := make([]string, services)
	var objs []*tributaryv1.KubernetesObject
	pod := uint32(0)
	for i := range targets {
		targets[i] = fmt.Sprintf("shared-%03d", i)
		addrs := make([]string, endpoints)
		for j := range addrs {
			addrs[j] = workload.PodAddress(pod).String()
			pod++
		}
		objs = append(objs, service(attackNamespace, targets[i]), endpointSlice(attackNamespace, targets[i]+"-1", targets[i], addrs...))
	}
	for i := range n {
		objs = append(objs, extensionService(attackNamespace, fmt.Sprintf("fan-%04d", i), "h2c", nil, targets...))
	}
	return &tributaryv1.TranslateRequest{Objects: objs}
}
