package server

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/cputime"
	"github.com/tributary-dev/tributary/internal/grpctest"
	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/workload"
)

// FuzzDecodeRequestWire holds the fast path to protobuf: any bytes, read
// as a Translate call's request and as a Sync stream's message, decode to
// what proto.Unmarshal and the decoder make of them (the same objects and
// settings, the same batch, the same problems or the same error), whether
// the fast path took them or left them to protobuf.
func FuzzDecodeRequestWire(f *testing.F) {
	for _, m := range realisticRequests(f) {
		f.Add(marshalWire(f, m))
	}
	for _, m := range oddAcceptedRequests() {
		f.Add(marshalWire(f, m))
	}
	translate, sync := declinedRequests(f)
	for _, c := range append(translate, sync...) {
		f.Add(c.wire)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDirectEquivalence(t, data)
		checkDirectSyncEquivalence(t, data)
	})
}

// splitBuffers copies data into three buffers, as gRPC hands over a large
// message, and returns them and a function that overwrites them: nothing
// decoded may point into them, since gRPC reuses them.
func splitBuffers(data []byte) (mem.BufferSlice, func()) {
	third := len(data) / 3
	parts := [][]byte{bytes.Clone(data[:third]), bytes.Clone(data[third : 2*third]), bytes.Clone(data[2*third:])}
	bufs := make(mem.BufferSlice, len(parts))
	for i, part := range parts {
		bufs[i] = mem.SliceBuffer(part)
	}
	return bufs, func() {
		for _, part := range parts {
			clear(part)
		}
	}
}

// staleWire is a request that the fast path takes, decoded into a message
// before the bytes under test: nothing of it may survive their decoding.
func staleWire(t *testing.T) []byte {
	t.Helper()
	return marshalWire(t, &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{XdsClusterName: "stale"}, Objects: oddEndpointsRequest().GetObjects(), IncludeJson: true})
}

// decodeBothWays decodes data with gRPC's proto codec into want, and
// through the server's codec path into got, first given stale (which the
// fast path must take, as taken says) and then data from split buffers;
// it fails the test unless both give the same error, and reports whether
// they decoded data.
func decodeBothWays(t *testing.T, data, stale []byte, want proto.Message, got any, taken func() bool) bool {
	t.Helper()
	wantErr := protoCodecV2.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bytes.Clone(data))}, want)
	if err := unmarshalRequest(mem.BufferSlice{mem.SliceBuffer(stale)}, got); err != nil || !taken() {
		t.Fatalf("the fast path did not take the stale message: %v", err)
	}
	bufs, overwrite := splitBuffers(data)
	gotErr := unmarshalRequest(bufs, got)
	overwrite()
	if errText(gotErr) != errText(wantErr) {
		t.Fatalf("%x as a %s: error %q, want %q", data, messageName(want), errText(gotErr), errText(wantErr))
	}
	return wantErr == nil
}

// checkDirectEquivalence decodes data as the server decodes a Translate
// call's request, through the codec's path into a wireTranslateRequest
// that held another request, from split buffers; and wants what protobuf
// gives: the same error, or what decodeRequest makes of proto.Unmarshal's
// message (the same objects and settings, or the same error). It reports
// whether the fast path took data.
func checkDirectEquivalence(t *testing.T, data []byte) bool {
	t.Helper()
	var want tributaryv1.TranslateRequest
	var got wireTranslateRequest
	if !decodeBothWays(t, data, staleWire(t), &want, &got, func() bool { return got.slices != nil }) {
		return false
	}
	gotObjs, gotSettings, gotDecodeErr := decodeTranslate(&got.request, got.slices)
	wantObjs, wantSettings, wantDecodeErr := decodeRequest(&want)
	if errText(gotDecodeErr) != errText(wantDecodeErr) {
		t.Fatalf("%x: decodes to the error %q, want %q", data, errText(gotDecodeErr), errText(wantDecodeErr))
	}
	if diff := cmp.Diff(wantSettings, gotSettings); diff != "" {
		t.Fatalf("%x: settings (-through protobuf +through the codec):\n%s", data, diff)
	}
	if diff := cmp.Diff(wantObjs, gotObjs); diff != "" {
		t.Fatalf("%x: objects (-through protobuf +through the codec):\n%s", data, diff)
	}
	if got.request.GetIncludeJson() != want.GetIncludeJson() {
		t.Fatalf("%x: include_json %v, want %v", data, got.request.GetIncludeJson(), want.GetIncludeJson())
	}
	return got.slices != nil
}

