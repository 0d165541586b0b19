package envoy

import (
	"encoding/binary"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tributary-dev/tributary/internal/model"
)

// Tags of the fields AppendClusterLoadAssignment writes, named
// message_field. The numbers come from the generated go-control-plane types
// (envoy/config/endpoint/v3, envoy/config/core/v3) and wrapperspb; every
// one is below 16, so each tag is a single byte. proto.Marshal writes the
// fields of a message in field-number order, so this encoder does too.
const (
	tagCLAClusterName     = 1<<3 | byte(protowire.BytesType)  // ClusterLoadAssignment.cluster_name
	tagCLAEndpoints       = 2<<3 | byte(protowire.BytesType)  // ClusterLoadAssignment.endpoints
	tagLocalityLbLocality = 1<<3 | byte(protowire.BytesType)  // LocalityLbEndpoints.locality
	tagLocalityLbEndpoint = 2<<3 | byte(protowire.BytesType)  // LocalityLbEndpoints.lb_endpoints
	tagLocalityLbWeight   = 3<<3 | byte(protowire.BytesType)  // LocalityLbEndpoints.load_balancing_weight
	tagLocalitySubZone    = 3<<3 | byte(protowire.BytesType)  // core.Locality.sub_zone
	tagUInt32Value        = 1<<3 | byte(protowire.VarintType) // UInt32Value.value
	tagLbEndpointEndpoint = 1<<3 | byte(protowire.BytesType)  // LbEndpoint.endpoint (oneof)
	tagEndpointAddress    = 1<<3 | byte(protowire.BytesType)  // Endpoint.address
	tagAddressSocket      = 1<<3 | byte(protowire.BytesType)  // core.Address.socket_address (oneof)
	tagSocketAddress      = 2<<3 | byte(protowire.BytesType)  // core.SocketAddress.address
	tagSocketPortValue    = 3<<3 | byte(protowire.VarintType) // core.SocketAddress.port_value (oneof)
	tagEndpointHealth     = 2<<3 | byte(protowire.BytesType)  // Endpoint.health_check_config
	tagHealthPortValue    = 1<<3 | byte(protowire.VarintType) // Endpoint.HealthCheckConfig.port_value
)

// AppendClusterLoadAssignment appends to dst the wire encoding of
// BuildClusterLoadAssignment(ec), byte for byte what proto.Marshal gives,
// without building the proto: that would cost seven small allocations per
// endpoint, and translation handles millions of endpoints.
//
// It makes one pass over the endpoints. A locality's length comes before
// its endpoints, so the bytes for it are set aside from an estimate of
// the length (see estimateLocalityLbEndpoints) and the length written into
// them once known; only when the estimate was off by a whole varint byte
// do the locality's bytes move, which for IP addresses happens only near
// 128 bytes and 16 KiB. Sizing every endpoint first, to write each length
// where it belongs, cost a pass as long as a fifth of the writing.
//
// Every value written is one proto.Marshal would write: strings only when
// non-empty (proto3 implicit presence), while oneof members (endpoint,
// socket_address, port_value) and set message fields are always written,
// even when empty or zero.
//
// A health check port is the same on every endpoint, so its
// health_check_config is encoded once, into a few bytes on the stack, and
// copied after each endpoint's address.
//
// It grows dst as append does, by more than it writes when the estimate
// says so; a caller that keeps the result copies it out (a copy costs no
// more than the zeroing a buffer of the exact size would). Unlike append,
// it may change bytes of dst's spare capacity past the ones it appends
// (see appendLbEndpoints).
func AppendClusterLoadAssignment(dst []byte, ec *model.ExtensionCluster) []byte {
	var healthBuf [6]byte
	health := appendHealthCheckConfig(healthBuf[:0], healthCheckPort(ec))

	dst = appendString(dst, tagCLAClusterName, ec.Name)
	for i := range ec.Localities {
		loc := &ec.Localities[i]
		estimate := estimateLocalityLbEndpoints(loc, len(health))
		lengthBytes := protowire.SizeVarint(uint64(estimate))
		// The endpoints' wide stores need quadLbEndpointRoom spare bytes;
		// the estimate bounds what dotted quads take, so they keep it to
		// the end.
		dst = slices.Grow(dst, 1+lengthBytes+estimate+quadLbEndpointRoom)
		dst = append(dst, tagCLAEndpoints)
		at := len(dst)
		dst = dst[:at+lengthBytes]

		dst = append(dst, tagLocalityLbLocality)
		dst = appendVarint(dst, uint64(sizeString(loc.SubZone)))
		dst = appendString(dst, tagLocalitySubZone, loc.SubZone)

		dst = appendLbEndpoints(dst, loc.Endpoints, health)

		if loc.Weight > 0 {
			dst = append(dst, tagLocalityLbWeight)
			dst = appendVarint(dst, uint64(1+protowire.SizeVarint(uint64(loc.Weight))))
			dst = append(dst, tagUInt32Value)
			dst = appendVarint(dst, uint64(loc.Weight))
		}
		dst = putLength(dst, at, lengthBytes)
	}
	return dst
}

