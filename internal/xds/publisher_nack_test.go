package xds_test

import (
	"slices"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/xds"
	"github.com/tributary-dev/tributary/internal/xdstest"
)

// A State-of-the-World client that NACKs the first response (so it reports
// no accepted version) is not sent the rejected resources again; the NACK
// reaches the Publication and the Metrics, naming node, type, resources,
// error and version; the next change is sent as usual.
func TestSotWNackIsReportedAndNotResent(t *testing.T) {
	rec := newRecorder()
	p, conn := startServer(t, xds.Options{Metrics: rec})
	objs, v1 := translated(2, 1)
	pub := mustOpen(t, p, "edge", xds.PublicationOptions{OnNack: func(n xds.Nack) { rec.nacked <- n }})
	pub.Apply(everything(v1))
	all := names(v1.Clusters)

	c := xdstest.NewSotW(t, conn)
	c.Send(&discoveryv3.DiscoveryRequest{Node: node("grpc-1"), TypeUrl: resourcev3.ClusterType})
	cds := c.Recv()
	c.Send(&discoveryv3.DiscoveryRequest{
		TypeUrl: resourcev3.ClusterType, ResponseNonce: cds.GetNonce(),
		ErrorDetail: &status.Status{Code: 3, Message: "CDS's EDS config source is not to my taste"},
	})
	want := xds.Nack{
		NodeID: "grpc-1", NodeGroup: "edge", TypeURL: resourcev3.ClusterType, ResourceNames: all,
		ErrorDetail: "CDS's EDS config source is not to my taste", RejectedVersion: cds.GetVersionInfo(),
	}
	if d := cmp.Diff(want, <-rec.nacked); d != "" {
		t.Errorf("NACK handed to the Publication (-want +got):\n%s", d)
	}
	// The client repeats its NACK: it is not reported again.
	c.Send(&discoveryv3.DiscoveryRequest{
		TypeUrl: resourcev3.ClusterType, ResponseNonce: cds.GetNonce(),
		ErrorDetail: &status.Status{Code: 3, Message: "CDS's EDS config source is not to my taste"},
	})

	// The server handles an ADS stream's requests in order, and a resend
	// of the rejected Clusters would be queued while handling the NACK:
	// it would arrive before the answer to this later EDS request.
	c.Send(&discoveryv3.DiscoveryRequest{TypeUrl: resourcev3.EndpointType, ResourceNames: all})
	if resp := c.Recv(); resp.GetTypeUrl() != resourcev3.EndpointType {
		t.Fatalf("after the NACK, got %s version %q, want the EDS answer (the rejected CDS response was sent again)", resp.GetTypeUrl(), resp.GetVersionInfo())
	} else {
		c.Ack(resp, all...)
	}

	objs.ExtensionServices[1].Spec.LoadBalancerPolicy = &source.LoadBalancerPolicy{Strategy: "Random"}
	v2 := translate.Translate(objs, source.Settings{})
	pub.Apply(changes(v1, v2))
	if resp := c.Recv(); resp.GetTypeUrl() != resourcev3.ClusterType || resp.GetVersionInfo() == cds.GetVersionInfo() {
		t.Errorf("after a change, got %s version %q, want CDS with a new version", resp.GetTypeUrl(), resp.GetVersionInfo())
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.nacks) != 1 {
		t.Errorf("Metrics saw %d NACKs, want 1", len(rec.nacks))
	}
}

