package client_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/grpctest"
	"github.com/tributary-dev/tributary/internal/server"
	"github.com/tributary-dev/tributary/internal/source"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// dial serves a real server over an in-memory listener until the test ends.
func dial(t *testing.T) *grpc.ClientConn {
	t.Helper()
	return grpctest.Bufconn(t, server.NewGRPCServer(server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
}

func object(o any) *tributaryv1.KubernetesObject {
	switch o := o.(type) {
	case *tributaryv1.ExtensionService:
		return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_ExtensionService{ExtensionService: o}}
	case *tributaryv1.Service:
		return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Service{Service: o}}
	case *tributaryv1.EndpointSlice:
		return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_EndpointSlice{EndpointSlice: o}}
	}
	panic(fmt.Sprintf("unexpected %T", o))
}

// twoExtensions is a request with two valid h2c ExtensionServices over one
// Service and one with no targets.
func twoExtensions() *tributaryv1.TranslateRequest {
	es := func(name string) *tributaryv1.KubernetesObject {
		return object(&tributaryv1.ExtensionService{
			Metadata: &tributaryv1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: &tributaryv1.ExtensionServiceSpec{
				Services: []*tributaryv1.ExtensionServiceTarget{{Name: "svc", Port: 80}},
				Protocol: proto.String("h2c"),
			},
		})
	}
	return &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{
		es("b"), es("a"),
		object(&tributaryv1.ExtensionService{Metadata: &tributaryv1.ObjectMeta{Namespace: "ns", Name: "empty"}}),
		object(&tributaryv1.Service{
			Metadata: &tributaryv1.ObjectMeta{Namespace: "ns", Name: "svc"},
			Spec:     &tributaryv1.ServiceSpec{Ports: []*tributaryv1.ServicePort{{Port: 80, TargetPort: "8080"}}},
		}),
		object(&tributaryv1.EndpointSlice{
			Metadata:    &tributaryv1.ObjectMeta{Namespace: "ns", Name: "svc-1", Labels: map[string]string{source.ServiceNameLabel: "svc"}},
			AddressType: "IPv4",
			Endpoints:   []*tributaryv1.Endpoint{{Addresses: []string{"10.1.0.1"}}},
			Ports:       []*tributaryv1.EndpointPort{{Port: proto.Int32(8080), Protocol: proto.String("TCP")}},
		}),
	}}
}

// TestTranslate: the client returns exactly the resources of the raw
// response, typed, with versions by name, and every resource passes
// Envoy's validation rules.
func TestTranslate(t *testing.T) {
	conn := dial(t)
	raw, err := tributaryv1.NewTranslationServiceClient(conn).Translate(t.Context(), twoExtensions())
	if err != nil {
		t.Fatalf("raw Translate: %v", err)
	}
	got, err := client.New(conn).Translate(t.Context(), twoExtensions())
	if err != nil {
		t.Fatalf("client Translate: %v", err)
	}

	want := &client.Translation{
		Statuses:                      raw.GetStatuses(),
		ClusterVersions:               map[string]string{},
		ClusterLoadAssignmentVersions: map[string]string{},
	}
	for _, r := range raw.GetClusters() {
		c := &clusterv3.Cluster{}
		if err := r.GetResource().UnmarshalTo(c); err != nil {
			t.Fatal(err)
		}
		want.Clusters = append(want.Clusters, c)
		want.ClusterVersions[r.GetName()] = r.GetVersion()
	}
	for _, r := range raw.GetClusterLoadAssignments() {
		cla := &endpointv3.ClusterLoadAssignment{}
		if err := r.GetResource().UnmarshalTo(cla); err != nil {
			t.Fatal(err)
		}
		want.ClusterLoadAssignments = append(want.ClusterLoadAssignments, cla)
		want.ClusterLoadAssignmentVersions[r.GetName()] = r.GetVersion()
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("Translation (-want +got):\n%s", diff)
	}

	var names []string
	for _, c := range got.Clusters {
		names = append(names, c.GetName())
		if err := c.ValidateAll(); err != nil {
			t.Errorf("Cluster %s: %v", c.GetName(), err)
		}
	}
	for _, cla := range got.ClusterLoadAssignments {
		if err := cla.ValidateAll(); err != nil {
			t.Errorf("ClusterLoadAssignment %s: %v", cla.GetClusterName(), err)
		}
	}
	if want := []string{"extension/ns/a", "extension/ns/b"}; !cmp.Equal(names, want) {
		t.Errorf("cluster names = %q, want %q", names, want)
	}
	if len(got.ClusterVersions) != 2 || len(got.ClusterLoadAssignmentVersions) != 2 || len(got.Statuses) != 3 {
		t.Errorf("got %d cluster versions, %d CLA versions, %d statuses; want 2, 2, 3",
			len(got.ClusterVersions), len(got.ClusterLoadAssignmentVersions), len(got.Statuses))
	}
	// Equal content gives equal versions.
	if a, b := got.ClusterLoadAssignmentVersions["extension/ns/a"], got.ClusterLoadAssignmentVersions["extension/ns/b"]; a == b {
		t.Errorf("CLAs of different clusters share version %s", a)
	}
}

// TestTranslateErrors: call errors are gRPC status errors, details intact.
func TestTranslateErrors(t *testing.T) {
	_, err := client.New(dial(t)).Translate(t.Context(), &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{ConnectTimeout: "soon"}})
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument || st.Message() != `settings.connectTimeout: time: invalid duration "soon"` || len(st.Details()) != 1 {
		t.Errorf("got %v with details %v, want InvalidArgument with one BadRequest", err, st.Details())
	}
}