// checkDirectSyncEquivalence is checkDirectEquivalence for a Sync stream's
// message, received into a wireSyncRequest: the same error, or the same
// start, or a batch that decodeBatch makes the same objects and deletes or
// the same problems of.
func checkDirectSyncEquivalence(t *testing.T, data []byte) bool {
	t.Helper()
	var want tributaryv1.SyncRequest
	var got wireSyncRequest
	stale := marshalWire(t, &tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: &tributaryv1.SyncBatch{Id: 7, Upserts: oddEndpointsRequest().GetObjects()}}})
	if !decodeBothWays(t, data, stale, &want, &got, func() bool { return got.slices != nil }) {
		return false
	}
	if diff := cmp.Diff(want.GetStart(), got.request.GetStart(), protocmp.Transform()); diff != "" {
		t.Fatalf("%x: start (-through protobuf +through the codec):\n%s", data, diff)
	}
	if (want.GetBatch() == nil) != (got.request.GetBatch() == nil) || want.GetBatch().GetId() != got.request.GetBatch().GetId() {
		t.Fatalf("%x: batch %v, want %v", data, got.request.GetBatch(), want.GetBatch())
	}
	var gotProblems, wantProblems problems
	gotBatch := decodeBatch(got.request.GetBatch(), got.slices, &gotProblems)
	wantBatch := decodeBatch(want.GetBatch(), nil, &wantProblems)
	if errText(gotProblems.err()) != errText(wantProblems.err()) {
		t.Fatalf("%x: the batch decodes to the error %q, want %q", data, errText(gotProblems.err()), errText(wantProblems.err()))
	}
	if diff := cmp.Diff(wantBatch, gotBatch); diff != "" {
		t.Fatalf("%x: batch (-through protobuf +through the codec):\n%s", data, diff)
	}
	return got.slices != nil
}

// TestDecodeRequestWireTakesRealisticRequests: the fast path decodes the
// requests clients send, the standard workload's and generated ones,
// instead of leaving them to protobuf; the well-formed odd ones decode as
// protobuf decodes them, whichever path they take (it declines the one
// with an address too long: see TestDirectDeclinesWhatTheDecoderReports).
func TestDecodeRequestWireTakesRealisticRequests(t *testing.T) {
	check := func(m proto.Message) bool {
		if _, sync := m.(*tributaryv1.SyncRequest); sync {
			return checkDirectSyncEquivalence(t, marshalWire(t, m))
		}
		return checkDirectEquivalence(t, marshalWire(t, m))
	}
	for i, m := range realisticRequests(t) {
		if !check(m) {
			t.Errorf("request %d (%s): the fast path declined it", i, messageName(m))
		}
	}
	for _, m := range oddAcceptedRequests() {
		check(m)
	}
}

// TestDecodeRequestWireDeclinesOddEncodings: what is not the plain
// encoding is left to protobuf, and the codec's path then gives what
// protobuf gives, the message or the error.
func TestDecodeRequestWireDeclinesOddEncodings(t *testing.T) {
	translate, sync := declinedRequests(t)
	for _, cases := range []struct {
		cases []declinedCase
		check func(*testing.T, []byte) bool
	}{
		{translate, checkDirectEquivalence},
		{sync, checkDirectSyncEquivalence},
	} {
		for _, c := range cases.cases {
			t.Run(c.name, func(t *testing.T) {
				if cases.check(t, c.wire) {
					t.Errorf("the fast path took %x", c.wire)
				}
			})
		}
	}
}