// A Delta NACK is reported with the rejected response's resources and not
// answered with the same resources again.
func TestDeltaNackIsReportedAndNotResent(t *testing.T) {
	rec := newRecorder()
	p, conn := startServer(t, xds.Options{Metrics: rec})
	objs, v1 := translated(2, 1)
	pub := mustOpen(t, p, "edge", xds.PublicationOptions{OnNack: func(n xds.Nack) { rec.nacked <- n }})
	pub.Apply(everything(v1))
	all := names(v1.Clusters)

	c := xdstest.NewDelta(t, conn)
	c.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node("grpc-2"), TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: all})
	eds := c.Recv()
	c.Send(&discoveryv3.DeltaDiscoveryRequest{
		TypeUrl: resourcev3.EndpointType, ResponseNonce: eds.GetNonce(),
		ErrorDetail: &status.Status{Code: 3, Message: "duplicate locality"},
	})
	want := xds.Nack{
		NodeID: "grpc-2", NodeGroup: "edge", TypeURL: resourcev3.EndpointType, ResourceNames: all,
		ErrorDetail: "duplicate locality", RejectedVersion: eds.GetSystemVersionInfo(), Delta: true,
	}
	if d := cmp.Diff(want, <-rec.nacked); d != "" {
		t.Errorf("NACK handed to the Publication (-want +got):\n%s", d)
	}
	c.Send(&discoveryv3.DeltaDiscoveryRequest{TypeUrl: resourcev3.ClusterType})
	if resp := c.Recv(); resp.GetTypeUrl() != resourcev3.ClusterType {
		t.Fatalf("after the NACK, got %s %v, want the CDS answer", resp.GetTypeUrl(), xdstest.DeltaNames(resp))
	}
	moveEndpoint(objs, 0, "10.200.0.3")
	v2 := translate.Translate(objs, source.Settings{})
	ch := changes(v1, v2)
	pub.Apply(ch)
	if resp := c.Recv(); !slices.Equal(xdstest.DeltaNames(resp), names(ch.ClusterLoadAssignments)) {
		t.Errorf("after a change, got %s %v, want %v", resp.GetTypeUrl(), xdstest.DeltaNames(resp), names(ch.ClusterLoadAssignments))
	}
}

// A resource that fails validation is not published: it is reported to the
// Metrics, and the last good version keeps serving.
func TestValidationKeepsLastGoodVersion(t *testing.T) {
	rec := newRecorder()
	p, conn := startServer(t, xds.Options{Metrics: rec})
	_, v1 := translated(2, 1)
	pub := mustOpen(t, p, "edge", xds.PublicationOptions{})
	pub.Apply(everything(v1))

	good := v1.ClusterLoadAssignments[0]
	cla := new(endpointv3.ClusterLoadAssignment)
	if err := proto.Unmarshal(good.Body, cla); err != nil {
		t.Fatal(err)
	}
	// Both localities in one place: gRPC NACKs that, ValidateAll does not
	// notice it, envoy.CheckClusterLoadAssignment does.
	cla.Endpoints[1].Locality = proto.Clone(cla.Endpoints[0].GetLocality()).(*corev3.Locality)
	if err := cla.ValidateAll(); err != nil {
		t.Fatalf("test setup: the crafted resource should pass ValidateAll: %v", err)
	}
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(cla)
	if err != nil {
		t.Fatal(err)
	}
	bad := translate.Resource{Name: good.Name, Version: "crafted", Body: body}
	undecodable := translate.Resource{Name: "extension/x/y", Version: "junk", Body: []byte{0xff}}
	pub.Apply(translate.Changes{ClusterLoadAssignments: []translate.Resource{bad, undecodable}})

	wantRefused := []string{"edge " + resourcev3.EndpointType + " " + good.Name, "edge " + resourcev3.EndpointType + " extension/x/y"}
	if got := rec.refusedSoFar(); !slices.Equal(got, wantRefused) {
		t.Errorf("refused %v, want %v", got, wantRefused)
	}
	c := xdstest.NewDelta(t, conn)
	c.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node("envoy-1"), TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: []string{good.Name, "extension/x/y"}})
	resp := c.Recv()
	if got := xdstest.DeltaNames(resp); !slices.Equal(got, []string{good.Name}) {
		t.Fatalf("served %v, want only the last good %s", got, good.Name)
	}
	served := unpack(t, resp.GetResources()[0].GetResource(), new(endpointv3.ClusterLoadAssignment))
	want := new(endpointv3.ClusterLoadAssignment)
	if err := proto.Unmarshal(good.Body, want); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, served, protocmp.Transform()); d != "" {
		t.Errorf("served ClusterLoadAssignment is not the last good one (-want +got):\n%s", d)
	}
}
