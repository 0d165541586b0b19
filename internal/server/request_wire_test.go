package server

import (
	"bytes"
	"fmt"
	"math/rand/v2"
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

// FuzzDecodeRequestWire holds the fast path to proto.Unmarshal: for any
// bytes, read as a TranslateRequest and as a SyncRequest, it either
// declines or builds the message proto.Unmarshal builds, and it never
// accepts bytes proto.Unmarshal refuses.
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
		checkWireEquivalence(t, data, &tributaryv1.TranslateRequest{})
		checkWireEquivalence(t, data, &tributaryv1.SyncRequest{})
		checkDirectEquivalence(t, data)
		checkDirectSyncEquivalence(t, data)
	})
}

// checkDirectSyncEquivalence is checkDirectEquivalence for a Sync stream's
// message: read as the server receives it, into a wireSyncRequest, a batch
// decodes (decodeBatch) to what proto.Unmarshal's message decodes to, the
// same objects and deletes or the same problems. It reports whether the
// fast path took data.
func checkDirectSyncEquivalence(t *testing.T, data []byte) bool {
	t.Helper()
	var want tributaryv1.SyncRequest
	unmarshalErr := proto.Unmarshal(data, &want)
	wire := bytes.Clone(data)
	var got wireSyncRequest
	if err := unmarshalRequest(mem.BufferSlice{mem.SliceBuffer(wire)}, &got); err != nil || got.endpoints == nil {
		return false
	}
	clear(wire)
	if unmarshalErr != nil {
		t.Fatalf("the direct fast path took %x as a SyncRequest, which proto.Unmarshal refuses: %v", data, unmarshalErr)
	}
	var gotProblems, wantProblems problems
	gotBatch := decodeBatch(got.request.GetBatch(), got.endpoints, &gotProblems)
	wantBatch := decodeBatch(want.GetBatch(), nil, &wantProblems)
	if errText(gotProblems.err()) != errText(wantProblems.err()) {
		t.Fatalf("%x: the direct fast path decodes the batch to the error %q, want %q", data, errText(gotProblems.err()), errText(wantProblems.err()))
	}
	if diff := cmp.Diff(wantBatch, gotBatch); diff != "" {
		t.Fatalf("%x: batch (-through protobuf +direct):\n%s", data, diff)
	}
	return true
}

// checkDirectEquivalence decodes data as the server decodes a Translate
// call's request, through the fast path into a wireTranslateRequest whose
// slices' endpoints are made straight from the wire, and checks that it
// declined or that decodeTranslate makes of it exactly what decodeRequest
// makes of proto.Unmarshal's message: the same objects and settings, or
// the same error. It reports whether the fast path took data.
func checkDirectEquivalence(t *testing.T, data []byte) bool {
	t.Helper()
	var want tributaryv1.TranslateRequest
	unmarshalErr := proto.Unmarshal(data, &want)
	// As in checkWireEquivalence: nothing decoded may point into the
	// wire's bytes.
	wire := bytes.Clone(data)
	var got wireTranslateRequest
	if got.endpoints = decodeDirect(mem.BufferSlice{mem.SliceBuffer(wire)}, func(d *wireDecoder, b []byte) bool { return d.translateRequest(b, &got.request) }); got.endpoints == nil {
		return false
	}
	clear(wire)
	if unmarshalErr != nil {
		t.Fatalf("the direct fast path took %x, which proto.Unmarshal refuses: %v", data, unmarshalErr)
	}
	gotObjs, gotSettings, gotErr := decodeTranslate(&got.request, got.endpoints)
	wantObjs, wantSettings, wantErr := decodeRequest(&want)
	if errText(gotErr) != errText(wantErr) {
		t.Fatalf("%x: the direct fast path decodes to the error %q, want %q", data, errText(gotErr), errText(wantErr))
	}
	if diff := cmp.Diff(wantSettings, gotSettings); diff != "" {
		t.Fatalf("%x: settings (-through protobuf +direct):\n%s", data, diff)
	}
	if diff := cmp.Diff(wantObjs, gotObjs); diff != "" {
		t.Fatalf("%x: objects (-through protobuf +direct):\n%s", data, diff)
	}
	return true
}

