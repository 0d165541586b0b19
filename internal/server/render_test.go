package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// TestRenderJSON renders the resources of a real translation and compares
// them, parsed, with JSON written by hand in Envoy's field names: enums by
// name, durations as strings, zero values left out, and the nested Any
// expanded with its "@type". Parsing first keeps the test independent of
// protojson's deliberately unstable whitespace.
func TestRenderJSON(t *testing.T) {
	resp, err := NewTranslationService().Translate(context.Background(), smallRequest())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetClusters()) != 1 || len(resp.GetClusterLoadAssignments()) != 1 {
		t.Fatalf("want one Cluster and one ClusterLoadAssignment, got %d and %d", len(resp.GetClusters()), len(resp.GetClusterLoadAssignments()))
	}
	const wantCluster = `{
		"name": "extension/ns/ext",
		"altStatName": "extension_ns_ext",
		"type": "EDS",
		"edsClusterConfig": {
			"serviceName": "extension/ns/ext",
			"edsConfig": {
				"resourceApiVersion": "V3",
				"apiConfigSource": {
					"apiType": "GRPC",
					"transportApiVersion": "V3",
					"grpcServices": [{"envoyGrpc": {"clusterName": "contour", "authority": "contour"}}]
				}
			}
		},
		"connectTimeout": "2s",
		"commonLbConfig": {"healthyPanicThreshold": {}, "localityWeightedLbConfig": {}},
		"typedExtensionProtocolOptions": {
			"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
				"@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
				"explicitHttpConfig": {"http2ProtocolOptions": {}}
			}
		}
	}`
	const wantCLA = `{
		"clusterName": "extension/ns/ext",
		"endpoints": [{
			"locality": {"subZone": "ns/svc/9000"},
			"lbEndpoints": [
				{"endpoint": {"address": {"socketAddress": {"address": "10.0.0.1", "portValue": 9001}}}},
				{"endpoint": {"address": {"socketAddress": {"address": "10.0.0.2", "portValue": 9001}}}}
			],
			"loadBalancingWeight": 1
		}]
	}`
	for _, tc := range []struct {
		kind string
		want string
		got  func() (string, []byte)
	}{
		{"Cluster", wantCluster, func() (string, []byte) {
			a := resp.GetClusters()[0].GetResource()
			return a.GetTypeUrl(), a.GetValue()
		}},
		{"ClusterLoadAssignment", wantCLA, func() (string, []byte) {
			a := resp.GetClusterLoadAssignments()[0].GetResource()
			return a.GetTypeUrl(), a.GetValue()
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			typeURL, body := tc.got()
			got, err := renderJSON(typeURL, body)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(parseJSON(t, tc.want), parseJSON(t, got)); diff != "" {
				t.Errorf("renderJSON(%s) mismatch (-want +got):\n%s\ngot: %s", typeURL, diff, got)
			}
			assertReadsBack(t, typeURL, body, got)
		})
	}
}

// assertReadsBack checks that the JSON decodes into a message equal to the
// one body holds, so nothing was lost or invented on the way.
func assertReadsBack(t *testing.T, typeURL string, body []byte, rendered string) {
	t.Helper()
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(typeURL)
	if err != nil {
		t.Fatal(err)
	}
	fromBytes, fromJSON := mt.New().Interface(), mt.New().Interface()
	if err := proto.Unmarshal(body, fromBytes); err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal([]byte(rendered), fromJSON); err != nil {
		t.Fatalf("the rendered JSON does not read back: %v", err)
	}
	if diff := cmp.Diff(fromBytes, fromJSON, protocmp.Transform()); diff != "" {
		t.Errorf("the rendered JSON reads back as a different message (-bytes +json):\n%s", diff)
	}
}

func parseJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return v
}

