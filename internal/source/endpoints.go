package source

import (
	"fmt"
	"iter"
	"slices"
)

// Endpoint is one entry of EndpointSlice.endpoints reduced to what
// translation reads, in the plain form an EndpointsBuilder takes and
// Endpoints.At gives. A decoder leaves out an endpoint with no address,
// which translation could not use.
type Endpoint struct {
	// Address is the endpoint's first address, spelled as the slice spells
	// it: Kubernetes calls an endpoint's addresses fungible and lets a
	// consumer use the first alone. Whether it is an IP is translation's to
	// say.
	Address string
	// NotReady says conditions.ready is false. Unset means ready, as
	// Kubernetes defines it; serving and terminating are not read.
	NotReady bool
}

// Endpoints are the endpoints of one EndpointSlice, packed: their
// addresses are spans of one string, a dotted quad as its four bytes (see
// Address), and each endpoint is four bytes without a pointer (where its
// address starts, whether it is a dotted quad, and whether it is not
// ready). A session holds millions of endpoints for as long as it lives,
// and the collector walks them on every translation: packed, they cost a
// sixth of the memory of an Endpoint each, and the garbage collector,
// which would scan a pointer per Endpoint on every cycle, scans two per
// slice. The zero value holds none. Endpoints never change once built.
type Endpoints struct {
	// addresses is every endpoint's address, one after another.
	addresses string
	// starts holds, per endpoint, where its address starts in addresses,
	// with quadBit set when it is a dotted quad's four bytes and
	// notReadyBit when the endpoint is not ready; its address ends where
	// the next one starts, the last one's at the end of addresses.
	starts []uint32
	// longest is the length of the longest address as spelled, and
	// spelled the length of them all.
	longest, spelled int
	// quadsOnly says every address is a dotted quad: endpoint i's is
	// then addresses[4i:4i+4].
	quadsOnly bool
}

// packedEndpointBytes is the memory Endpoints hold per endpoint besides
// its address.
const packedEndpointBytes = 4

// The flags of an endpoint in Endpoints.starts; the other bits are the
// offset of its address.
const (
	notReadyBit = 1 << 31
	quadBit     = 1 << 30
	flagBits    = notReadyBit | quadBit
)

// maxAddressBytes bounds the addresses of one Endpoints, so that every
// offset fits below the flags: far more than any request may carry.
const maxAddressBytes = quadBit - 1

// Len is the number of endpoints.
func (e Endpoints) Len() int { return len(e.starts) }

// Address is endpoint i's address. A spelled one shares the memory of e: a
// caller that keeps it keeps every address of e.
func (e Endpoints) Address(i int) Address { return e.address(i, e.starts[i]) }

// address is endpoint i's address, which starts as start (its offset
// word) says. A dotted quad is four bytes, so only a spelled address needs
// the next offset.
func (e Endpoints) address(i int, start uint32) Address {
	at := start &^ flagBits
	if start&quadBit != 0 {
		s := e.addresses[at : at+4]
		return QuadAddress(uint32(s[0])<<24 | uint32(s[1])<<16 | uint32(s[2])<<8 | uint32(s[3]))
	}
	return Address{text: e.addresses[at:e.end(i)]}
}

// end is where endpoint i's address ends: where the next one starts.
func (e Endpoints) end(i int) uint32 {
	if i+1 < len(e.starts) {
		return e.starts[i+1] &^ flagBits
	}
	return uint32(len(e.addresses))
}

// QuadsOnly reports whether every address is a dotted quad, which QuadAt
// then reads.
func (e Endpoints) QuadsOnly() bool { return e.quadsOnly }

// QuadAt is the dotted quad of endpoint i (its 32 bits, as
// ParseDottedQuad gives them) and whether the endpoint is ready, for
// Endpoints that are QuadsOnly: what the collector reads of nearly every
// endpoint, without the offset or an Address.
func (e Endpoints) QuadAt(i int) (v uint32, ready bool) {
	a := e.addresses[4*i : 4*i+4]
	return uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]), e.starts[i]&notReadyBit == 0
}

// NotReady reports whether endpoint i is not ready.
func (e Endpoints) NotReady(i int) bool { return e.starts[i]&notReadyBit != 0 }

// Ready yields the index and address of every ready endpoint from index
// from on, in order: the collector's walk, which reads each offset once.
func (e Endpoints) Ready(from int) iter.Seq2[int, Address] {
	return func(yield func(int, Address) bool) {
		for i := from; i < len(e.starts); i++ {
			start := e.starts[i]
			if start&notReadyBit != 0 {
				continue
			}
			if !yield(i, e.address(i, start)) {
				return
			}
		}
	}
}