// TestDirectDeclinesWhatTheDecoderReports: an endpoint with more addresses
// than Kubernetes allows, or an address too long, is left to protobuf by
// the fast path, so that the decoder reports it as it always has, field
// and all.
func TestDirectDeclinesWhatTheDecoderReports(t *testing.T) {
	many := make([]string, maxEndpointAddresses+1)
	for i := range many {
		many[i] = fmt.Sprintf("10.0.0.%d", i+1)
	}
	for _, c := range []struct {
		name     string
		endpoint *tributaryv1.Endpoint
		want     string
	}{
		{"too many addresses", &tributaryv1.Endpoint{Addresses: many}, `objects[2] (EndpointSlice "ns/svc-1"): endpoints[0].addresses holds 101 addresses`},
		{"an address too long", &tributaryv1.Endpoint{Addresses: []string{"10.0.0.1", strings.Repeat("a", addressLimit.max+1)}}, `objects[2] (EndpointSlice "ns/svc-1"): endpoints[0].addresses[1] is 254 bytes long`},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := oddEndpointsRequest()
			req.Objects[2].GetEndpointSlice().Endpoints = []*tributaryv1.Endpoint{c.endpoint}
			wire := marshalWire(t, req)
			if checkDirectEquivalence(t, wire) {
				t.Fatal("the direct fast path took the request")
			}
			asBatch := marshalWire(t, &tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: &tributaryv1.SyncBatch{Upserts: req.Objects}}})
			if checkDirectSyncEquivalence(t, asBatch) {
				t.Fatal("the direct fast path took the request as a Sync batch")
			}
			conn := dialBufconn(t, NewGRPCServer(quietOptions()))
			_, err := tributaryv1.NewTranslationServiceClient(conn).Translate(t.Context(), req)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), c.want) {
				t.Errorf("Translate: %v, want InvalidArgument with %q", err, c.want)
			}
		})
	}
}

// TestDirectDecodeIntoUsedRequest: a wireTranslateRequest that a first
// request was decoded into keeps nothing of it when a second request,
// which the direct path declines, is decoded into it (gRPC decodes a
// second message into the same one only to refuse the call, but the codec
// must not depend on that).
func TestDirectDecodeIntoUsedRequest(t *testing.T) {
	first := oddEndpointsRequest()
	second := oddEndpointsRequest()
	second.Objects[2].GetEndpointSlice().Endpoints = []*tributaryv1.Endpoint{{Addresses: []string{"10.9.9.9"}}}
	declined := protowire.AppendBytes(protowire.AppendTag(marshalWire(t, second), 99, protowire.BytesType), []byte("unknown"))
	var r wireTranslateRequest
	if err := unmarshalRequest(mem.BufferSlice{mem.SliceBuffer(marshalWire(t, first))}, &r); err != nil || r.slices == nil {
		t.Fatalf("first request: %v, endpoints %v; want it taken by the direct path", err, r.slices)
	}
	if err := unmarshalRequest(mem.BufferSlice{mem.SliceBuffer(declined)}, &r); err != nil {
		t.Fatal(err)
	}
	objs, _, err := decodeTranslate(&r.request, r.slices)
	if err != nil {
		t.Fatal(err)
	}
	if got := objs.EndpointSlices[0].Endpoints; got.Len() != 1 || got.Address(0).String() != "10.9.9.9" {
		t.Errorf("endpoints after the second request: %+v, want the second request's one", got)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestTranslateOddEndpointsAsBefore: through the server, a request with
// endpoints of every shape the fast path reads gets the response the same
// request gets through protobuf (the same bytes with an unknown field
// added, which the fast path leaves to protobuf and translation ignores).
func TestTranslateOddEndpointsAsBefore(t *testing.T) {
	fast := marshalWire(t, oddEndpointsRequest())
	viaProtobuf := protowire.AppendBytes(protowire.AppendTag(bytes.Clone(fast), 99, protowire.BytesType), []byte("ignored"))
	if !checkDirectEquivalence(t, fast) {
		t.Fatal("the fast path declined the request")
	}
	if checkDirectEquivalence(t, viaProtobuf) {
		t.Fatal("the fast path took the request with an unknown field")
	}
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	translate := func(request []byte) *tributaryv1.TranslateResponse {
		var wire []byte
		if err := conn.Invoke(t.Context(), tributaryv1.TranslationService_Translate_FullMethodName, request, &wire,
			grpc.ForceCodecV2(grpctest.RawCodec{})); err != nil {
			t.Fatalf("Translate: %v", err)
		}
		var response tributaryv1.TranslateResponse
		if err := proto.Unmarshal(wire, &response); err != nil {
			t.Fatal(err)
		}
		return &response
	}
	got, want := translate(fast), translate(viaProtobuf)
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("response through the fast path (-through protobuf +fast path):\n%s", diff)
	}
	// The endpoints that count: no conditions, serving only, two
	// addresses, ready with terminating set (the first address of each);
	// not the one without addresses nor the one not ready.
	want4 := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.5"}
	if availability := got.GetStatuses()[0].GetAvailability(); len(availability) != 1 || availability[0].GetReadyEndpoints() != uint32(len(want4)) {
		t.Errorf("availability %v, want %d ready endpoints (%v)", availability, len(want4), want4)
	}
}

// oddEndpointsRequest is one ExtensionService whose Service's slice holds
// endpoints of every shape: without conditions, with some conditions,
// with several addresses, with none.
func oddEndpointsRequest() *tributaryv1.TranslateRequest {
	return &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{
		extensionServiceObject(meta("ns", "ext"), &tributaryv1.ExtensionServiceSpec{
			Services: []*tributaryv1.ExtensionServiceTarget{{Name: "svc", Port: 9000}},
			Protocol: proto.String("h2c"),
		}),
		serviceObject(meta("ns", "svc"), &tributaryv1.ServicePort{Name: "grpc", Port: 9000, TargetPort: "9001", Protocol: "TCP"}),
		endpointSliceObject(sliceMeta("ns", "svc-1", "svc"), []*tributaryv1.EndpointPort{tcpPort("grpc", 9001)}, oddEndpoints()...),
	}}
}

