package source

import (
	"fmt"
	"iter"
	"slices"
	"strings"
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
// addresses are spans of one string, and each endpoint is four bytes
// without a pointer (where its address starts, and whether it is not
// ready). A session holds millions of endpoints for as long as it lives,
// and the collector walks them on every translation: packed, they cost a
// sixth of the memory of an Endpoint each, and the garbage collector,
// which would scan a pointer per Endpoint on every cycle, scans two per
// slice. The zero value holds none. Endpoints never change once built.
type Endpoints struct {
	// addresses is every endpoint's address, one after another.
	addresses string
	// starts holds, per endpoint, where its address starts in addresses
	// with notReadyBit set when it is not ready; its address ends where
	// the next one starts, the last one's at the end of addresses.
	starts []uint32
	// longest is the length of the longest address.
	longest int
}

// PackedEndpointBytes is the memory Endpoints hold per endpoint besides
// its address.
const PackedEndpointBytes = 4

// notReadyBit marks an endpoint that is not ready in Endpoints.starts;
// the other bits are the offset of its address.
const notReadyBit = 1 << 31

// maxAddressBytes bounds the addresses of one Endpoints, so that every
// offset fits below notReadyBit: far more than any request may carry.
const maxAddressBytes = notReadyBit - 1

// Len is the number of endpoints.
func (e Endpoints) Len() int { return len(e.starts) }

// Address is endpoint i's address. It shares the memory of e: a caller
// that keeps it keeps every address of e.
func (e Endpoints) Address(i int) string {
	return e.addresses[e.starts[i]&^notReadyBit : e.end(i)]
}

// end is where endpoint i's address ends: where the next one starts.
func (e Endpoints) end(i int) uint32 {
	if i+1 < len(e.starts) {
		return e.starts[i+1] &^ notReadyBit
	}
	return uint32(len(e.addresses))
}

// NotReady reports whether endpoint i is not ready.
func (e Endpoints) NotReady(i int) bool { return e.starts[i]&notReadyBit != 0 }

// Ready yields the index and address of every ready endpoint from index
// from on, in order: the collector's walk, which reads each offset once.
func (e Endpoints) Ready(from int) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		for i := from; i < len(e.starts); i++ {
			start := e.starts[i]
			if start&notReadyBit != 0 {
				continue
			}
			if !yield(i, e.addresses[start:e.end(i)]) {
				return
			}
		}
	}
}

// At is endpoint i in plain form.
func (e Endpoints) At(i int) Endpoint {
	return Endpoint{Address: e.Address(i), NotReady: e.NotReady(i)}
}

// AddressBytes is the length of every address together: the memory e holds
// besides four bytes per endpoint.
func (e Endpoints) AddressBytes() int { return len(e.addresses) }

// LongestAddress is the length of the longest address, 0 when there are
// none: what lets a bound on the output skip a pass over the addresses.
func (e Endpoints) LongestAddress() int { return e.longest }

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
// order (go-cmp compares Endpoints with it).
func (e Endpoints) Equal(other Endpoints) bool {
	if e.Len() != other.Len() {
		return false
	}
	for i := range e.starts {
		if e.At(i) != other.At(i) {
			return false
		}
	}
	return true
}

// String lists the endpoints, for test failures; a not-ready one is
// marked so.
func (e Endpoints) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range e.starts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(e.Address(i))
		if e.NotReady(i) {
			b.WriteString("(not ready)")
		}
	}
	b.WriteByte(']')
	return b.String()
}

// MakeEndpoints packs list.
func MakeEndpoints(list ...Endpoint) Endpoints {
	var b EndpointsBuilder
	bytes := 0
	for _, ep := range list {
		bytes += len(ep.Address)
	}
	b.Grow(len(list), bytes)
	for _, ep := range list {
		b.Add(ep.Address, ep.NotReady)
	}
	return b.Endpoints()
}

// EndpointsBuilder packs endpoints one at a time, copying each address
// once; the zero value is ready to use. It panics past maxAddressBytes of
// addresses, which the decoders' limits keep far out of reach.
type EndpointsBuilder struct {
	addresses strings.Builder
	starts    []uint32
	longest   int
}

// Grow makes room for n more endpoints and bytes more of addresses.
func (b *EndpointsBuilder) Grow(n, bytes int) {
	b.addresses.Grow(bytes)
	b.starts = slices.Grow(b.starts, n)
}

// Add adds an endpoint at address.
func (b *EndpointsBuilder) Add(address string, notReady bool) {
	b.add(len(address), notReady)
	b.addresses.WriteString(address)
}

// AddBytes is Add for an address read off the wire.
func (b *EndpointsBuilder) AddBytes(address []byte, notReady bool) {
	b.add(len(address), notReady)
	b.addresses.Write(address)
}

func (b *EndpointsBuilder) add(n int, notReady bool) {
	start := b.addresses.Len()
	if start+n > maxAddressBytes {
		panic(fmt.Sprintf("source: more than %d bytes of endpoint addresses in one EndpointSlice", maxAddressBytes))
	}
	b.longest = max(b.longest, n)
	s := uint32(start)
	if notReady {
		s |= notReadyBit
	}
	b.starts = append(b.starts, s)
}

// Endpoints returns what was added and empties b.
func (b *EndpointsBuilder) Endpoints() Endpoints {
	e := Endpoints{addresses: b.addresses.String(), starts: b.starts, longest: b.longest}
	if len(e.starts) == 0 {
		e = Endpoints{}
	}
	*b = EndpointsBuilder{}
	return e
}
