package server

import (
	"iter"
	"slices"
	"unicode/utf8"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/source"
)

// The requests that carry EndpointSlices (a Translate request, a Sync
// batch) are mostly endpoints: two million of them at N=10000 × M=100.
// protobuf-go gives each endpoint its own Endpoint, EndpointConditions,
// three bools, an address list and an address string, seven objects the
// garbage collector then has to scan, and decoding them was the largest
// part of a Translate call's CPU time, although the decoder only ever
// reads an endpoint's first address and readiness. The fast path below
// reads such a request off the wire itself: every other field becomes the
// message protobuf would make, and each slice's endpoints become the
// source.Endpoints the decoder would make of them, one array and one
// string of first addresses per slice, with no message in between (see
// wireTranslateRequest). Whatever is not the plain well-formed encoding of
// these messages (an unknown field, a singular field seen twice, which
// protobuf merges, a string that is not UTF-8, a bool other than 0 or 1, a
// truncated field), or would be reported by the decoder (too many
// addresses, one too long), makes it decline, and the request is decoded
// by protobuf as before, with the same result or the same error.
// FuzzDecodeRequestWire holds it to proto.Unmarshal followed by the
// decoder.

// unmarshalRequest decodes data into v as gRPC's proto codec does, or,
// when v is a wireTranslateRequest or a wireSyncRequest and data is
// plainly encoded, through the fast path.
func unmarshalRequest(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *wireTranslateRequest:
		if m.slices = decodeDirect(data, func(d *wireDecoder, b []byte) bool { return d.translateRequest(b, &m.request) }); m.slices != nil {
			return nil
		}
		return protoCodecV2.Unmarshal(data, &m.request)
	case *wireSyncRequest:
		if m.slices = decodeDirect(data, func(d *wireDecoder, b []byte) bool { return d.syncRequest(b, &m.request) }); m.slices != nil {
			return nil
		}
		return protoCodecV2.Unmarshal(data, &m.request)
	}
	return protoCodecV2.Unmarshal(data, v)
}

// wireTranslateRequest is what the server decodes a Translate call's
// request into (see translateMethod): the request and, when the fast path
// read it, what it kept of each EndpointSlice outside the slice's message
// (sliceOffWire), in the order of the request's slices. Endpoint messages,
// two million of them at N=10000 × M=100, were most of a call's memory and
// of the garbage collector's work, and the decoder only ever read their
// first address and readiness.
//
// slices is nil when protobuf decoded the request: its slices' messages
// then hold everything, and the decoder reads them as it reads a request
// made in process.
type wireTranslateRequest struct {
	request tributaryv1.TranslateRequest
	slices  []*sliceOffWire
}

// sliceOffWire is what the fast path keeps of one EndpointSlice outside
// its message, which then holds no endpoints and no labels:
//   - its endpoints as the decoder would make them (source.Endpoints, one
//     array and one string of addresses);
//   - the value of its service-name label, the one label translation
//     reads ("" when it has none). Its labels are checked as they are
//     read, a request with one the decoder would report being left to
//     protobuf; kept, they were a map per slice, an eighth of what
//     decoding a request allocated.
type sliceOffWire struct {
	endpoints source.Endpoints
	service   string
}

// wireSyncRequest is what a Sync stream's messages are received into
// (see receiveOne): wireTranslateRequest's counterpart for a batch, whose
// upserted slices' endpoints come straight from the wire.
type wireSyncRequest struct {
	request tributaryv1.SyncRequest
	slices  []*sliceOffWire
}

// decodeDirect reads data with read, a wireDecoder's reader of the whole
// message, and returns what it kept of the slices read, in order: not nil
// when the fast path took data, though it may hold no slice, and nil when
// it declined, whatever read made being left to be replaced by protobuf's
// decoding (which resets the message first).
func decodeDirect(data mem.BufferSlice, read func(d *wireDecoder, b []byte) bool) []*sliceOffWire {
	// The decoded request holds no reference to buf (every string is a
	// copy), so buf can go back to gRPC's pool.
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	var d wireDecoder
	if !read(&d, buf.ReadOnlyData()) {
		return nil
	}
	if d.slices == nil {
		return []*sliceOffWire{}
	}
	return d.slices
}