func oddEndpoints() []*tributaryv1.Endpoint {
	return []*tributaryv1.Endpoint{
		{Addresses: []string{"10.0.0.1"}},
		{Addresses: []string{"10.0.0.2"}, Conditions: &tributaryv1.EndpointConditions{Serving: proto.Bool(true)}},
		{Addresses: []string{"10.0.0.3", "10.0.0.30"}, Conditions: &tributaryv1.EndpointConditions{}},
		{Conditions: &tributaryv1.EndpointConditions{Ready: proto.Bool(true)}},
		{Addresses: []string{"10.0.0.4"}, Conditions: &tributaryv1.EndpointConditions{Ready: proto.Bool(false), Terminating: proto.Bool(false)}},
		{Addresses: []string{"10.0.0.5"}, Conditions: &tributaryv1.EndpointConditions{Ready: proto.Bool(true), Serving: proto.Bool(false), Terminating: proto.Bool(true)}},
	}
}

// realisticRequests are requests as clients send them: the standard
// workload, generated objects of every kind, settings, a Sync batch.
func realisticRequests(tb testing.TB) []proto.Message {
	standard := standardObjects(workload.Standard(3, 4))
	requests := []proto.Message{
		smallRequest(),
		&tributaryv1.TranslateRequest{Objects: standard},
		&tributaryv1.TranslateRequest{
			Settings:    &tributaryv1.Settings{XdsClusterName: "contour", UpstreamTls: &tributaryv1.UpstreamTLS{CipherSuites: []string{"ECDHE-RSA-AES128-GCM-SHA256"}}},
			Objects:     append(standard, secretObject(meta("ns", "ca")), delegationObject(meta("ns", "delegation"))),
			IncludeJson: true,
		},
		&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: &tributaryv1.SyncBatch{
			Id:      7,
			Upserts: standard,
			Deletes: []*tributaryv1.ObjectReference{{Kind: tributaryv1.ObjectKind_OBJECT_KIND_ENDPOINT_SLICE, Namespace: "ns", Name: "gone"}},
		}}},
	}
	// More distinct short strings than the fast path interns, and strings
	// too long to intern (annotations, which a slice may carry and the
	// decoder does not read): past its table, each is a copy of its own.
	var past []*tributaryv1.KubernetesObject
	for i := range maxInterned + 100 {
		m := sliceMeta(fmt.Sprintf("ns-%d", i), "s", fmt.Sprintf("svc-%d", i))
		m.Annotations = map[string]string{strings.Repeat("k", maxInternedBytes+1): strings.Repeat("v", maxInternedBytes+i%2)}
		past = append(past, endpointSliceObject(m, []*tributaryv1.EndpointPort{tcpPort(fmt.Sprintf("p%d", i), 9001)}, &tributaryv1.Endpoint{Addresses: []string{"10.0.0.1"}}))
	}
	requests = append(requests, &tributaryv1.TranslateRequest{Objects: past})
	// Slice labels, which the fast path checks and does not keep but for
	// the service name: that label alone, beside others, missing, empty.
	requests = append(requests, &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{
		endpointSliceObject(sliceMeta("ns", "alone", "svc"), nil),
		endpointSliceObject(labelled(sliceMeta("ns", "beside", "svc"), "app", "x"), nil),
		endpointSliceObject(labelled(meta("ns", "missing"), "zone", "a"), nil),
		endpointSliceObject(sliceMeta("ns", "empty", ""), nil),
	}})
	for seed := range uint64(5) {
		g := objectgen.New(objectgen.FromRand(rand.New(rand.NewPCG(seed, 0x77697265))), objectgen.Defaults())
		requests = append(requests, &tributaryv1.TranslateRequest{Objects: standardObjects(g.Objects())})
	}
	for _, m := range requests {
		if marshalWire(tb, m) == nil {
			tb.Fatalf("an empty request among the realistic ones: %v", m)
		}
	}
	return requests
}