// At is endpoint i in plain form.
func (e Endpoints) At(i int) Endpoint {
	return Endpoint{Address: e.Address(i).String(), NotReady: e.NotReady(i)}
}

// AddressBytes is the length of every address together, as spelled.
func (e Endpoints) AddressBytes() int { return e.spelled }

// LongestAddress is the length of the longest address as spelled, 0 when
// there are none: what lets a bound on the output skip a pass over the
// addresses.
func (e Endpoints) LongestAddress() int { return e.longest }

// MemoryBytes is the memory e holds: packedEndpointBytes per endpoint and
// its addresses as held.
func (e Endpoints) MemoryBytes() int { return packedEndpointBytes*len(e.starts) + len(e.addresses) }

// Unpack returns every endpoint in plain form, for a caller that edits
// them (and then builds new Endpoints with MakeEndpoints).
func (e Endpoints) Unpack() []Endpoint {
	if e.Len() == 0 {
		return nil
	}
	list := make([]Endpoint, e.Len())
	for i := range list {
		list[i] = e.At(i)
	}
	return list
}

// Equal reports whether e and other hold the same endpoints, in the same
// order (go-cmp compares Endpoints with it). An address has one way to be
// held, so the same endpoints are the same bytes.
func (e Endpoints) Equal(other Endpoints) bool {
	return e.addresses == other.addresses && slices.Equal(e.starts, other.starts)
}

// String lists the endpoints, for test failures; a not-ready one is
// marked so.
func (e Endpoints) String() string {
	var b []byte
	b = append(b, '[')
	for i := range e.starts {
		if i > 0 {
			b = append(b, ' ')
		}
		b = e.Address(i).AppendTo(b)
		if e.NotReady(i) {
			b = append(b, "(not ready)"...)
		}
	}
	return string(append(b, ']'))
}

// MakeEndpoints packs list.
func MakeEndpoints(list ...Endpoint) Endpoints {
	var b EndpointsBuilder
	for _, ep := range list {
		b.Add(ep.Address, ep.NotReady)
	}
	return b.Endpoints()
}

// EndpointsBuilder packs endpoints one at a time (a dotted quad as its
// four bytes); the zero value is ready to use.
// It panics past maxAddressBytes of addresses, which the decoders' limits
// keep far out of reach.
type EndpointsBuilder struct {
	addresses        []byte
	starts           []uint32
	longest, spelled int
	quads            int
}

// Add adds an endpoint at address.
func (b *EndpointsBuilder) Add(address string, notReady bool) { add(b, address, notReady) }

// AddBytes is Add for an address read off the wire.
func (b *EndpointsBuilder) AddBytes(address []byte, notReady bool) { add(b, address, notReady) }

// AddQuad is Add for an address already parsed: the dotted quad whose 32
// bits are v (as ParseDottedQuad gives them).
func (b *EndpointsBuilder) AddQuad(v uint32, notReady bool) {
	s := b.start(quadLen(v), notReady) | quadBit
	b.addresses = append(b.addresses, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	b.starts = append(b.starts, s)
	b.quads++
}

func add[T string | []byte](b *EndpointsBuilder, address T, notReady bool) {
	if v, ok := ParseDottedQuad(address); ok {
		b.AddQuad(v, notReady)
		return
	}
	s := b.start(len(address), notReady)
	b.addresses = append(b.addresses, address...)
	b.starts = append(b.starts, s)
}

// start counts the next endpoint's address of spelled bytes and returns
// its offset word.
func (b *EndpointsBuilder) start(spelled int, notReady bool) uint32 {
	start := len(b.addresses)
	if start+spelled > maxAddressBytes {
		panic(fmt.Sprintf("source: more than %d bytes of endpoint addresses in one EndpointSlice", maxAddressBytes))
	}
	b.longest = max(b.longest, spelled)
	b.spelled += spelled
	s := uint32(start)
	if notReady {
		s |= notReadyBit
	}
	return s
}

// Endpoints returns what was added and empties b. What it returns is
// copied out, so that it takes no more memory than it needs; b keeps its
// buffers for the next slice (a decoder packs many with one builder).
func (b *EndpointsBuilder) Endpoints() Endpoints {
	var e Endpoints
	if len(b.starts) > 0 {
		e = Endpoints{addresses: string(b.addresses), starts: slices.Clone(b.starts), longest: b.longest, spelled: b.spelled,
			quadsOnly: b.quads == len(b.starts)}
	}
	*b = EndpointsBuilder{addresses: b.addresses[:0], starts: b.starts[:0]}
	return e
}