// wireDecoder is the fast path's scratch space for one request: the
// endpoints of the slice being read, and what it made of each slice's.
type wireDecoder struct {
	// slices is what was kept of each slice read, in order. Its endpoints
	// are as the decoder makes them from messages: an endpoint without
	// addresses is dropped, and of the others only the first address and
	// whether the endpoint is not ready are kept, packed. The fast path
	// declines what the decoder would report (too many addresses, one too
	// long, a label that is not valid), so that protobuf and the decoder
	// report it as before.
	// Each comes from messages.kept: a list of values, grown as slices
	// are read, would copy them all at each growth.
	slices []*sliceOffWire
	// packed packs the endpoints of the slice being read as each is read,
	// its buffers reused from one slice to the next.
	packed source.EndpointsBuilder
	// interned holds one copy of each short string the request's slices
	// repeat (see intern).
	interned map[string]*string
	// messages are where the messages the fast path reads come from.
	messages messageSlabs
}

// messageSlabs hands out the messages of one request's EndpointSlices and
// Services from arrays of them, rather than one allocation each: at
// N=10000 a request is 50,000 objects of about ten messages each, and
// their allocation and the garbage collection after it were most of its
// decoding. The messages of a request live and die together (nothing is
// kept of them once the objects are checked into the pipeline's input,
// which copies what it keeps), so an array outlives none of its messages
// by more than the request.
type messageSlabs struct {
	objects        slab[tributaryv1.KubernetesObject]
	extensionKinds slab[tributaryv1.KubernetesObject_ExtensionService]
	extensions     slab[tributaryv1.ExtensionService]
	extensionSpecs slab[tributaryv1.ExtensionServiceSpec]
	targets        slab[tributaryv1.ExtensionServiceTarget]
	sliceKinds     slab[tributaryv1.KubernetesObject_EndpointSlice]
	serviceKinds   slab[tributaryv1.KubernetesObject_Service]
	slices         slab[tributaryv1.EndpointSlice]
	services       slab[tributaryv1.Service]
	metas          slab[tributaryv1.ObjectMeta]
	serviceSpecs   slab[tributaryv1.ServiceSpec]
	servicePorts   slab[tributaryv1.ServicePort]
	endpointPorts  slab[tributaryv1.EndpointPort]
	// kept is not a message but lives as one: the decoder copies what it
	// keeps of a slice (see sliceOffWire) into the pipeline's input.
	kept slab[sliceOffWire]
}

// slab hands out zero values of T from arrays whose sizes start at one and
// double up to maxSlab, so that a Sync batch of one object allocates what
// it did before, and a request of thousands one array per maxSlab values;
// what is left spare is fewer values than were handed out, and fewer than
// maxSlab.
type slab[T any] struct {
	free []T
	size int
}

// maxSlab is the size of the largest array a slab allocates.
const maxSlab = 512

// next returns a new zero T.
func (s *slab[T]) next() *T {
	if len(s.free) == 0 {
		s.size = min(max(2*s.size, 1), maxSlab)
		s.free = make([]T, s.size)
	}
	v := &s.free[0]
	s.free = s.free[1:]
	return v
}

// Interning bounds: a request names few namespaces, label keys, port
// names and protocols, and repeats them in every slice; past
// maxInterned distinct strings, or for one longer than maxInternedBytes,
// each string is a copy of its own, so hostile input cannot make the
// table hold more than about 100 KiB.
const (
	maxInterned      = 1024
	maxInternedBytes = 63
)

// internPointer returns a pointer to a string equal to b: the same
// pointer for every equal b while the table has room. The slices of a
// request of 20,000 share a namespace, their label keys and their ports'
// names and protocols; copied each time, those were a fifth of its
// allocations. Nothing writes through the pointers (decoded objects never
// change).
func (d *wireDecoder) internPointer(b []byte) *string {
	if p, ok := d.interned[string(b)]; ok {
		return p
	}
	if !d.hasRoom(len(b)) {
		return new(string(b))
	}
	return d.remember(string(b))
}

// intern is internPointer for a string field: a string the table has no
// room for is one copy, without a pointer to it.
func (d *wireDecoder) intern(b []byte) string {
	if p, ok := d.interned[string(b)]; ok {
		return *p
	}
	if !d.hasRoom(len(b)) {
		return string(b)
	}
	return *d.remember(string(b))
}

// hasRoom reports whether the table takes a string of n bytes.
func (d *wireDecoder) hasRoom(n int) bool {
	return n <= maxInternedBytes && len(d.interned) < maxInterned
}