// standardObjects is the API form of objs, as a client sends them.
func standardObjects(objs *source.Objects) []*tributaryv1.KubernetesObject {
	extensionServices, services, endpointSlices := workload.APIObjects(objs)
	return append(append(extensionServices, services...), endpointSlices...)
}

// oddAcceptedRequests are well-formed requests of unusual shapes, which
// the fast path reads too.
func oddAcceptedRequests() []proto.Message {
	return []proto.Message{
		&tributaryv1.TranslateRequest{},
		&tributaryv1.TranslateRequest{IncludeJson: true},
		&tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{}},
		oddEndpointsRequest(),
		&tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{
			{},
			{Kind: &tributaryv1.KubernetesObject_EndpointSlice{EndpointSlice: &tributaryv1.EndpointSlice{}}},
			{Kind: &tributaryv1.KubernetesObject_EndpointSlice{EndpointSlice: &tributaryv1.EndpointSlice{
				Endpoints: []*tributaryv1.Endpoint{{}, {Addresses: []string{""}}, {Addresses: []string{"", "x"}}, {Addresses: []string{"fd00::1"}}},
			}}},
			endpointSliceObject(sliceMeta("ns", "ports-only", "svc"), []*tributaryv1.EndpointPort{{}, tcpPort("grpc", 9001)}),
			// Ports as protobuf reads them: a negative number (ten bytes on
			// the wire), one past 65535, fields left out, one port twice.
			endpointSliceObject(sliceMeta("ns", "odd-ports", "svc"), []*tributaryv1.EndpointPort{
				{Port: proto.Int32(-1)}, {Port: proto.Int32(70000)}, {Name: proto.String("")}, {Protocol: proto.String("UDP")},
				tcpPort("grpc", 9001), tcpPort("grpc", 9001),
			}),
			// Services as protobuf reads them: without metadata or spec, an
			// ExternalName, ports with fields left out or out of range.
			{Kind: &tributaryv1.KubernetesObject_Service{Service: &tributaryv1.Service{}}},
			{Kind: &tributaryv1.KubernetesObject_Service{Service: &tributaryv1.Service{Metadata: meta("ns", "bare")}}},
			{Kind: &tributaryv1.KubernetesObject_Service{Service: &tributaryv1.Service{Metadata: meta("ns", "external"),
				Spec: &tributaryv1.ServiceSpec{Type: "ExternalName", ExternalName: "auth.example.com"}}}},
			serviceObject(meta("ns", "odd-ports"), &tributaryv1.ServicePort{}, &tributaryv1.ServicePort{Port: -1, TargetPort: "http"},
				&tributaryv1.ServicePort{Name: "grpc", Port: 70000, Protocol: "UDP"}),
			endpointSliceObject(meta("ns", "wide"), nil, &tributaryv1.Endpoint{Addresses: []string{"é.example", strings.Repeat("a", 300)}}),
		}},
		&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: &tributaryv1.SyncBatch{}}},
		&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: &tributaryv1.SyncBatch{
			Upserts: oddEndpointsRequest().GetObjects(),
		}}},
	}
}

// declinedCase is bytes the fast path leaves to protobuf.
type declinedCase struct {
	name string
	wire []byte
}