// putLength writes, at dst[at:], the length of what follows the
// reservedBytes set aside there for it, moving what follows when the
// length's varint takes another number of bytes.
func putLength(dst []byte, at, reservedBytes int) []byte {
	n := len(dst) - at - reservedBytes
	lengthBytes := protowire.SizeVarint(uint64(n))
	if lengthBytes != reservedBytes {
		end := at + lengthBytes + n
		if end > len(dst) {
			dst = append(dst, make([]byte, end-len(dst))...)
		}
		copy(dst[at+lengthBytes:end], dst[at+reservedBytes:at+reservedBytes+n])
		dst = dst[:end]
	}
	protowire.AppendVarint(dst[at:at], uint64(n))
	return dst
}

// estimateLocalityLbEndpoints is an estimate of the encoded size of one
// LocalityLbEndpoints, without its own tag and length, made without reading
// its endpoints: every endpoint counted as the longest dotted quad on a
// three-byte port with health bytes of health_check_config. It is at least
// the size when every address is a dotted quad.
func estimateLocalityLbEndpoints(loc *model.Locality, health int) int {
	size := sizeMessage(sizeString(loc.SubZone)) + len(loc.Endpoints)*maxQuadLbEndpoint(health)
	if loc.Weight > 0 {
		size += sizeMessage(1 + protowire.SizeVarint(uint64(loc.Weight)))
	}
	return size
}

// maxQuadLbEndpoint is the largest lb_endpoints entry of a dotted quad on
// a valid port (at most 65535, three varint bytes), with health bytes of
// health_check_config.
func maxQuadLbEndpoint(health int) int { return quadHeaderBytes + 15 + 1 + 3 + health }

// appendHealthCheckConfig writes Endpoint.health_check_config with
// port_value port, tag and length included, or nothing for port 0. A port
// is at most 65535, so it takes at most six bytes.
func appendHealthCheckConfig(dst []byte, port uint32) []byte {
	if port == 0 {
		return dst
	}
	dst = append(dst, tagEndpointHealth, byte(1+protowire.SizeVarint(uint64(port))), tagHealthPortValue)
	return protowire.AppendVarint(dst, uint64(port))
}

// appendLbEndpoints writes one lb_endpoints entry for each of eps, as
// appendLbEndpoint does. Nearly every endpoint is a dotted quad on the same
// port as the one before it, and its entry is then a run of fixed bytes
// with only the address's length and spelling varying: ten header bytes
// (four tag and length pairs, then the address's tag and length), the
// address, and a tail of the port and health_check_config. Written with a
// few wide stores into dst's spare capacity, spelled first so that its
// length need not be worked out, it costs a third of the general path,
// which is kept for everything else and for the last entries, where the
// spare capacity is too short for the wide stores.
func appendLbEndpoints(dst []byte, eps []model.Endpoint, health []byte) []byte {
	var layout quadLbEndpoint
	for _, ep := range eps {
		if _, quad := ep.Address.Quad(); !quad || cap(dst)-len(dst) < quadLbEndpointRoom {
			dst = appendLbEndpoint(dst, ep, health)
			continue
		}
		if !layout.made || layout.port != ep.Port {
			layout = makeQuadLbEndpoint(ep.Port, health)
		}
		l := len(dst)
		// The address goes after the header, whose lengths follow from it.
		spelled := ep.Address.AppendTo(dst[:l+quadHeaderBytes])
		n := len(spelled) - l - quadHeaderBytes
		header := spelled[l : l+quadHeaderBytes]
		binary.LittleEndian.PutUint64(header, layout.header+uint64(n)*quadHeaderLengths)
		header[8], header[9] = tagSocketAddress, byte(n)
		tail := spelled[len(spelled) : len(spelled)+16]
		binary.LittleEndian.PutUint64(tail, layout.tail[0])
		binary.LittleEndian.PutUint64(tail[8:], layout.tail[1])
		dst = spelled[:len(spelled)+layout.tailBytes]
	}
	return dst
}

// quadHeaderBytes is the length of a dotted quad's lb_endpoints entry up
// to its address: LbEndpoint, Endpoint, Address and SocketAddress tags,
// each with a one-byte length, then the address's tag and length.
const quadHeaderBytes = 10

// quadLbEndpointRoom is the spare capacity appendLbEndpoints' wide stores
// need: the header, the longest dotted quad (15 bytes), and the tail's two
// 8-byte stores after it. AppendTo's own stores, 16 bytes from the
// address's start, fall within that.
const quadLbEndpointRoom = quadHeaderBytes + 15 + 16

// quadHeaderLengths adds an address's length to each of the four lengths
// of a quad header's first eight bytes, held little-endian: the address is
// inside all four messages, and none of them reaches 128 bytes.
const quadHeaderLengths = 1<<8 | 1<<24 | 1<<40 | 1<<56