// checkWireEquivalence decodes data with the fast path into a message of
// want's type that already holds something (the fast path must replace it,
// as proto.Unmarshal does), and checks that it declined or built what
// proto.Unmarshal builds from data into want. It reports whether the fast
// path took data.
func checkWireEquivalence(t *testing.T, data []byte, want proto.Message) bool {
	t.Helper()
	wantErr := proto.Unmarshal(data, want)
	got := staleMessage(want)
	// The fast path reads a copy, which is then overwritten: the message
	// must not point into the wire's bytes, which gRPC reuses.
	wire := bytes.Clone(data)
	if !decodeRequestWire(wire, got) {
		return false
	}
	clear(wire)
	if wantErr != nil {
		t.Fatalf("the fast path took %x, which proto.Unmarshal refuses: %v", data, wantErr)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("the fast path decoded %x differently from proto.Unmarshal (-proto.Unmarshal +fast path):\n%s",
			data, cmp.Diff(want, got, protocmp.Transform()))
	}
	return true
}

// staleMessage is a message of m's type holding fields that no decoding
// of other bytes may keep.
func staleMessage(m proto.Message) proto.Message {
	switch m.(type) {
	case *tributaryv1.TranslateRequest:
		return &tributaryv1.TranslateRequest{
			Settings:    &tributaryv1.Settings{XdsClusterName: "stale"},
			Objects:     []*tributaryv1.KubernetesObject{serviceObject(meta("ns", "stale"))},
			IncludeJson: true,
		}
	case *tributaryv1.SyncRequest:
		return &tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{IncludeJson: true}}}
	}
	panic("no stale message for " + messageName(m))
}

// TestDecodeRequestWireTakesRealisticRequests: the fast path decodes the
// requests clients send, the standard workload's and generated ones, and
// the well-formed odd ones, instead of leaving them to protobuf.
func TestDecodeRequestWireTakesRealisticRequests(t *testing.T) {
	requests := append(realisticRequests(t), oddAcceptedRequests()...)
	for i, m := range requests {
		empty := m.ProtoReflect().New().Interface()
		if !checkWireEquivalence(t, marshalWire(t, m), empty) {
			t.Errorf("request %d (%s): the fast path declined it", i, messageName(m))
		}
		// The direct path also takes every realistic request; of the odd
		// ones it declines the one with an address too long (see
		// TestDirectDeclinesWhatTheDecoderReports).
		realistic := i < len(requests)-len(oddAcceptedRequests())
		switch m.(type) {
		case *tributaryv1.TranslateRequest:
			if !checkDirectEquivalence(t, marshalWire(t, m)) && realistic {
				t.Errorf("request %d: the direct fast path declined it", i)
			}
		case *tributaryv1.SyncRequest:
			if !checkDirectSyncEquivalence(t, marshalWire(t, m)) && realistic {
				t.Errorf("request %d: the direct fast path declined it", i)
			}
		}
	}
}

// TestDecodeRequestWireDeclinesOddEncodings: what is not the plain
// encoding is left to protobuf, and the codec's path then gives what
// protobuf gives, the message or the error.
func TestDecodeRequestWireDeclinesOddEncodings(t *testing.T) {
	translate, sync := declinedRequests(t)
	for _, cases := range []struct {
		cases []declinedCase
		as    func() proto.Message
	}{
		{translate, func() proto.Message { return &tributaryv1.TranslateRequest{} }},
		{sync, func() proto.Message { return &tributaryv1.SyncRequest{} }},
	} {
		for _, c := range cases.cases {
			t.Run(c.name, func(t *testing.T) {
				if checkWireEquivalence(t, c.wire, cases.as()) {
					t.Errorf("the fast path took %x as a %s", c.wire, messageName(cases.as()))
				}
				checkUnmarshalRequest(t, c.wire, cases.as)
			})
		}
	}
}

