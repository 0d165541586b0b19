package xds

import (
	"strconv"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// FuzzDecodeDiscoveryRequest holds decodeDiscoveryRequest to proto.Unmarshal:
// for any bytes, both fail, or both succeed with equal requests.
func FuzzDecodeDiscoveryRequest(f *testing.F) {
	meta, _ := structpb.NewStruct(map[string]any{"k": "v"})
	for _, req := range []*discoveryv3.DiscoveryRequest{
		{},
		{TypeUrl: "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment", ResourceNames: []string{"a", "", "extension/ns/name"}},
		{
			VersionInfo: "0123456789abcdef-7", ResponseNonce: "12",
			Node:          &corev3.Node{Id: "envoy-1", Cluster: "edge", Metadata: meta},
			TypeUrl:       "type.googleapis.com/envoy.config.cluster.v3.Cluster",
			ResourceNames: []string{"*"},
			ErrorDetail:   &rpcstatus.Status{Code: 3, Message: "rejected"},
		},
		{ResourceLocators: []*discoveryv3.ResourceLocator{{Name: "x"}}},
	} {
		b, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(protowire.AppendString(protowire.AppendTag(nil, requestResourceNames, protowire.BytesType), "\xff"))    // invalid UTF-8
	f.Add(protowire.AppendString(protowire.AppendTag(nil, requestTypeURL, protowire.BytesType), "\xc3"))          // invalid UTF-8
	f.Add(append(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 5), 0x1a, 0x01, 'a')) // an unknown field
	f.Add([]byte{0x12, 0x02, 0x0a, 0x00, 0x12, 0x02, 0x12, 0x00})                                                 // node twice: merged
	f.Add([]byte{0x0a, 0x01, 'a', 0x0a, 0x01, 'b'})                                                               // version twice: the last wins
	f.Add([]byte{0x1a, 0x05, 'a'})                                                                                // truncated
	f.Fuzz(func(t *testing.T, b []byte) {
		want := new(discoveryv3.DiscoveryRequest)
		wantErr := proto.Unmarshal(b, want)
		got := new(discoveryv3.DiscoveryRequest)
		err := decodeDiscoveryRequest(b, got)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("decodeDiscoveryRequest: %v; proto.Unmarshal: %v", err, wantErr)
		}
		if err == nil && !proto.Equal(got, want) {
			t.Fatalf("decodeDiscoveryRequest gave %v, proto.Unmarshal %v", got, want)
		}
	})
}

// BenchmarkDecodeDiscoveryRequest decodes a State-of-the-World ACK naming
// 10,000 ClusterLoadAssignments, as decodeDiscoveryRequest and as
// proto.Unmarshal.
func BenchmarkDecodeDiscoveryRequest(b *testing.B) {
	req := &discoveryv3.DiscoveryRequest{VersionInfo: "0123456789abcdef-7", ResponseNonce: "12", TypeUrl: "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"}
	for i := range 10000 {
		req.ResourceNames = append(req.ResourceNames, "extension/team-"+string(rune('a'+i%26))+"/ext-"+strconv.Itoa(i))
	}
	body, err := proto.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	for _, decoder := range []struct {
		name   string
		decode func([]byte, *discoveryv3.DiscoveryRequest) error
	}{
		{"fast", decodeDiscoveryRequest},
		{"proto", func(b []byte, r *discoveryv3.DiscoveryRequest) error { return proto.Unmarshal(b, r) }},
	} {
		b.Run(decoder.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := decoder.decode(body, new(discoveryv3.DiscoveryRequest)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
