package client_test

import (
	"context"
	"fmt"
	"log"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

func ExampleClient_Translate() {
	ctx := context.Background()
	conn, err := grpc.NewClient(serverAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	tr, err := client.New(conn).Translate(ctx, &tributaryv1.TranslateRequest{Objects: extAuthzObjects()})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range tr.Clusters {
		fmt.Println("cluster", c.GetName(), "version", tr.ClusterVersions[c.GetName()] != "")
	}
	for _, cla := range tr.ClusterLoadAssignments {
		printLocalities(cla)
	}
	for _, st := range tr.Statuses {
		fmt.Println("status", st.GetNamespace()+"/"+st.GetName(), st.GetConditions()[0].GetReason())
	}
	// Output:
	// cluster extension/auth/ext-authz version true
	// extension/auth/ext-authz auth/authz-stable/9001 weight 80 [10.244.1.17 10.244.1.18]
	// extension/auth/ext-authz auth/authz-canary/9001 weight 20 [10.244.2.7]
	// status auth/ext-authz Valid
}

func ExampleClient_Sync() {
	ctx := context.Background()
	conn, err := grpc.NewClient(serverAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	session := client.New(conn).Sync(ctx, nil, client.WithUpdateHandler(func(u client.Update) {
		// u holds the typed go-control-plane resources that changed.
		fmt.Printf("update: %d Cluster(s), %d ClusterLoadAssignment(s), %d status(es)\n",
			len(u.Clusters), len(u.ClusterLoadAssignments), len(u.Statuses))
		for _, cla := range u.ClusterLoadAssignments {
			printLocalities(cla)
		}
	}))
	defer session.Close()

	session.Upsert(extAuthzObjects()...)
	if err := session.Flush(ctx); err != nil { // returns once the update handler has seen the answer
		log.Fatal(err)
	}
	// A pod joins the canary: its ClusterLoadAssignment changes, and the
	// status, whose availability counts the canary's ready endpoints.
	session.Upsert(endpointSlice("authz-canary-1", "authz-canary", "10.244.2.7", "10.244.2.8"))
	if err := session.Flush(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// update: 1 Cluster(s), 1 ClusterLoadAssignment(s), 1 status(es)
	// extension/auth/ext-authz auth/authz-stable/9001 weight 80 [10.244.1.17 10.244.1.18]
	// extension/auth/ext-authz auth/authz-canary/9001 weight 20 [10.244.2.7]
	// update: 0 Cluster(s), 1 ClusterLoadAssignment(s), 1 status(es)
	// extension/auth/ext-authz auth/authz-stable/9001 weight 80 [10.244.1.17 10.244.1.18]
	// extension/auth/ext-authz auth/authz-canary/9001 weight 20 [10.244.2.7 10.244.2.8]
}

// printLocalities prints each weighted locality of cla with its addresses.
func printLocalities(cla *endpointv3.ClusterLoadAssignment) {
	for _, l := range cla.GetEndpoints() {
		var addrs []string
		for _, e := range l.GetLbEndpoints() {
			addrs = append(addrs, e.GetEndpoint().GetAddress().GetSocketAddress().GetAddress())
		}
		fmt.Println(cla.GetClusterName(), l.GetLocality().GetSubZone(), "weight", l.GetLoadBalancingWeight().GetValue(), addrs)
	}
}

// extAuthzObjects is an ext_authz ExtensionService split 80/20 between two
// Services, and their EndpointSlices.
func extAuthzObjects() []*tributaryv1.KubernetesObject {
	es := &tributaryv1.ExtensionService{
		Metadata: &tributaryv1.ObjectMeta{Namespace: "auth", Name: "ext-authz"},
		Spec: &tributaryv1.ExtensionServiceSpec{
			Protocol: proto.String("h2c"),
			Services: []*tributaryv1.ExtensionServiceTarget{
				{Name: "authz-stable", Port: 9001, Weight: 80},
				{Name: "authz-canary", Port: 9001, Weight: 20},
			},
		},
	}
	return []*tributaryv1.KubernetesObject{
		{Kind: &tributaryv1.KubernetesObject_ExtensionService{ExtensionService: es}},
		service("authz-stable"),
		service("authz-canary"),
		endpointSlice("authz-stable-1", "authz-stable", "10.244.1.17", "10.244.1.18"),
		endpointSlice("authz-canary-1", "authz-canary", "10.244.2.7"),
	}
}

func service(name string) *tributaryv1.KubernetesObject {
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Service{Service: &tributaryv1.Service{
		Metadata: &tributaryv1.ObjectMeta{Namespace: "auth", Name: name},
		Spec: &tributaryv1.ServiceSpec{
			Type:  "ClusterIP",
			Ports: []*tributaryv1.ServicePort{{Name: "grpc", Port: 9001, TargetPort: "9000", Protocol: "TCP"}},
		},
	}}}
}

func endpointSlice(name, service string, addrs ...string) *tributaryv1.KubernetesObject {
	slice := &tributaryv1.EndpointSlice{
		Metadata:    &tributaryv1.ObjectMeta{Namespace: "auth", Name: name, Labels: map[string]string{"kubernetes.io/service-name": service}},
		AddressType: "IPv4",
		Ports:       []*tributaryv1.EndpointPort{{Name: proto.String("grpc"), Port: proto.Int32(9000), Protocol: proto.String("TCP")}},
	}
	for _, a := range addrs {
		slice.Endpoints = append(slice.Endpoints, &tributaryv1.Endpoint{Addresses: []string{a}})
	}
	return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_EndpointSlice{EndpointSlice: slice}}
}