// declinedRequests are encodings the fast path does not read, as a
// TranslateRequest and as a SyncRequest: some protobuf takes (it merges,
// keeps unknown fields, reads 2 as true), some it refuses.
func declinedRequests(tb testing.TB) (translate, sync []declinedCase) {
	// requestWithEndpoint is a TranslateRequest whose one object is a
	// slice of one endpoint, encoded as endpoint.
	requestWithEndpoint := func(endpoint ...[]byte) []byte {
		slice := append(bytesField(1, marshalWire(tb, sliceMeta("ns", "s", "svc"))), bytesField(3, bytes.Join(endpoint, nil))...)
		return bytesField(2, bytesField(3, slice))
	}
	requestWithSlice := func(slice ...[]byte) []byte {
		return bytesField(2, bytesField(3, bytes.Join(slice, nil)))
	}
	address := bytesField(1, []byte("10.0.0.1"))
	realistic := marshalWire(tb, &tributaryv1.TranslateRequest{Objects: standardObjects(workload.Standard(1, 2))})
	sliceMetadata := bytesField(1, marshalWire(tb, sliceMeta("ns", "s", "svc")))
	serviceRequest := func(service ...[]byte) []byte {
		return bytesField(2, bytesField(2, bytes.Join(service, nil)))
	}
	serviceMetadata := bytesField(1, marshalWire(tb, meta("ns", "svc")))
	translate = []declinedCase{
		{"unknown field of an endpoint", requestWithEndpoint(address, bytesField(9, []byte("x")))},
		{"unknown field of conditions", requestWithEndpoint(address, bytesField(2, varintField(4, 1)))},
		{"unknown field of a slice", requestWithSlice(sliceMetadata, varintField(7, 1))},
		{"unknown field of an object", bytesField(2, bytesField(6, nil))},
		{"unknown field of the request", append(bytes.Clone(realistic), varintField(99, 1)...)},
		{"ready is 2", requestWithEndpoint(address, bytesField(2, varintField(1, 2)))},
		{"include_json is 2", varintField(3, 2)},
		{"ready twice", requestWithEndpoint(address, bytesField(2, append(varintField(1, 1), varintField(1, 0)...)))},
		{"conditions twice", requestWithEndpoint(address, bytesField(2, varintField(1, 1)), bytesField(2, varintField(2, 1)))},
		{"metadata twice", requestWithSlice(sliceMetadata, sliceMetadata)},
		{"address type twice", requestWithSlice(bytesField(2, []byte("IPv4")), bytesField(2, []byte("IPv6")))},
		{"settings twice", append(bytesField(1, nil), bytesField(1, nil)...)},
		{"include_json twice", append(varintField(3, 1), varintField(3, 0)...)},
		{"two kinds of one object", bytesField(2, append(bytesField(3, nil), bytesField(2, nil)...))},
		{"one kind twice", bytesField(2, append(bytesField(3, nil), bytesField(3, nil)...))},
		{"an address that is not UTF-8", requestWithEndpoint(bytesField(1, []byte("10.0.0.\xff")))},
		{"an address type that is not UTF-8", requestWithSlice(bytesField(2, []byte("IPv\xc0")))},
		{"an address as a varint", requestWithEndpoint(varintField(1, 10))},
		{"ready as bytes", requestWithEndpoint(address, bytesField(2, bytesField(1, []byte{1})))},
		{"a group", requestWithEndpoint(address, protowire.AppendTag(nil, 5, protowire.StartGroupType), protowire.AppendTag(nil, 5, protowire.EndGroupType))},
		{"metadata that is not UTF-8", requestWithSlice(bytesField(1, bytesField(1, []byte("\xff"))))},
		{"a slice label the decoder reports: its key", requestWithSlice(bytesField(1, labelEntry("bad key", "v")))},
		{"a slice label the decoder reports: the service name", requestWithSlice(bytesField(1, labelEntry(source.ServiceNameLabel, "-svc")))},
		{"service metadata twice", serviceRequest(serviceMetadata, serviceMetadata)},
		{"service spec twice", serviceRequest(bytesField(2, nil), bytesField(2, nil))},
		{"unknown field of a service", serviceRequest(serviceMetadata, varintField(3, 1))},
		{"service type twice", serviceRequest(bytesField(2, append(bytesField(1, []byte("ClusterIP")), bytesField(1, []byte("NodePort"))...)))},
		{"external name twice", serviceRequest(bytesField(2, append(bytesField(2, []byte("a")), bytesField(2, []byte("b"))...)))},
		{"unknown field of a service spec", serviceRequest(bytesField(2, varintField(9, 1)))},
		{"a service type that is not UTF-8", serviceRequest(bytesField(2, bytesField(1, []byte("\xff"))))},
		{"service port number twice", serviceRequest(bytesField(2, bytesField(3, append(varintField(2, 1), varintField(2, 2)...))))},
		{"service port name twice", serviceRequest(bytesField(2, bytesField(3, append(bytesField(1, []byte("a")), bytesField(1, []byte("b"))...))))},
		{"unknown field of a service port", serviceRequest(bytesField(2, bytesField(3, varintField(5, 1))))},
		{"a target port that is not UTF-8", serviceRequest(bytesField(2, bytesField(3, bytesField(3, []byte("\xff")))))},
		{"a service port number as bytes", serviceRequest(bytesField(2, bytesField(3, bytesField(2, []byte{1}))))},
		{"a service port name as a varint", serviceRequest(bytesField(2, bytesField(3, varintField(1, 1))))},
		{"port name twice", requestWithSlice(sliceMetadata, bytesField(4, append(bytesField(1, []byte("a")), bytesField(1, []byte("b"))...)))},
		{"port number twice", requestWithSlice(sliceMetadata, bytesField(4, append(varintField(2, 1), varintField(2, 2)...)))},
		{"port protocol twice", requestWithSlice(sliceMetadata, bytesField(4, append(bytesField(3, []byte("TCP")), bytesField(3, []byte("UDP"))...)))},
		{"unknown field of a port", requestWithSlice(sliceMetadata, bytesField(4, varintField(4, 1)))},
		{"a port name that is not UTF-8", requestWithSlice(sliceMetadata, bytesField(4, bytesField(1, []byte("\xff"))))},
		{"a port number as bytes", requestWithSlice(sliceMetadata, bytesField(4, bytesField(2, []byte{1})))},
		{"truncated", realistic[:len(realistic)-1]},
		{"truncated endpoint", requestWithEndpoint(address[:len(address)-2])},
		{"an endpoint one byte longer than its slice", requestWithSlice(sliceMetadata, oneByteShort(bytesField(3, append(bytes.Clone(address), bytesField(2, varintField(1, 1))...))))},
		{"a field number 0", append(bytes.Clone(realistic), 0x02, 0x00)},
	}
	// A SyncBatch's upserts are field 2, as a TranslateRequest's objects:
	// the objects above are upserts inside a batch.
	batch := func(fields ...[]byte) []byte { return bytesField(2, bytes.Join(fields, nil)) }
	start := bytesField(1, marshalWire(tb, &tributaryv1.SyncStart{}))
	sync = []declinedCase{
		{"batch with an unknown field of an endpoint", batch(requestWithEndpoint(address, bytesField(9, []byte("x"))))},
		{"batch with ready 2", batch(requestWithEndpoint(address, bytesField(2, varintField(1, 2))))},
		{"batch with an address that is not UTF-8", batch(requestWithEndpoint(bytesField(1, []byte("\xff"))))},
		{"batch with an unknown field", batch(requestWithSlice(sliceMetadata), varintField(4, 1))},
		{"batch id twice", batch(varintField(1, 1), varintField(1, 2))},
		{"batch twice", append(batch(varintField(1, 1)), batch(varintField(1, 2))...)},
		{"start and batch", append(bytes.Clone(start), batch()...)},
		{"start", start},
		{"nothing", nil},
		{"truncated batch", batch(realistic)[:len(realistic)]},
	}
	return translate, sync
}

