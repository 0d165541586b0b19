package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/testproc"
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

// publishAuthz opens a Sync session on the serve at grpcAddress that
// publishes authzObjects to the xDS node group group, and returns it with
// its first answer, once that came: the resources are published then. The
// session ends with the test, unless the test ends it first.
func publishAuthz(t *testing.T, grpcAddress, group string) (grpc.BidiStreamingClient[tributaryv1.SyncRequest, tributaryv1.SyncResponse], *tributaryv1.SyncDelta) {
	t.Helper()
	conn, err := grpc.NewClient(grpcAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	sync, err := tributaryv1.NewTranslationServiceClient(conn).Sync(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []*tributaryv1.SyncRequest{
		{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{XdsNodeGroup: group}}},
		{Message: &tributaryv1.SyncRequest_Batch{Batch: &tributaryv1.SyncBatch{Id: 1, Upserts: authzObjects()}}},
	} {
		if err := sync.Send(req); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := sync.Recv()
	if err != nil || len(resp.GetDelta().GetClusters()) != 1 {
		t.Fatalf("Sync: %v, %v", resp, err)
	}
	return sync, resp.GetDelta()
}

// TestServeXDS serves with --xds-address: a Sync session naming a node
// group publishes its Cluster to an ADS client of that group; then serve
// stops (as on SIGTERM) with the xDS stream still open, which ends it, and
// exits 0.
func TestServeXDS(t *testing.T) {
	s := startServe(t, "--xds-address", "127.0.0.1:0", "--xds-withdraw-grace", "1h")
	sync, _ := publishAuthz(t, s.grpcAddress, "edge")

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

// serveUsageHint ends every usage error of serve.
const serveUsageHint = "Run 'tributary serve --help' for usage.\n"

// TestServeXDSLimitFlags: a limit that would mean "none" or "default" is a
// usage error, before anything is served.
func TestServeXDSLimitFlags(t *testing.T) {
	tests := []struct {
		args       []string
		wantStderr string
	}{
		{[]string{"--xds-max-streams", "0"}, "error: --xds-max-streams must be positive, not 0\n" + serveUsageHint},
		{[]string{"--xds-max-names-per-stream", "-1"}, "error: --xds-max-names-per-stream must be positive, not -1\n" + serveUsageHint},
		{[]string{"--xds-max-names", "0"}, "error: --xds-max-names must be positive, not 0\n" + serveUsageHint},
		{[]string{"--xds-max-node-length", "0"}, "error: --xds-max-node-length must be positive, not 0\n" + serveUsageHint},
		{[]string{"--xds-max-streams-per-connection", "0"}, "error: --xds-max-streams-per-connection must be positive, not 0\n" + serveUsageHint},
		{[]string{"--xds-max-streams-per-connection", "4294967296"}, "error: --xds-max-streams-per-connection must be at most 4294967295, not 4294967296\n" + serveUsageHint},
		{[]string{"--xds-max-request-bytes", "0"}, "error: --xds-max-request-bytes must be positive, not 0\n" + serveUsageHint},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got := runCmd(t, "", append([]string{"serve", "--address", "127.0.0.1:0", "--xds-address", "127.0.0.1:0"}, tt.args...)...)
			if got.code != 2 || got.stderr != tt.wantStderr {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2, stderr %q", got.code, got.stderr, tt.wantStderr)
			}
		})
	}
}

// TestServeXDSRequestLimits: the limits gRPC enforces on the xDS port
// (--xds-max-request-bytes, the header list size, and
// --xds-max-streams-per-connection) are in effect; the Publisher's own
// limits are tested in package xds.
func TestServeXDSRequestLimits(t *testing.T) {
	s := startServe(t, "--xds-address", "127.0.0.1:0", "--xds-max-request-bytes", "1Ki", "--xds-max-streams-per-connection", "1")
	conn, err := grpc.NewClient(s.xdsAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ads := discoveryv3.NewAggregatedDiscoveryServiceClient(conn)

	// One name of 2,000 bytes: the request is over 1 KiB.
	big := &discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.ClusterType, ResourceNames: []string{strings.Repeat("n", 2000)}}
	stream, err := ads.StreamAggregatedResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(big); err != nil {
		t.Fatal(err)
	}
	_, err = stream.Recv()
	if want := fmt.Sprintf("grpc: received message larger than max (%d vs. 1024)", proto.Size(big)); status.Code(err) != codes.ResourceExhausted || status.Convert(err).Message() != want {
		t.Errorf("a request over --xds-max-request-bytes: %v; want ResourceExhausted: %s", err, want)
	}

	// Headers over 64 KiB: the client knows the server's limit from the
	// HTTP/2 settings it got with the first stream, and does not even send
	// them.
	bigHeaders := metadata.AppendToOutgoingContext(t.Context(), "x-padding", strings.Repeat("h", 64<<10))
	_, err = ads.StreamAggregatedResources(bigHeaders)
	if want := "header list size to send violates the maximum size (65536 bytes) set by server"; status.Code(err) != codes.Internal || status.Convert(err).Message() != want {
		t.Errorf("headers over 64 KiB: %v; want Internal: %s", err, want)
	}

	// One stream open on the connection: a second waits for it to end.
	firstCtx, endFirst := context.WithCancel(t.Context())
	first, err := ads.DeltaAggregatedResources(firstCtx)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.ClusterType}); err != nil {
		t.Fatal(err)
	}
	waiting, cancelWaiting := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancelWaiting()
	if _, err := ads.DeltaAggregatedResources(waiting); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a second stream on the connection: %v; want it to wait (DeadlineExceeded)", err)
	}
	endFirst()
	second, err := ads.DeltaAggregatedResources(t.Context())
	if err != nil {
		t.Fatalf("a stream after the first ended: %v", err)
	}
	if err := second.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.ClusterType}); err != nil {
		t.Errorf("a stream after the first ended: %v", err)
	}
}

// TestXDSResourceDebug: /debug/xds/resource shows a resource a group
// serves, decoded, with the version its clients are sent; it says why when
// there is none.
func TestXDSResourceDebug(t *testing.T) {
	s := startServe(t, "--xds-address", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0")
	_, delta := publishAuthz(t, s.grpcAddress, "edge")
	base := "http://" + s.metricsAddress + "/debug/xds/resource"

	code, body := testproc.Get(t, base+"?group=edge&type=EDS&name="+authzName)
	if code != http.StatusOK {
		t.Fatalf("EDS %s: %d %s", authzName, code, body)
	}
	var got struct {
		Group, TypeURL, Name, Version string
		Resource                      struct {
			Type        string `json:"@type"`
			ClusterName string `json:"clusterName"`
		}
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v:\n%s", err, body)
	}
	want := delta.GetClusterLoadAssignments()[0].GetVersion()
	if got.Group != "edge" || got.TypeURL != resourcev3.EndpointType || got.Name != authzName || got.Version != want ||
		got.Resource.Type != resourcev3.EndpointType || got.Resource.ClusterName != authzName {
		t.Errorf("got %+v, want the ClusterLoadAssignment %s of group edge in version %s", got, authzName, want)
	}

	for _, tc := range []struct {
		query string
		code  int
		body  string
	}{
		{"?group=edge&type=EDS&name=extension/ns/none", http.StatusNotFound, "the group serves no such resource\n"},
		{"?group=other&type=CDS&name=" + authzName, http.StatusNotFound, "the group serves no such resource\n"},
		{"?group=edge&type=EDS", http.StatusBadRequest, "group, type and name are required\n"},
	} {
		if code, body := testproc.Get(t, base+tc.query); code != tc.code || body != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.query, code, body, tc.code, tc.body)
		}
	}
}
