package server

import (
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/source"
)

// smallRequest is a hand-built request with one valid ExtensionService (h2c,
// one target, three endpoints of which one is not ready, an ignored idle
// timeout) and one whose target Service does not exist.
func smallRequest() *tributaryv1.TranslateRequest {
	extMeta := meta("ns", "ext")
	extMeta.Generation = 3
	brokenMeta := meta("ns", "broken")
	brokenMeta.Generation = 1
	return &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{
		extensionServiceObject(extMeta, &tributaryv1.ExtensionServiceSpec{
			Services:      []*tributaryv1.ExtensionServiceTarget{{Name: "svc", Port: 9000}},
			Protocol:      proto.String("h2c"),
			TimeoutPolicy: &tributaryv1.TimeoutPolicy{Response: "10s", Idle: "5s"},
		}),
		serviceObject(meta("ns", "svc"), &tributaryv1.ServicePort{Name: "grpc", Port: 9000, TargetPort: "9001", Protocol: "TCP"}),
		endpointSliceObject(sliceMeta("ns", "svc-1", "svc"), []*tributaryv1.EndpointPort{tcpPort("grpc", 9001)},
			&tributaryv1.Endpoint{Addresses: []string{"10.0.0.2"}},
			&tributaryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: &tributaryv1.EndpointConditions{Ready: proto.Bool(true)}},
			&tributaryv1.Endpoint{Addresses: []string{"10.0.0.3"}, Conditions: &tributaryv1.EndpointConditions{Ready: proto.Bool(false)}},
		),
		extensionServiceObject(brokenMeta, &tributaryv1.ExtensionServiceSpec{
			Services: []*tributaryv1.ExtensionServiceTarget{{Name: "missing", Port: 80}},
			Protocol: proto.String("h2c"),
		}),
	}}
}

// smallResponse is the response to smallRequest, written from the
// translation contract.
func smallResponse(t *testing.T) *tributaryv1.TranslateResponse {
	const name = "extension/ns/ext"
	cluster := &clusterv3.Cluster{
		Name:                 name,
		AltStatName:          "extension_ns_ext",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{
			ServiceName: name,
			EdsConfig: &corev3.ConfigSource{
				ResourceApiVersion: corev3.ApiVersion_V3,
				ConfigSourceSpecifier: &corev3.ConfigSource_ApiConfigSource{ApiConfigSource: &corev3.ApiConfigSource{
					ApiType:             corev3.ApiConfigSource_GRPC,
					TransportApiVersion: corev3.ApiVersion_V3,
					GrpcServices: []*corev3.GrpcService{{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{
						EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: source.DefaultXDSClusterName, Authority: source.DefaultXDSClusterName},
					}}},
				}},
			},
		},
		ConnectTimeout: durationpb.New(2 * time.Second),
		LbPolicy:       clusterv3.Cluster_ROUND_ROBIN,
		CommonLbConfig: &clusterv3.Cluster_CommonLbConfig{
			HealthyPanicThreshold:   &typev3.Percent{Value: 0},
			LocalityConfigSpecifier: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig_{LocalityWeightedLbConfig: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig{}},
		},
		TypedExtensionProtocolOptions: map[string]*anypb.Any{
			"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": mustAny(t, &httpv3.HttpProtocolOptions{
				UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
					ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{}},
				}},
			}),
		},
	}
	endpoint := func(addr string) *endpointv3.LbEndpoint {
		return &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
			Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
				Address: addr, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 9001},
			}}},
		}}}
	}
	cla := &endpointv3.ClusterLoadAssignment{
		ClusterName: name,
		Endpoints: []*endpointv3.LocalityLbEndpoints{{
			Locality:            &corev3.Locality{SubZone: "ns/svc/9000"},
			LbEndpoints:         []*endpointv3.LbEndpoint{endpoint("10.0.0.1"), endpoint("10.0.0.2")},
			LoadBalancingWeight: wrapperspb.UInt32(1),
		}},
	}
	return &tributaryv1.TranslateResponse{
		Clusters:               []*tributaryv1.Resource{resource(t, name, cluster)},
		ClusterLoadAssignments: []*tributaryv1.Resource{resource(t, name, cla)},
		Statuses: []*tributaryv1.ExtensionServiceStatus{{
			Namespace: "ns",
			Name:      "broken",
			Conditions: []*tributaryv1.DetailedCondition{{
				Type:               "Valid",
				Status:             "False",
				ObservedGeneration: 1,
				Reason:             "ErrorPresent",
				Message:            "At least one error present, see Errors for details",
				Errors: []*tributaryv1.SubCondition{{
					Type: "ServiceError", Status: "True", Reason: "ServiceUnresolvedReference",
					Message: `unresolved service "ns/missing": service "ns/missing" not found`,
				}},
			}},
		}, {
			Namespace: "ns",
			Name:      "ext",
			Conditions: []*tributaryv1.DetailedCondition{{
				Type:               "Valid",
				Status:             "True",
				ObservedGeneration: 3,
				Reason:             "Valid",
				Message:            "Valid ExtensionService",
				Warnings: []*tributaryv1.SubCondition{{
					Type: "SpecError", Status: "True", Reason: "IgnoredField",
					Message: `ignoring field ".Spec.TimeoutPolicy.Idle"; idle timeouts are not supported for ExtensionClusters`,
				}},
			}},
			ClusterName:     name,
			ResponseTimeout: "10s",
			Availability:    []*tributaryv1.TargetAvailability{{Service: "svc", Port: 9000, ReadyEndpoints: 2, Weight: 1}},
		}},
	}
}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// resource packs m the way the contract says: deterministic bytes, and a
// version that is the 64-bit xxhash of exactly those bytes, in hex. Because
// the test compares versions as strings, it holds the server to these exact
// bytes, not merely to an equal message.
func resource(t *testing.T, name string, m proto.Message) *tributaryv1.Resource {
	t.Helper()
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	sum := xxhash.Sum64(body)
	version := hex.EncodeToString([]byte{byte(sum >> 56), byte(sum >> 48), byte(sum >> 40), byte(sum >> 32), byte(sum >> 24), byte(sum >> 16), byte(sum >> 8), byte(sum)})
	return &tributaryv1.Resource{
		Name:     name,
		Version:  version,
		Resource: &anypb.Any{TypeUrl: "type.googleapis.com/" + string(m.ProtoReflect().Descriptor().FullName()), Value: body},
	}
}

