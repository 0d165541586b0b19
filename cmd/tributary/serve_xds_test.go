package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// authzObjects is one valid ExtensionService, ns/authz, with one endpoint.
func authzObjects() []*tributaryv1.KubernetesObject {
	m := func(name string) *tributaryv1.ObjectMeta { return &tributaryv1.ObjectMeta{Namespace: "ns", Name: name} }
	sliceMeta := m("a-1")
	sliceMeta.Labels = map[string]string{"kubernetes.io/service-name": "a"}
	return []*tributaryv1.KubernetesObject{
		{Kind: &tributaryv1.KubernetesObject_ExtensionService{ExtensionService: &tributaryv1.ExtensionService{
			Metadata: m("authz"),
			Spec:     &tributaryv1.ExtensionServiceSpec{Services: []*tributaryv1.ExtensionServiceTarget{{Name: "a", Port: 9000}}},
		}}},
		{Kind: &tributaryv1.KubernetesObject_Service{Service: &tributaryv1.Service{
			Metadata: m("a"),
			Spec:     &tributaryv1.ServiceSpec{Type: "ClusterIP", Ports: []*tributaryv1.ServicePort{{Name: "grpc", Port: 9000, TargetPort: "9000", Protocol: "TCP"}}},
		}}},
		{Kind: &tributaryv1.KubernetesObject_EndpointSlice{EndpointSlice: &tributaryv1.EndpointSlice{
			Metadata: sliceMeta, AddressType: "IPv4",
			Ports:     []*tributaryv1.EndpointPort{{Name: proto.String("grpc"), Port: proto.Int32(9000), Protocol: proto.String("TCP")}},
			Endpoints: []*tributaryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: &tributaryv1.EndpointConditions{Ready: proto.Bool(true)}}},
		}}},
	}
}

// TestServeXDS serves with --xds-address: a Sync session naming a node
// group publishes its Cluster to an ADS client of that group; then serve
// stops (as on SIGTERM) with the xDS stream still open, which ends it, and
// exits 0.
func TestServeXDS(t *testing.T) {
	s := startServe(t, "--xds-address", "127.0.0.1:0", "--xds-withdraw-grace", "1h")

	conn, err := grpc.NewClient(s.grpcAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	sync, err := tributaryv1.NewTranslationServiceClient(conn).Sync(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []*tributaryv1.SyncRequest{
		{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{XdsNodeGroup: "edge"}}},
		{Message: &tributaryv1.SyncRequest_Batch{Batch: &tributaryv1.SyncBatch{Id: 1, Upserts: authzObjects()}}},
	} {
		if err := sync.Send(req); err != nil {
			t.Fatal(err)
		}
	}
	if resp, err := sync.Recv(); err != nil || len(resp.GetDelta().GetClusters()) != 1 {
		t.Fatalf("Sync: %v, %v", resp, err)
	}

	xdsConn, err := grpc.NewClient(s.xdsAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = xdsConn.Close() }()
	ads, err := discoveryv3.NewAggregatedDiscoveryServiceClient(xdsConn).DeltaAggregatedResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := ads.Send(&discoveryv3.DeltaDiscoveryRequest{Node: &corev3.Node{Id: "envoy-1", Cluster: "edge"}, TypeUrl: resourcev3.ClusterType}); err != nil {
		t.Fatal(err)
	}
	resp, err := ads.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if rs := resp.GetResources(); len(rs) != 1 || rs[0].GetName() != "extension/ns/authz" {
		t.Fatalf("CDS over xDS: %v", rs)
	}

	// The Sync session ends, so the drain is quick; the xDS stream stays.
	if err := sync.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := sync.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("Sync ended with %v", err)
	}
	if code := s.stop(); code != 0 {
		t.Fatalf("exit %d after shutdown; log:\n%s", code, s.logs.String())
	}
	if _, err := ads.Recv(); err == nil {
		t.Error("the xDS stream outlived the server")
	}
	if !strings.Contains(s.logs.String(), "msg=stopped") {
		t.Errorf("log lacks msg=stopped:\n%s", s.logs.String())
	}
}
