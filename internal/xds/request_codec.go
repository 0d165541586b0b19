package xds

import (
	"unicode/utf8"
	"unsafe"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// ServerCodec is the grpc.ServerOption of the xDS server: gRPC's proto
// codec, but for State-of-the-World requests, whose resource names it
// decodes into one allocation (see decodeDiscoveryRequest).
func ServerCodec() grpc.ServerOption { return grpc.ForceServerCodecV2(requestCodec{}) }

// requestCodec decodes DiscoveryRequests with decodeDiscoveryRequest and
// everything else as gRPC's proto codec does.
type requestCodec struct{}

var protoCodec = encoding.GetCodecV2(grpcproto.Name)

func (requestCodec) Name() string { return grpcproto.Name }

func (requestCodec) Marshal(v any) (mem.BufferSlice, error) { return protoCodec.Marshal(v) }

func (requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	req, ok := v.(*discoveryv3.DiscoveryRequest)
	if !ok {
		return protoCodec.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return decodeDiscoveryRequest(buf.ReadOnlyData(), req)
}

// decodeDiscoveryRequest decodes b into req as proto.Unmarshal does, with
// one difference that no reader can tell: the resource names share one
// allocation. A State-of-the-World client restates every name it
// subscribes to in every request, each ACK included; decoded one string at
// a time, 10,000 names cost 10,000 allocations per ACK, which the garbage
// collector then spends about as long on as the decoding itself. Anything
// but the plain fields of an xDS request (unknown or repeated fields,
// resource locators, invalid UTF-8) goes to proto.Unmarshal, which decides
// it as always; the fuzz test holds the two equal.
//
// A name from it keeps the whole allocation alive: what keeps a name
// beyond the request copies it (see cache.subscribeLocked).
func decodeDiscoveryRequest(b []byte, req *discoveryv3.DiscoveryRequest) error {
	if !decodeDiscoveryRequestFast(b, req) {
		proto.Reset(req)
		return proto.Unmarshal(b, req)
	}
	return nil
}

// The field numbers of envoy.service.discovery.v3.DiscoveryRequest.
const (
	requestVersionInfo   = 1
	requestNode          = 2
	requestResourceNames = 3
	requestTypeURL       = 4
	requestResponseNonce = 5
	requestErrorDetail   = 6
)

// decodeDiscoveryRequestFast decodes b into req and reports whether it
// could; when it could not, req holds something partial.
func decodeDiscoveryRequestFast(b []byte, req *discoveryv3.DiscoveryRequest) bool {
	// First pass: check the shape and measure the names.
	var names, namesLen int
	var seen [requestErrorDetail + 1]bool
	for rest := b; len(rest) > 0; {
		num, typ, n := protowire.ConsumeTag(rest)
		if n < 0 || typ != protowire.BytesType || num < requestVersionInfo || num > requestErrorDetail {
			return false
		}
		rest = rest[n:]
		v, n := protowire.ConsumeBytes(rest)
		if n < 0 {
			return false
		}
		rest = rest[n:]
		if num == requestResourceNames {
			names++
			namesLen += len(v)
			continue
		}
		if seen[num] {
			return false // merged or overridden: proto.Unmarshal knows how
		}
		seen[num] = true
	}
	// Second pass: decode, the names into one buffer.
	*req = discoveryv3.DiscoveryRequest{}
	var all []byte
	if names > 0 {
		all = make([]byte, 0, namesLen)
		req.ResourceNames = make([]string, 0, names)
	}
	for rest := b; len(rest) > 0; {
		num, _, n := protowire.ConsumeTag(rest)
		rest = rest[n:]
		v, n := protowire.ConsumeBytes(rest)
		rest = rest[n:]
		switch num {
		case requestResourceNames:
			if !utf8.Valid(v) {
				return false
			}
			start := len(all)
			all = append(all, v...)
			req.ResourceNames = append(req.ResourceNames, unsafe.String(unsafe.SliceData(all[start:]), len(v)))
		case requestNode:
			req.Node = new(corev3.Node)
			if proto.Unmarshal(v, req.Node) != nil {
				return false
			}
		case requestErrorDetail:
			req.ErrorDetail = new(rpcstatus.Status)
			if proto.Unmarshal(v, req.ErrorDetail) != nil {
				return false
			}
		default:
			if !utf8.Valid(v) {
				return false
			}
			s := string(v)
			switch num {
			case requestVersionInfo:
				req.VersionInfo = s
			case requestTypeURL:
				req.TypeUrl = s
			case requestResponseNonce:
				req.ResponseNonce = s
			}
		}
	}
	return true
}