// oneByteShort is field without its last byte: its length then promises
// one byte more than follows.
func oneByteShort(field []byte) []byte { return field[:len(field)-1] }

func bytesField(num protowire.Number, value []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), value)
}

func varintField(num protowire.Number, value uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), value)
}

func marshalWire(tb testing.TB, m proto.Message) []byte {
	tb.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkUnmarshalRequest decodes the standard workload's Translate
// request as gRPC's proto codec does (protobuf) and as the server's codec
// does (wire: the fast path), allocations and garbage collection included.
func BenchmarkUnmarshalRequest(b *testing.B) {
	for _, size := range []struct{ n, m int }{{10000, 100}, {10000, 10}} {
		wire := marshalWire(b, &tributaryv1.TranslateRequest{Objects: standardObjects(workload.Standard(size.n, size.m))})
		for _, decoder := range []struct {
			name string
			into func() any
		}{
			{"protobuf", func() any { return new(tributaryv1.TranslateRequest) }},
			{"wire", func() any { return new(wireTranslateRequest) }},
		} {
			b.Run(fmt.Sprintf("N=%d/M=%d/%s", size.n, size.m, decoder.name), func(b *testing.B) {
				b.ReportAllocs()
				cpu, ops := cputime.OfProcess(), 0
				for b.Loop() {
					ops++
					if err := unmarshalRequest(mem.BufferSlice{mem.SliceBuffer(wire)}, decoder.into()); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(cputime.PerOp(cpu, ops), "cpu-ns/op")
			})
		}
	}
}

// TestInternBounded: equal strings share one copy while the table has
// room, and the table never holds more than maxInterned strings, none
// longer than maxInternedBytes, whatever a request repeats.
func TestInternBounded(t *testing.T) {
	var d wireDecoder
	if a, b := d.internPointer([]byte("grpc")), d.internPointer([]byte("grpc")); a != b || *a != "grpc" {
		t.Errorf("two internings of grpc: %p and %p (%q)", a, b, *a)
	}
	long := bytes.Repeat([]byte("x"), maxInternedBytes+1)
	if got := d.intern(long); got != string(long) {
		t.Errorf("a long string interned as %q", got)
	}
	for i := range maxInterned + 10 {
		if got, want := d.intern([]byte(strconv.Itoa(i))), strconv.Itoa(i); got != want {
			t.Fatalf("interned %q as %q", want, got)
		}
	}
	if len(d.interned) != maxInterned {
		t.Errorf("the table holds %d strings, want %d", len(d.interned), maxInterned)
	}
	if _, ok := d.interned[string(long)]; ok {
		t.Error("the table holds a string longer than maxInternedBytes")
	}
}

// TestSlab: a slab hands out distinct zero values, from arrays of 1, 2, 4
// and so on up to maxSlab: 1023 values take ten arrays, and each maxSlab
// values after them one more.
func TestSlab(t *testing.T) {
	var s slab[[2]int64]
	seen := map[*[2]int64]bool{}
	for range 1023 + 2*maxSlab {
		v := s.next()
		if seen[v] || *v != [2]int64{} {
			t.Fatalf("value %p handed out twice or not zero: %v", v, *v)
		}
		seen[v] = true
		v[0], v[1] = 1, 2
	}
	allocs := testing.AllocsPerRun(1, func() {
		var s slab[[2]int64]
		for range 1023 + maxSlab {
			s.next()
		}
	})
	if allocs != 11 {
		t.Errorf("%d values took %v allocations, want 11", 1023+maxSlab, allocs)
	}
}

// labelled is m with the label key=value added.
func labelled(m *tributaryv1.ObjectMeta, key, value string) *tributaryv1.ObjectMeta {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[key] = value
	return m
}

// labelEntry is ObjectMeta.labels' entry key=value, encoded.
func labelEntry(key, value string) []byte {
	return bytesField(4, append(bytesField(1, []byte(key)), bytesField(2, []byte(value))...))
}

// TestDecodeRequestWireSliceLabelRepeated: a slice whose service-name
// label comes twice on the wire (a map entry repeated, which protobuf
// reads as the last one) is taken by the fast path, and decodes to the
// last value, as through protobuf.
func TestDecodeRequestWireSliceLabelRepeated(t *testing.T) {
	metadata := append(append(bytesField(1, []byte("ns")), bytesField(2, []byte("s"))...), labelEntry(source.ServiceNameLabel, "first")...)
	metadata = append(metadata, labelEntry("app", "x")...)
	metadata = append(metadata, labelEntry(source.ServiceNameLabel, "last")...)
	wire := bytesField(2, bytesField(3, bytesField(1, metadata)))
	if !checkDirectEquivalence(t, wire) {
		t.Fatal("the fast path declined it")
	}
	var r wireTranslateRequest
	if err := unmarshalRequest(mem.BufferSlice{mem.SliceBuffer(wire)}, &r); err != nil {
		t.Fatal(err)
	}
	objs, _, err := decodeTranslate(&r.request, r.slices)
	if err != nil {
		t.Fatal(err)
	}
	if got := objs.EndpointSlices[0].Service; got != "last" {
		t.Errorf("Service = %q, want %q", got, "last")
	}
}

// TestMalformedRequestCostsLittle: a request the fast path declines at its
// first object costs about its own size to read, however many objects it
// seems to hold, since nothing is sized from what is yet to be read. Its
// 100,000 objects each look like an EndpointSlice: the slice's tag, then
// nothing.
func TestMalformedRequestCostsLittle(t *testing.T) {
	wire := bytes.Repeat([]byte{2<<3 | byte(protowire.BytesType), 1, 3<<3 | byte(protowire.BytesType)}, 100_000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err := unmarshalRequest(mem.BufferSlice{mem.SliceBuffer(wire)}, new(wireTranslateRequest))
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a malformed request decoded")
	}
	if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(2*len(wire)); got > limit {
		t.Errorf("reading a %d-byte malformed request allocated %d bytes, want at most %d", len(wire), got, limit)
	}
}