// remember adds s to the table, which has room for it, and returns the
// pointer every later equal string gets.
func (d *wireDecoder) remember(s string) *string {
	if d.interned == nil {
		d.interned = make(map[string]*string)
	}
	p := &s
	d.interned[s] = p
	return p
}

func (d *wireDecoder) translateRequest(b []byte, m *tributaryv1.TranslateRequest) bool {
	var (
		settings                 *tributaryv1.Settings
		objects                  []*tributaryv1.KubernetesObject
		includeJSON, seenInclude bool
	)
	for f, ok := range fields(b) {
		if !ok {
			return false
		}
		switch {
		case f.is(1, protowire.BytesType) && settings == nil:
			if settings = unmarshalNew[tributaryv1.Settings](f.bytes); settings == nil {
				return false
			}
		case f.is(2, protowire.BytesType):
			o := d.object(f.bytes)
			if o == nil {
				return false
			}
			objects = appendDoubling(objects, o)
		case f.is(3, protowire.VarintType) && !seenInclude:
			if includeJSON, ok = wireBool(f.varint); !ok {
				return false
			}
			seenInclude = true
		default:
			return false
		}
	}
	proto.Reset(m)
	m.Settings, m.Objects, m.IncludeJson = settings, objects, includeJSON
	return true
}

// syncRequest reads a SyncRequest that is a batch; a session's start,
// one message per session, is left to protobuf.
func (d *wireDecoder) syncRequest(b []byte, m *tributaryv1.SyncRequest) bool {
	var batch *tributaryv1.SyncBatch
	for f, ok := range fields(b) {
		if !ok || !f.is(2, protowire.BytesType) || batch != nil {
			return false
		}
		if batch = d.syncBatch(f.bytes); batch == nil {
			return false
		}
	}
	if batch == nil {
		return false
	}
	proto.Reset(m)
	m.Message = &tributaryv1.SyncRequest_Batch{Batch: batch}
	return true
}

func (d *wireDecoder) syncBatch(b []byte) *tributaryv1.SyncBatch {
	batch := new(tributaryv1.SyncBatch)
	seenID := false
	for f, ok := range fields(b) {
		if !ok {
			return nil
		}
		switch {
		case f.is(1, protowire.VarintType) && !seenID:
			batch.Id, seenID = f.varint, true
		case f.is(2, protowire.BytesType):
			o := d.object(f.bytes)
			if o == nil {
				return nil
			}
			batch.Upserts = appendDoubling(batch.Upserts, o)
		case f.is(3, protowire.BytesType):
			ref := unmarshalNew[tributaryv1.ObjectReference](f.bytes)
			if ref == nil {
				return nil
			}
			batch.Deletes = append(batch.Deletes, ref)
		default:
			return nil
		}
	}
	return batch
}

// appendDoubling is append for the lists a request fills one object at a
// time (its objects, what was kept of its slices), doubling a full list's
// room. append doubles a list only up to 256 elements and then grows it by
// about a quarter at a time, so a request's 50,000 objects cost some five
// times their list's final size (9 MB of the 35 a request of 10000
// ExtensionServices × 10 endpoints took to decode). Counting the objects
// first would size each list once, but a request found malformed at its
// first object would have paid for all of them; doubled, a list holds
// about twice what was read at most.
func appendDoubling[T any](list []T, v T) []T {
	if len(list) == cap(list) && len(list) >= 256 {
		list = slices.Grow(list, len(list))
	}
	return append(list, v)
}

// object reads a KubernetesObject: an EndpointSlice or a Service by hand,
// an ExtensionService by hand when it has the plain shape
// (extensionService), any other kind through protobuf.
func (d *wireDecoder) object(b []byte) *tributaryv1.KubernetesObject {
	o := d.messages.objects.next()
	for f, ok := range fields(b) {
		// A second member of the oneof replaces the first, and a second
		// instance of the same member merges into it: both left to
		// protobuf.
		if !ok || f.typ != protowire.BytesType || o.Kind != nil {
			return nil
		}
		switch f.num {
		case 1:
			es := d.extensionService(f.bytes)
			if es == nil {
				es = unmarshalNew[tributaryv1.ExtensionService](f.bytes)
			}
			if es != nil {
				kind := d.messages.extensionKinds.next()
				kind.ExtensionService = es
				o.Kind = kind
			}
		case 2:
			if svc := d.service(f.bytes); svc != nil {
				kind := d.messages.serviceKinds.next()
				kind.Service = svc
				o.Kind = kind
			}
		case 3:
			if slice := d.endpointSlice(f.bytes); slice != nil {
				kind := d.messages.sliceKinds.next()
				kind.EndpointSlice = slice
				o.Kind = kind
			}
		case 4:
			if secret := unmarshalNew[tributaryv1.Secret](f.bytes); secret != nil {
				o.Kind = &tributaryv1.KubernetesObject_Secret{Secret: secret}
			}
		case 5:
			if d := unmarshalNew[tributaryv1.TLSCertificateDelegation](f.bytes); d != nil {
				o.Kind = &tributaryv1.KubernetesObject_TlsCertificateDelegation{TlsCertificateDelegation: d}
			}
		}
		if o.Kind == nil {
			return nil
		}
	}
	return o
}

