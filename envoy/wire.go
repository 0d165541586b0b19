package envoy

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tributary-dev/tributary/model"
)

// Tags of the fields AppendClusterLoadAssignment writes, named
// message_field. The numbers come from the generated go-control-plane types
// (envoy/config/endpoint/v3, envoy/config/core/v3) and wrapperspb. proto.Marshal writes
// the fields of a message in field-number order, so this encoder does too.
var (
	tagCLAClusterName     = protowire.EncodeTag(1, protowire.BytesType)  // ClusterLoadAssignment.cluster_name
	tagCLAEndpoints       = protowire.EncodeTag(2, protowire.BytesType)  // ClusterLoadAssignment.endpoints
	tagLocalityLbLocality = protowire.EncodeTag(1, protowire.BytesType)  // LocalityLbEndpoints.locality
	tagLocalityLbEndpoint = protowire.EncodeTag(2, protowire.BytesType)  // LocalityLbEndpoints.lb_endpoints
	tagLocalityLbWeight   = protowire.EncodeTag(3, protowire.BytesType)  // LocalityLbEndpoints.load_balancing_weight
	tagLocalitySubZone    = protowire.EncodeTag(3, protowire.BytesType)  // core.Locality.sub_zone
	tagUInt32Value        = protowire.EncodeTag(1, protowire.VarintType) // UInt32Value.value
	tagLbEndpointEndpoint = protowire.EncodeTag(1, protowire.BytesType)  // LbEndpoint.endpoint (oneof)
	tagEndpointAddress    = protowire.EncodeTag(1, protowire.BytesType)  // Endpoint.address
	tagAddressSocket      = protowire.EncodeTag(1, protowire.BytesType)  // core.Address.socket_address (oneof)
	tagSocketAddress      = protowire.EncodeTag(2, protowire.BytesType)  // core.SocketAddress.address
	tagSocketPortValue    = protowire.EncodeTag(3, protowire.VarintType) // core.SocketAddress.port_value (oneof)
)

// AppendClusterLoadAssignment appends to dst the wire encoding of
// BuildClusterLoadAssignment(ec), byte for byte what proto.Marshal gives,
// without building the proto: that would cost five small allocations per
// endpoint, and translation handles millions of endpoints. It sizes the
// whole message first, grows dst at most once to exactly that, and then
// writes each nested length from arithmetic rather than by re-encoding.
//
// Single-byte tags are valid for every field here (numbers below 16), and
// every value written is one proto.Marshal would write: strings are emitted
// only when non-empty (proto3 implicit presence), while oneof members
// (endpoint, socket_address, port_value) and set message fields are always
// emitted, even when empty or zero.
func AppendClusterLoadAssignment(dst []byte, ec *model.ExtensionCluster) []byte {
	size := sizeString(ec.Name)
	for i := range ec.Localities {
		size += sizeMessage(sizeLocalityLbEndpoints(&ec.Localities[i]))
	}
	if free := cap(dst) - len(dst); free < size {
		grown := make([]byte, len(dst), len(dst)+size)
		copy(grown, dst)
		dst = grown
	}

	dst = appendString(dst, tagCLAClusterName, ec.Name)
	for i := range ec.Localities {
		loc := &ec.Localities[i]
		dst = protowire.AppendVarint(dst, tagCLAEndpoints)
		dst = protowire.AppendVarint(dst, uint64(sizeLocalityLbEndpoints(loc)))

		dst = protowire.AppendVarint(dst, tagLocalityLbLocality)
		dst = protowire.AppendVarint(dst, uint64(sizeString(loc.SubZone)))
		dst = appendString(dst, tagLocalitySubZone, loc.SubZone)

		for _, ep := range loc.Endpoints {
			socket := sizeSocketAddress(ep)
			address := sizeMessage(socket)
			endpoint := sizeMessage(address)
			dst = protowire.AppendVarint(dst, tagLocalityLbEndpoint)
			dst = protowire.AppendVarint(dst, uint64(sizeMessage(endpoint)))
			dst = protowire.AppendVarint(dst, tagLbEndpointEndpoint)
			dst = protowire.AppendVarint(dst, uint64(endpoint))
			dst = protowire.AppendVarint(dst, tagEndpointAddress)
			dst = protowire.AppendVarint(dst, uint64(address))
			dst = protowire.AppendVarint(dst, tagAddressSocket)
			dst = protowire.AppendVarint(dst, uint64(socket))
			dst = appendString(dst, tagSocketAddress, ep.Address)
			dst = protowire.AppendVarint(dst, tagSocketPortValue)
			dst = protowire.AppendVarint(dst, uint64(ep.Port))
		}

		if loc.Weight > 0 {
			dst = protowire.AppendVarint(dst, tagLocalityLbWeight)
			dst = protowire.AppendVarint(dst, uint64(1+protowire.SizeVarint(uint64(loc.Weight))))
			dst = protowire.AppendVarint(dst, tagUInt32Value)
			dst = protowire.AppendVarint(dst, uint64(loc.Weight))
		}
	}
	return dst
}

// sizeLocalityLbEndpoints is the encoded size of one LocalityLbEndpoints,
// without its own tag and length.
func sizeLocalityLbEndpoints(loc *model.Locality) int {
	size := sizeMessage(sizeString(loc.SubZone)) // locality is always set
	for _, ep := range loc.Endpoints {
		size += sizeMessage(sizeMessage(sizeMessage(sizeMessage(sizeSocketAddress(ep)))))
	}
	if loc.Weight > 0 {
		size += sizeMessage(1 + protowire.SizeVarint(uint64(loc.Weight)))
	}
	return size
}

// sizeSocketAddress is the encoded size of a SocketAddress holding ep.
func sizeSocketAddress(ep model.Endpoint) int {
	return sizeString(ep.Address) + 1 + protowire.SizeVarint(uint64(ep.Port))
}

// sizeMessage is the size of a length-delimited field (one-byte tag) whose
// payload is n bytes.
func sizeMessage(n int) int { return 1 + protowire.SizeVarint(uint64(n)) + n }

// sizeString is the size of a proto3 string field: nothing when empty.
func sizeString(s string) int {
	if s == "" {
		return 0
	}
	return sizeMessage(len(s))
}

// appendString writes a proto3 string field, omitting it when empty.
func appendString(dst []byte, tag uint64, s string) []byte {
	if s == "" {
		return dst
	}
	dst = protowire.AppendVarint(dst, tag)
	dst = protowire.AppendVarint(dst, uint64(len(s)))
	return append(dst, s...)
}