// quadLbEndpoint is the layout of a dotted quad's lb_endpoints entry on
// one port with one health_check_config: the first eight header bytes for
// an address of length zero, and the bytes after the address.
type quadLbEndpoint struct {
	made      bool
	port      uint32
	header    uint64
	tail      [2]uint64
	tailBytes int
}

// makeQuadLbEndpoint lays out an entry on port with health, the encoded
// health_check_config (see appendHealthCheckConfig): with the port's tag
// and varint, at most 1+5+8 bytes, inside the tail's 16.
func makeQuadLbEndpoint(port uint32, health []byte) quadLbEndpoint {
	var tail [16]byte
	t := append(protowire.AppendVarint(append(tail[:0], tagSocketPortValue), uint64(port)), health...)
	// SocketAddress: the address's tag and length, then the port.
	socket := 2 + len(t) - len(health)
	h := len(health)
	header := [8]byte{
		tagLocalityLbEndpoint, byte(socket + 6 + h),
		tagLbEndpointEndpoint, byte(socket + 4 + h),
		tagEndpointAddress, byte(socket + 2),
		tagAddressSocket, byte(socket),
	}
	return quadLbEndpoint{
		made:      true,
		port:      port,
		header:    binary.LittleEndian.Uint64(header[:]),
		tail:      [2]uint64{binary.LittleEndian.Uint64(tail[:8]), binary.LittleEndian.Uint64(tail[8:])},
		tailBytes: len(t),
	}
}

// appendLbEndpoint writes one lb_endpoints entry:
// LbEndpoint{endpoint: {address: {socket_address: {address, port_value}},
// health_check_config}}, where health is the encoded health_check_config
// field, empty without one.
func appendLbEndpoint(dst []byte, ep model.Endpoint, health []byte) []byte {
	address := ep.Address.Len()
	socket := sizeStringOf(address) + 1 + protowire.SizeVarint(uint64(ep.Port))
	// Each enclosing message adds a tag and a length byte while lengths stay
	// below 128, which they always do for IP literals: then the four headers
	// are one fixed run of bytes.
	if h := len(health); socket+6+h < 0x80 {
		dst = append(dst,
			tagLocalityLbEndpoint, byte(socket+6+h),
			tagLbEndpointEndpoint, byte(socket+4+h),
			tagEndpointAddress, byte(socket+2),
			tagAddressSocket, byte(socket))
	} else {
		address := sizeMessage(socket)
		endpoint := sizeMessage(address) + h
		dst = append(dst, tagLocalityLbEndpoint)
		dst = appendVarint(dst, uint64(sizeMessage(endpoint)))
		dst = append(dst, tagLbEndpointEndpoint)
		dst = appendVarint(dst, uint64(endpoint))
		dst = append(dst, tagEndpointAddress)
		dst = appendVarint(dst, uint64(address))
		dst = append(dst, tagAddressSocket)
		dst = appendVarint(dst, uint64(socket))
	}
	if address > 0 { // a proto3 string field, omitted when empty
		dst = append(dst, tagSocketAddress)
		dst = appendVarint(dst, uint64(address))
		dst = ep.Address.AppendTo(dst)
	}
	// Ports of 128 and up take two or three bytes; spelled out here because
	// protowire.AppendVarint is not inlined, and nearly every port needs it.
	switch p := ep.Port; {
	case p < 1<<7:
		dst = append(dst, tagSocketPortValue, byte(p))
	case p < 1<<14:
		dst = append(dst, tagSocketPortValue, byte(p)|0x80, byte(p>>7))
	case p < 1<<21:
		dst = append(dst, tagSocketPortValue, byte(p)|0x80, byte(p>>7)|0x80, byte(p>>14))
	default:
		dst = protowire.AppendVarint(append(dst, tagSocketPortValue), uint64(p))
	}
	return append(dst, health...)
}

// appendVarint is protowire.AppendVarint with the one-byte case inlined.
func appendVarint(dst []byte, v uint64) []byte {
	if v < 0x80 {
		return append(dst, byte(v))
	}
	return protowire.AppendVarint(dst, v)
}

// sizeMessage is the size of a length-delimited field (one-byte tag) whose
// payload is n bytes.
func sizeMessage(n int) int { return 1 + protowire.SizeVarint(uint64(n)) + n }

// sizeString is the size of a proto3 string field: nothing when empty.
func sizeString(s string) int { return sizeStringOf(len(s)) }

// sizeStringOf is sizeString for a string of n bytes.
func sizeStringOf(n int) int {
	if n == 0 {
		return 0
	}
	return sizeMessage(n)
}

// appendString writes a proto3 string field, omitting it when empty.
func appendString(dst []byte, tag byte, s string) []byte {
	if s == "" {
		return dst
	}
	dst = append(dst, tag)
	dst = appendVarint(dst, uint64(len(s)))
	return append(dst, s...)
}