// endpointOnWire is one endpoint of a slice as read from the wire: how
// many addresses it has, the first of them (pointing into the wire's
// bytes), and its conditions.
type endpointOnWire struct {
	addresses  int
	first      []byte
	conditions conditionsOnWire
}

// conditionsOnWire is an EndpointConditions as read from the wire: whether
// it is present, and each of ready, serving and terminating, in that
// order, whether it is set and its value.
type conditionsOnWire struct {
	present bool
	set     [3]bool
	value   [3]bool
}

func (d *wireDecoder) endpointSlice(b []byte) *tributaryv1.EndpointSlice {
	slice := d.messages.slices.next()
	kept := d.messages.kept.next()
	seenAddressType := false
	for len(b) > 0 {
		// An endpoint under 128 bytes, nearly every field of a slice: its
		// tag and one-byte length are read at once.
		if len(b) >= 2 && b[0] == tagSliceEndpoint && b[1] < 0x80 && 2+int(b[1]) <= len(b) {
			end := 2 + int(b[1])
			if !d.endpoint(b[2:end]) {
				return nil
			}
			b = b[end:]
			continue
		}
		f, rest, ok := nextField(b)
		if !ok || f.typ != protowire.BytesType {
			return nil
		}
		b = rest
		switch {
		case f.num == 1 && slice.Metadata == nil:
			if slice.Metadata = d.objectMeta(f.bytes, kept); slice.Metadata == nil {
				return nil
			}
		case f.num == 2 && !seenAddressType:
			if !utf8.Valid(f.bytes) {
				return nil
			}
			slice.AddressType, seenAddressType = d.intern(f.bytes), true
		case f.num == 3:
			if !d.endpoint(f.bytes) {
				return nil
			}
		case f.num == 4:
			port := d.endpointPort(f.bytes)
			if port == nil {
				return nil
			}
			slice.Ports = append(slice.Ports, port)
		default:
			return nil
		}
	}
	kept.endpoints = d.packed.Endpoints()
	d.slices = appendDoubling(d.slices, kept)
	return slice
}

// objectMeta reads an ObjectMeta, or returns nil to decline: a slice's
// metadata holds a label map, which protobuf reads through reflection, and
// at tens of thousands of slices that was a fair part of a request. Its
// namespace and labels are interned; its name is the slice's own. A
// slice's labels are checked and not kept, but for the service-name
// label's value, which goes in kept (see sliceOffWire); kept is nil for
// any other kind.
func (d *wireDecoder) objectMeta(b []byte, kept *sliceOffWire) *tributaryv1.ObjectMeta {
	m := d.messages.metas.next()
	var seen [4]bool // namespace, name, generation: a second one merges
	for f, ok := range fields(b) {
		if !ok {
			return nil
		}
		switch {
		case f.num >= 1 && f.num <= 3 && seen[f.num]:
			return nil
		case f.is(1, protowire.BytesType) && utf8.Valid(f.bytes):
			m.Namespace, seen[1] = d.intern(f.bytes), true
		case f.is(2, protowire.BytesType) && utf8.Valid(f.bytes):
			m.Name, seen[2] = string(f.bytes), true
		case f.is(3, protowire.VarintType):
			m.Generation, seen[3] = int64(f.varint), true
		case f.is(4, protowire.BytesType) && kept == nil:
			if !d.mapEntry(f.bytes, &m.Labels) {
				return nil
			}
		case f.is(4, protowire.BytesType):
			if !d.sliceLabel(f.bytes, kept) {
				return nil
			}
		case f.is(5, protowire.BytesType):
			if !d.mapEntry(f.bytes, &m.Annotations) {
				return nil
			}
		default:
			return nil
		}
	}
	return m
}