// TestTranslate sends the small request over both transports and compares
// the whole response with the one written from the contract.
func TestTranslate(t *testing.T) {
	want := smallResponse(t)
	for name, dial := range map[string]func(*testing.T, *grpc.Server) *grpc.ClientConn{"bufconn": dialBufconn, "tcp": dialTCP} {
		t.Run(name, func(t *testing.T) {
			translation := tributaryv1.NewTranslationServiceClient(dial(t, NewGRPCServer(quietOptions())))
			got, err := translation.Translate(t.Context(), smallRequest())
			if err != nil {
				t.Fatalf("Translate: %v", err)
			}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			// protocmp compares Any by content; the bytes must match too
			// (proto.Equal compares an Any's value as bytes).
			for i, r := range got.GetClusters() {
				if !proto.Equal(r.GetResource(), want.GetClusters()[i].GetResource()) {
					t.Errorf("clusters[%d]: bytes differ from the deterministic encoding", i)
				}
			}
			for i, r := range got.GetClusterLoadAssignments() {
				if !proto.Equal(r.GetResource(), want.GetClusterLoadAssignments()[i].GetResource()) {
					t.Errorf("clusterLoadAssignments[%d]: bytes differ from the deterministic encoding", i)
				}
			}
		})
	}
}

// TestTranslateInProcess: the service gives the same response without gRPC,
// which is how the command line uses it.
func TestTranslateInProcess(t *testing.T) {
	got, err := NewTranslationService().Translate(t.Context(), smallRequest())
	if err != nil {
		t.Fatalf("Translate: %v", err)
	}
	if diff := cmp.Diff(smallResponse(t), got, protocmp.Transform()); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

// TestSettingsAtTheirLimitsGiveValidResources: settings that just pass the
// request checks still give resources that pass Envoy's validation rules,
// so the checks are no looser than Envoy.
func TestSettingsAtTheirLimitsGiveValidResources(t *testing.T) {
	req := smallRequest()
	req.Settings = &tributaryv1.Settings{
		XdsClusterName: strings.Repeat("x/", xdsClusterNameLimit.max/2),
		ConnectTimeout: "1ns",
	}
	resp, err := NewTranslationService().Translate(t.Context(), req)
	if err != nil {
		t.Fatalf("Translate: %v", err)
	}
	if len(resp.GetClusters()) != 1 {
		t.Fatalf("got %d clusters, want 1", len(resp.GetClusters()))
	}
	c := &clusterv3.Cluster{}
	if err := resp.GetClusters()[0].GetResource().UnmarshalTo(c); err != nil {
		t.Fatal(err)
	}
	if err := c.ValidateAll(); err != nil {
		t.Errorf("Cluster: %v", err)
	}
	if got := c.GetConnectTimeout().AsDuration(); got != time.Nanosecond {
		t.Errorf("connect_timeout = %v, want 1ns", got)
	}
}