// TestMessageSizes: the client's default receive limit is the server's, not
// gRPC's 4 MiB, and call options override it.
func TestMessageSizes(t *testing.T) {
	if client.DefaultMaxMsgSize != server.DefaultMaxMsgSize {
		t.Errorf("client.DefaultMaxMsgSize = %d, server's = %d", client.DefaultMaxMsgSize, server.DefaultMaxMsgSize)
	}
	// Invalid ExtensionServices give a status each: a response over 4 MiB
	// without needing any endpoint.
	req := &tributaryv1.TranslateRequest{}
	for i := range 40_000 {
		req.Objects = append(req.Objects, object(&tributaryv1.ExtensionService{Metadata: &tributaryv1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("ext-%d", i)}}))
	}
	conn := dial(t)

	_, err := tributaryv1.NewTranslationServiceClient(conn).Translate(t.Context(), req)
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("generated client with gRPC's defaults: got %v, want ResourceExhausted (is the response still over 4 MiB?)", err)
	}
	got, err := client.New(conn).Translate(t.Context(), req)
	if err != nil {
		t.Fatalf("client with its defaults: %v", err)
	}
	if len(got.Statuses) != 40_000 {
		t.Errorf("got %d statuses, want 40000", len(got.Statuses))
	}
	_, err = client.New(conn).Translate(t.Context(), req, client.WithCallOptions(grpc.MaxCallRecvMsgSize(1024)))
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("with a 1 KiB receive limit: got %v, want ResourceExhausted", err)
	}
}

// TestTypeURLs: the client expects exactly the type URLs the server sends.
func TestTypeURLs(t *testing.T) {
	if client.ClusterTypeURL != resourcev3.ClusterType {
		t.Errorf("ClusterTypeURL = %q, the server sends %q", client.ClusterTypeURL, resourcev3.ClusterType)
	}
	if client.ClusterLoadAssignmentTypeURL != resourcev3.EndpointType {
		t.Errorf("ClusterLoadAssignmentTypeURL = %q, the server sends %q", client.ClusterLoadAssignmentTypeURL, resourcev3.EndpointType)
	}
}

// TestUnpackRejects: a response that does not hold what it claims is an
// error, never a partial Translation.
func TestUnpackRejects(t *testing.T) {
	cluster := func(name string) *anypb.Any {
		a, err := anypb.New(&clusterv3.Cluster{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	cla := func(name string) *anypb.Any {
		a, err := anypb.New(&endpointv3.ClusterLoadAssignment{ClusterName: name})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	tests := []struct {
		name string
		resp *tributaryv1.TranslateResponse
		want string
		// prefix is set where the message ends in the protobuf library's
		// wording, which is not ours to pin.
		prefix bool
	}{{
		name: "no resource",
		resp: &tributaryv1.TranslateResponse{Clusters: []*tributaryv1.Resource{{Name: "x"}}},
		want: `malformed TranslateResponse: clusters[0]: "x" has no resource`,
	}, {
		name: "wrong type",
		resp: &tributaryv1.TranslateResponse{Clusters: []*tributaryv1.Resource{{Name: "x", Resource: cla("x")}}},
		want: `malformed TranslateResponse: clusters[0]: "x" has type "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment", want "type.googleapis.com/envoy.config.cluster.v3.Cluster"`,
	}, {
		name:   "bytes that do not decode",
		resp:   &tributaryv1.TranslateResponse{ClusterLoadAssignments: []*tributaryv1.Resource{{Name: "x", Resource: &anypb.Any{TypeUrl: client.ClusterLoadAssignmentTypeURL, Value: []byte{0xff}}}}},
		want:   `malformed TranslateResponse: clusterLoadAssignments[0]: "x" does not decode as envoy.config.endpoint.v3.ClusterLoadAssignment: `,
		prefix: true,
	}, {
		name: "cluster name mismatch",
		resp: &tributaryv1.TranslateResponse{Clusters: []*tributaryv1.Resource{{Name: "x", Resource: cluster("y")}}},
		want: `malformed TranslateResponse: clusters[0]: listed as "x" but the Cluster is named "y"`,
	}, {
		name: "CLA name mismatch",
		resp: &tributaryv1.TranslateResponse{ClusterLoadAssignments: []*tributaryv1.Resource{{Name: "x", Resource: cla("y")}}},
		want: `malformed TranslateResponse: clusterLoadAssignments[0]: listed as "x" but the ClusterLoadAssignment is for cluster "y"`,
	}, {
		name: "name listed twice",
		resp: &tributaryv1.TranslateResponse{Clusters: []*tributaryv1.Resource{{Name: "x", Resource: cluster("x")}, {Name: "x", Resource: cluster("x")}}},
		want: `malformed TranslateResponse: clusters[1]: "x" is listed twice`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := client.Unpack(tt.resp)
			if got != nil || !errors.Is(err, client.ErrMalformedResponse) {
				t.Fatalf("got %v, %v; want nil and an ErrMalformedResponse", got, err)
			}
			msg := err.Error()
			if tt.prefix && len(msg) > len(tt.want) {
				msg = msg[:len(tt.want)]
			}
			if msg != tt.want {
				t.Errorf("error:\n got %s\nwant %s", err, tt.want)
			}
		})
	}
}