func TestRenderJSONErrors(t *testing.T) {
	for _, tc := range []struct {
		name, typeURL string
		body          []byte
		wantInError   string
	}{
		{
			name:        "type not linked",
			typeURL:     "type.googleapis.com/envoy.config.listener.v3.NoSuchListener",
			wantInError: "envoy.config.listener.v3.NoSuchListener",
		},
		{
			name:        "bytes that do not decode",
			typeURL:     "type.googleapis.com/envoy.config.cluster.v3.Cluster",
			body:        []byte{0x0a, 0x05, 'a'}, // field 1 claims 5 bytes, holds 1
			wantInError: "envoy.config.cluster.v3.Cluster",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := renderJSON(tc.typeURL, tc.body)
			if err == nil {
				t.Fatalf("renderJSON = %q, want an error", got)
			}
			if !strings.Contains(err.Error(), tc.wantInError) {
				t.Errorf("error %q does not name %q", err, tc.wantInError)
			}
		})
	}
}

// TestAddJSON checks that addJSON fills in every resource's JSON from its
// own Any and changes nothing else.
func TestAddJSON(t *testing.T) {
	resp, err := NewTranslationService().Translate(context.Background(), smallRequest())
	if err != nil {
		t.Fatal(err)
	}
	want := proto.Clone(resp).(*tributaryv1.TranslateResponse)
	for _, r := range append(want.GetClusters(), want.GetClusterLoadAssignments()...) {
		if r.Json, err = renderJSON(r.GetResource().GetTypeUrl(), r.GetResource().GetValue()); err != nil {
			t.Fatal(err)
		}
	}
	if err := addJSON(resp.GetClusters(), resp.GetClusterLoadAssignments()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, resp, protocmp.Transform()); diff != "" {
		t.Errorf("addJSON mismatch (-want +got):\n%s", diff)
	}
	for _, r := range append(resp.GetClusters(), resp.GetClusterLoadAssignments()...) {
		if r.GetJson() == "" {
			t.Errorf("%s %q has no JSON", r.GetResource().GetTypeUrl(), r.GetName())
		}
	}
}

func TestAddJSONFailsWithInternal(t *testing.T) {
	broken := &tributaryv1.Resource{Name: "extension/ns/broken", Resource: &anypb.Any{
		TypeUrl: "type.googleapis.com/envoy.config.cluster.v3.Cluster",
		Value:   []byte{0x0a, 0x05, 'a'},
	}}
	err := addJSON([]*tributaryv1.Resource{broken})
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "extension/ns/broken") {
		t.Errorf("addJSON = %v, want Internal naming the resource", err)
	}
}

// TestTranslateIncludeJSON: Translate fills Resource.json exactly when the
// request asks for it, with the rendering of the very bytes it sends, and
// leaves the bytes and versions as they would be without it.
func TestTranslateIncludeJSON(t *testing.T) {
	svc := NewTranslationService()
	plain, err := svc.Translate(context.Background(), smallRequest())
	if err != nil {
		t.Fatal(err)
	}
	req := smallRequest()
	req.IncludeJson = true
	withJSON, err := svc.Translate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(plain.GetClusters(), plain.GetClusterLoadAssignments()...) {
		if r.GetJson() != "" {
			t.Errorf("%s: json set without include_json", r.GetName())
		}
	}
	rendered := append(withJSON.GetClusters(), withJSON.GetClusterLoadAssignments()...)
	if len(rendered) != 2 {
		t.Fatalf("want 2 resources, got %d", len(rendered))
	}
	for _, r := range rendered {
		if r.GetJson() == "" {
			t.Fatalf("%s: json missing with include_json", r.GetName())
		}
		assertReadsBack(t, r.GetResource().GetTypeUrl(), r.GetResource().GetValue(), r.GetJson())
		r.Json = ""
	}
	if diff := cmp.Diff(plain, withJSON, protocmp.Transform()); diff != "" {
		t.Errorf("include_json changed more than Resource.json (-without +with):\n%s", diff)
	}
}