// TestDirectDeclinesWhatTheDecoderReports: an endpoint with more addresses
// than Kubernetes allows, or an address too long, is left to protobuf by
// the direct fast path (the message-building one takes it), so that the
// decoder reports it as it always has, field and all.
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
			if !checkWireEquivalence(t, wire, &tributaryv1.TranslateRequest{}) {
				t.Fatal("the message-building fast path declined the request")
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
	if err := unmarshalRequest(mem.BufferSlice{mem.SliceBuffer(marshalWire(t, first))}, &r); err != nil || r.endpoints == nil {
		t.Fatalf("first request: %v, endpoints %v; want it taken by the direct path", err, r.endpoints)
	}
	if err := unmarshalRequest(mem.BufferSlice{mem.SliceBuffer(declined)}, &r); err != nil {
		t.Fatal(err)
	}
	objs, _, err := decodeTranslate(&r.request, r.endpoints)
	if err != nil {
		t.Fatal(err)
	}
	if got := objs.EndpointSlices[0].Endpoints; len(got) != 1 || got[0].Address != "10.9.9.9" {
		t.Errorf("endpoints after the second request: %+v, want the second request's one", got)
	}
}

// TestUnmarshalRequestSplitBuffers: the codec's path decodes a request
// that arrives in several buffers, as gRPC hands over a large one, as
// protobuf does.
func TestUnmarshalRequestSplitBuffers(t *testing.T) {
	for _, m := range append(realisticRequests(t), oddAcceptedRequests()...) {
		empty := func() proto.Message { return m.ProtoReflect().New().Interface() }
		checkUnmarshalRequest(t, marshalWire(t, m), empty)
	}
}

// checkUnmarshalRequest decodes wire, split in three buffers, through
// unmarshalRequest and through gRPC's proto codec, and wants the same
// message or the same error.
func checkUnmarshalRequest(t *testing.T, wire []byte, fresh func() proto.Message) {
	t.Helper()
	split := func() mem.BufferSlice {
		third := len(wire) / 3
		return mem.BufferSlice{
			mem.SliceBuffer(bytes.Clone(wire[:third])),
			mem.SliceBuffer(bytes.Clone(wire[third : 2*third])),
			mem.SliceBuffer(bytes.Clone(wire[2*third:])),
		}
	}
	got, want := fresh(), fresh()
	gotErr, wantErr := unmarshalRequest(split(), got), protoCodecV2.Unmarshal(split(), want)
	if errText(gotErr) != errText(wantErr) {
		t.Fatalf("%x as %s: error %q, want %q", wire, messageName(got), errText(gotErr), errText(wantErr))
	}
	if wantErr == nil && !proto.Equal(got, want) {
		t.Fatalf("%x as %s (-want +got):\n%s", wire, messageName(got), cmp.Diff(want, got, protocmp.Transform()))
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
	if !decodeRequestWire(fast, &tributaryv1.TranslateRequest{}) {
		t.Fatal("the fast path declined the request")
	}
	if decodeRequestWire(viaProtobuf, &tributaryv1.TranslateRequest{}) {
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
		{"truncated", realistic[:len(realistic)-1]},
		{"truncated endpoint", requestWithEndpoint(address[:len(address)-2])},
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
			name      string
			unmarshal func(mem.BufferSlice, any) error
		}{{"protobuf", protoCodecV2.Unmarshal}, {"wire", unmarshalRequest}} {
			b.Run(fmt.Sprintf("N=%d/M=%d/%s", size.n, size.m, decoder.name), func(b *testing.B) {
				b.ReportAllocs()
				cpu, ops := cputime.OfProcess(), 0
				for b.Loop() {
					ops++
					var req tributaryv1.TranslateRequest
					if err := decoder.unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, &req); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(cputime.PerOp(cpu, ops), "cpu-ns/op")
			})
		}
	}
}