// mapEntryOf reads the entry of a map<string, string> that b encodes, or
// reports false for an entry that is not a key then a value, each valid
// UTF-8, either left out.
func mapEntryOf(b []byte) (key, value []byte, ok bool) {
	seenKey, seenValue := false, false
	for f, ok := range fields(b) {
		if !ok || f.typ != protowire.BytesType || !utf8.Valid(f.bytes) {
			return nil, nil, false
		}
		switch {
		case f.num == 1 && !seenKey && !seenValue:
			key, seenKey = f.bytes, true
		case f.num == 2 && !seenValue:
			value, seenValue = f.bytes, true
		default:
			return nil, nil, false
		}
	}
	return key, value, true
}

// mapEntry puts the entry that b encodes in *m, its key and value
// interned, making the map if need be, as protobuf does (a later entry of
// the same key replaces an earlier one), or declines an entry mapEntryOf
// does not read.
func (d *wireDecoder) mapEntry(b []byte, m *map[string]string) bool {
	key, value, ok := mapEntryOf(b)
	if !ok {
		return false
	}
	if *m == nil {
		*m = make(map[string]string, 1)
	}
	(*m)[d.intern(key)] = d.intern(value)
	return true
}

// sliceLabel checks the label entry of a slice that b encodes and keeps
// its value in kept if it is the service name's (a later entry replaces
// it, as in a map), or declines an entry mapEntryOf does not read and a
// label that is not valid, for the decoder to report.
func (d *wireDecoder) sliceLabel(b []byte, kept *sliceOffWire) bool {
	key, value, ok := mapEntryOf(b)
	if !ok {
		return false
	}
	k := d.intern(key)
	if !isLabel(k, value) {
		return false
	}
	if k == source.ServiceNameLabel {
		kept.service = string(value)
	}
	return true
}

// extensionService reads an ExtensionService of the plain shape as
// protobuf would: metadata as objectMeta reads it, and a spec of targets
// and a protocol alone. It returns nil for any other (a policy, options,
// a field seen twice, which protobuf merges), for protobuf to read:
// through protobuf, the 10,000 ExtensionServices of a request cost nearly
// as much to read as their 20,000 Services by hand.
func (d *wireDecoder) extensionService(b []byte) *tributaryv1.ExtensionService {
	es := d.messages.extensions.next()
	if !readObject(d, b, &es.Metadata, &es.Spec, (*wireDecoder).extensionServiceSpec) {
		return nil
	}
	return es
}

