package contour_test

import (
	"context"
	"fmt"
	"log"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	core_v1 "k8s.io/api/core/v1"
	discovery_v1 "k8s.io/api/discovery/v1"
	meta_v1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tributary-dev/tributary/client"
	"github.com/tributary-dev/tributary/client/contour"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

func ExampleNewAdapter() {
	ctx := context.Background()
	conn, err := grpc.NewClient(serverAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	// Contour's cluster and endpoint caches and its status writer.
	var caches printingCaches
	adapter := contour.NewAdapter(ctx, client.New(conn), &contour.Config{XDSClusterName: "contour"},
		contour.WithClusterSink(caches), contour.WithEndpointSink(caches), contour.WithStatusWriter(caches))
	defer adapter.Close()

	// Register adapter as the event handler of the ExtensionService,
	// Service, EndpointSlice, Secret and TLSCertificateDelegation
	// informers. Here, the initial list they deliver:
	adapter.OnAdd(extensionService("ext-authz", "authz"), true)
	adapter.OnAdd(service("authz"), true)
	adapter.OnAdd(endpointSlice("authz-1", "authz", "10.244.1.17"), true)
	adapter.OnAdd(service("web"), true) // named by no ExtensionService: not sent

	// Flush once every informer has synced; later changes flush by
	// themselves.
	if err := adapter.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// clusters: [extension/auth/ext-authz]
	// cluster load assignments: [extension/auth/ext-authz: [10.244.1.17]]
	// status auth/ext-authz: Valid True
}

// printingCaches prints what an Adapter delivers.
type printingCaches struct{}

func (printingCaches) UpdateClusters(changed []*clusterv3.Cluster, removed []string) {
	var names []string
	for _, c := range changed {
		names = append(names, c.GetName())
	}
	fmt.Println("clusters:", names)
	printRemoved("clusters", removed)
}

func (printingCaches) UpdateClusterLoadAssignments(changed []*endpointv3.ClusterLoadAssignment, removed []string) {
	var assignments []string
	for _, cla := range changed {
		var addrs []string
		for _, l := range cla.GetEndpoints() {
			for _, e := range l.GetLbEndpoints() {
				addrs = append(addrs, e.GetEndpoint().GetAddress().GetSocketAddress().GetAddress())
			}
		}
		assignments = append(assignments, fmt.Sprintf("%s: %v", cla.GetClusterName(), addrs))
	}
	fmt.Println("cluster load assignments:", assignments)
	printRemoved("cluster load assignments", removed)
}

func (printingCaches) WriteStatus(namespace, name string, st *tributaryv1.ExtensionServiceStatus) {
	c := st.GetConditions()[0]
	fmt.Printf("status %s/%s: %s %s\n", namespace, name, c.GetType(), c.GetStatus())
}

func (printingCaches) RemoveStatus(namespace, name string) {
	fmt.Printf("status %s/%s removed\n", namespace, name)
}

func printRemoved(what string, removed []string) {
	if len(removed) > 0 {
		fmt.Println(what, "removed:", removed)
	}
}

func extensionService(name, target string) *contour_v1alpha1.ExtensionService {
	return &contour_v1alpha1.ExtensionService{
		ObjectMeta: meta_v1.ObjectMeta{Namespace: "auth", Name: name},
		Spec: contour_v1alpha1.ExtensionServiceSpec{
			Services: []contour_v1alpha1.ExtensionServiceTarget{{Name: target, Port: 9001}},
		},
	}
}

func service(name string) *core_v1.Service {
	return &core_v1.Service{
		ObjectMeta: meta_v1.ObjectMeta{Namespace: "auth", Name: name},
		Spec: core_v1.ServiceSpec{
			Type:  core_v1.ServiceTypeClusterIP,
			Ports: []core_v1.ServicePort{{Name: "grpc", Port: 9001, TargetPort: intstr.FromInt32(9000), Protocol: core_v1.ProtocolTCP}},
		},
	}
}

func endpointSlice(name, service string, addrs ...string) *discovery_v1.EndpointSlice {
	slice := &discovery_v1.EndpointSlice{
		ObjectMeta:  meta_v1.ObjectMeta{Namespace: "auth", Name: name, Labels: map[string]string{discovery_v1.LabelServiceName: service}},
		AddressType: discovery_v1.AddressTypeIPv4,
		Ports:       []discovery_v1.EndpointPort{{Name: new("grpc"), Port: new(int32(9000)), Protocol: new(core_v1.ProtocolTCP)}},
	}
	for _, a := range addrs {
		slice.Endpoints = append(slice.Endpoints, discovery_v1.Endpoint{Addresses: []string{a}})
	}
	return slice
}