// readObject reads an object's message of metadata (field 1, read as
// objectMeta reads it) and spec (field 2, read by readSpec) into *meta
// and *spec, or reports false to decline: either seen twice (protobuf
// merges them), any other field.
func readObject[S any](d *wireDecoder, b []byte, meta **tributaryv1.ObjectMeta, spec **S, readSpec func(*wireDecoder, []byte) *S) bool {
	for f, ok := range fields(b) {
		if !ok || f.typ != protowire.BytesType {
			return false
		}
		switch {
		case f.num == 1 && *meta == nil:
			if *meta = d.objectMeta(f.bytes, nil); *meta == nil {
				return false
			}
		case f.num == 2 && *spec == nil:
			if *spec = readSpec(d, f.bytes); *spec == nil {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (d *wireDecoder) extensionServiceSpec(b []byte) *tributaryv1.ExtensionServiceSpec {
	spec := d.messages.extensionSpecs.next()
	for f, ok := range fields(b) {
		if !ok || f.typ != protowire.BytesType {
			return nil
		}
		switch {
		case f.num == 1:
			target := d.target(f.bytes)
			if target == nil {
				return nil
			}
			spec.Services = append(spec.Services, target)
		case f.num == 3 && spec.Protocol == nil && utf8.Valid(f.bytes):
			spec.Protocol = d.internPointer(f.bytes)
		default:
			return nil
		}
	}
	return spec
}

func (d *wireDecoder) target(b []byte) *tributaryv1.ExtensionServiceTarget {
	t := d.messages.targets.next()
	var seen [4]bool // name, port, weight
	for f, ok := range fields(b) {
		if !ok || f.num < 1 || f.num > 3 || seen[f.num] {
			return nil
		}
		seen[f.num] = true
		switch {
		case f.is(1, protowire.BytesType) && utf8.Valid(f.bytes):
			t.Name = string(f.bytes)
		case f.is(2, protowire.VarintType):
			t.Port = int32(f.varint) // truncated, as protobuf reads an int32
		case f.is(3, protowire.VarintType):
			t.Weight = uint32(f.varint) // truncated, as protobuf reads a uint32
		default:
			return nil
		}
	}
	return t
}

// service reads a Service as protobuf would, its metadata as objectMeta
// does and its spec's strings interned, or returns nil to decline: a
// field seen twice (protobuf merges a message and keeps the last string),
// a string that is not UTF-8, any other field. A request holds two
// Services for each ExtensionService; through protobuf each was a dozen
// allocations.
func (d *wireDecoder) service(b []byte) *tributaryv1.Service {
	svc := d.messages.services.next()
	if !readObject(d, b, &svc.Metadata, &svc.Spec, (*wireDecoder).serviceSpec) {
		return nil
	}
	return svc
}

func (d *wireDecoder) serviceSpec(b []byte) *tributaryv1.ServiceSpec {
	spec := d.messages.serviceSpecs.next()
	var seen [3]bool // type, external_name
	for f, ok := range fields(b) {
		if !ok || f.typ != protowire.BytesType {
			return nil
		}
		switch {
		case f.num == 1 && !seen[1] && utf8.Valid(f.bytes):
			spec.Type, seen[1] = d.intern(f.bytes), true
		case f.num == 2 && !seen[2] && utf8.Valid(f.bytes):
			spec.ExternalName, seen[2] = d.intern(f.bytes), true
		case f.num == 3:
			port := d.servicePort(f.bytes)
			if port == nil {
				return nil
			}
			spec.Ports = append(spec.Ports, port)
		default:
			return nil
		}
	}
	return spec
}

func (d *wireDecoder) servicePort(b []byte) *tributaryv1.ServicePort {
	p := d.messages.servicePorts.next()
	var seen [5]bool // name, port, target_port, protocol
	for f, ok := range fields(b) {
		if !ok || f.num < 1 || f.num > 4 || seen[f.num] {
			return nil
		}
		seen[f.num] = true
		switch {
		case f.is(2, protowire.VarintType):
			p.Port = int32(f.varint) // truncated, as protobuf reads an int32
		case f.typ != protowire.BytesType || !utf8.Valid(f.bytes):
			return nil
		case f.num == 1:
			p.Name = d.intern(f.bytes)
		case f.num == 3:
			p.TargetPort = d.intern(f.bytes)
		case f.num == 4:
			p.Protocol = d.intern(f.bytes)
		default: // the port as bytes
			return nil
		}
	}
	return p
}

// endpointPort reads an EndpointPort as protobuf would, its name and
// protocol interned, or returns nil to decline: a field seen twice (which
// protobuf merges), a string that is not UTF-8, any other field.
func (d *wireDecoder) endpointPort(b []byte) *tributaryv1.EndpointPort {
	p := d.messages.endpointPorts.next()
	for f, ok := range fields(b) {
		if !ok {
			return nil
		}
		switch {
		case f.is(1, protowire.BytesType) && p.Name == nil && utf8.Valid(f.bytes):
			p.Name = d.internPointer(f.bytes)
		case f.is(2, protowire.VarintType) && p.Port == nil:
			p.Port = new(int32(f.varint)) // truncated, as protobuf reads an int32
		case f.is(3, protowire.BytesType) && p.Protocol == nil && utf8.Valid(f.bytes):
			p.Protocol = d.internPointer(f.bytes)
		default:
			return nil
		}
	}
	return p
}

// tagSliceEndpoint is EndpointSlice.endpoints' tag, one byte.
const tagSliceEndpoint = 3<<3 | byte(protowire.BytesType)

// endpoint reads one Endpoint of the slice being read, and packs it unless
// it has no address.
func (d *wireDecoder) endpoint(b []byte) bool {
	var e endpointOnWire
	// The shape nearly every endpoint has, one address and then its
	// conditions, each under 128 bytes (a one-byte length), is read
	// without the general loop: it is most of a large request's fields.
	if n := len(b); n >= 4 && b[0] == 0x0a && b[1] < 0x80 {
		a := 2 + int(b[1])
		if a+2 <= n && b[a] == 0x12 && b[a+1] < 0x80 && a+2+int(b[a+1]) == n {
			if !conditionsWire(b[a+2:], &e.conditions) {
				return false
			}
			// A dotted quad, nearly every address, is ASCII and short:
			// what address checks holds, and it is packed as the number
			// it was parsed into.
			if v, ok := source.ParseDottedQuad(b[2:a]); ok {
				d.packed.AddQuad(v, e.notReady())
				return true
			}
			if !e.address(b[2:a]) {
				return false
			}
			d.pack(&e)
			return true
		}
	}
	for f, ok := range fields(b) {
		if !ok || f.typ != protowire.BytesType {
			return false
		}
		switch {
		case f.num == 1:
			if !e.address(f.bytes) {
				return false
			}
		case f.num == 2 && !e.conditions.present:
			if !conditionsWire(f.bytes, &e.conditions) {
				return false
			}
		default:
			return false
		}
	}
	d.pack(&e)
	return true
}

// pack adds e to the slice's endpoints, unless it has no address.
func (d *wireDecoder) pack(e *endpointOnWire) {
	if e.addresses > 0 {
		d.packed.AddBytes(e.first, e.notReady())
	}
}

// notReady reports whether e's ready condition is set and false: ready is
// the first of the three conditions.
func (e *endpointOnWire) notReady() bool {
	return e.conditions.set[0] && !e.conditions.value[0]
}

// address takes a, the next address of e, or reports false to decline.
func (e *endpointOnWire) address(a []byte) bool {
	if e.addresses == maxEndpointAddresses || len(a) > addressLimit.max || !utf8.Valid(a) {
		return false
	}
	// Only an endpoint's first address is kept: the rest are counted and
	// checked, never used.
	if e.addresses == 0 {
		e.first = a
	}
	e.addresses++
	return true
}

func conditionsWire(b []byte, c *conditionsOnWire) bool {
	c.present = true
	// What every client writes: ready, serving and terminating in field
	// order, each 0 or 1 (a one-byte varint), read at once.
	if len(b) == 6 && b[0] == 0x08 && b[2] == 0x10 && b[4] == 0x18 && b[1]|b[3]|b[5] <= 1 {
		c.set = [3]bool{true, true, true}
		c.value = [3]bool{b[1] == 1, b[3] == 1, b[5] == 1}
		return true
	}
	for f, ok := range fields(b) {
		if !ok || f.typ != protowire.VarintType || f.num < 1 || f.num > 3 {
			return false
		}
		i := f.num - 1
		if c.set[i] {
			return false
		}
		if c.value[i], ok = wireBool(f.varint); !ok {
			return false
		}
		c.set[i] = true
	}
	return true
}

// wireField is one field of a message on the wire: a varint or a
// length-delimited value, the only wire types these messages use.
type wireField struct {
	num    protowire.Number
	typ    protowire.Type
	varint uint64
	bytes  []byte
}

func (f wireField) is(num protowire.Number, typ protowire.Type) bool {
	return f.num == num && f.typ == typ
}

// nextField reads the field at the start of b and returns the rest of b;
// ok is false for a malformed or truncated field and for a wire type other
// than varint and length-delimited.
func nextField(b []byte) (f wireField, rest []byte, ok bool) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return f, nil, false
	}
	b = b[n:]
	f.num, f.typ = num, typ
	switch typ {
	case protowire.VarintType:
		f.varint, n = protowire.ConsumeVarint(b)
	case protowire.BytesType:
		f.bytes, n = protowire.ConsumeBytes(b)
	default:
		return f, nil, false
	}
	if n < 0 {
		return f, nil, false
	}
	return f, b[n:], true
}

// fields yields the fields of b in order, the last with ok false when it
// is malformed (see nextField), after which there are no more.
func fields(b []byte) iter.Seq2[wireField, bool] {
	return func(yield func(wireField, bool) bool) {
		for len(b) > 0 {
			f, rest, ok := nextField(b)
			if !yield(f, ok) || !ok {
				return
			}
			b = rest
		}
	}
}

// wireBool reads a bool's varint. protobuf reads any value but 0 as true;
// no encoder writes another value than 1, so one is left to protobuf.
func wireBool(v uint64) (value, ok bool) { return v == 1, v <= 1 }

// unmarshalNew decodes b, the bytes of a field of message type T, into a
// new T, or returns nil when protobuf refuses them.
func unmarshalNew[T any, P interface {
	*T
	proto.Message
}](b []byte) P {
	m := P(new(T))
	if proto.Unmarshal(b, m) != nil {
		return nil
	}
	return m
}
