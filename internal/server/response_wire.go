package server

import (
	"fmt"
	"unicode/utf8"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/translate"
)

// wireTranslateResponse is a Translate answer that the codec writes
// straight from the translation's Result (see marshal): the counterpart of
// wireTranslateRequest. Built as messages and marshalled by protobuf, the
// answer to 10000 ExtensionServices cost a tenth of the call, mostly in
// reflection and in checking again, string by string, UTF-8 that the
// request's decoding had checked.
//
// Its bytes are exactly those of proto.Marshal(encodeResult(result))
// (TestWireTranslateResponse, FuzzWireTranslateResponse); an answer with
// protojson goes the message way (the JSON is rendered from messages).
type wireTranslateResponse struct {
	result *translate.Result
}

// Field numbers of tributary.v1's answer messages and of Any, as the
// .proto files number them.
const (
	responseClustersField               = 1 // TranslateResponse.clusters
	responseClusterLoadAssignmentsField = 2 // TranslateResponse.cluster_load_assignments
	responseStatusesField               = 3 // TranslateResponse.statuses

	resourceNameField     = 1 // Resource.name
	resourceVersionField  = 2 // Resource.version
	resourceResourceField = 3 // Resource.resource (an Any)
	anyTypeURLField       = 1 // Any.type_url
	anyValueField         = 2 // Any.value

	statusNamespaceField       = 1 // ExtensionServiceStatus.namespace
	statusNameField            = 2 // ExtensionServiceStatus.name
	statusConditionsField      = 3 // ExtensionServiceStatus.conditions
	statusClusterNameField     = 4 // ExtensionServiceStatus.cluster_name
	statusResponseTimeoutField = 5 // ExtensionServiceStatus.response_timeout
	statusAvailabilityField    = 6 // ExtensionServiceStatus.availability

	conditionTypeField               = 1 // DetailedCondition.type
	conditionStatusField             = 2 // DetailedCondition.status
	conditionObservedGenerationField = 3 // DetailedCondition.observed_generation
	conditionReasonField             = 4 // DetailedCondition.reason
	conditionMessageField            = 5 // DetailedCondition.message
	conditionErrorsField             = 6 // DetailedCondition.errors
	conditionWarningsField           = 7 // DetailedCondition.warnings

	subConditionTypeField    = 1 // SubCondition.type
	subConditionStatusField  = 2 // SubCondition.status
	subConditionReasonField  = 3 // SubCondition.reason
	subConditionMessageField = 4 // SubCondition.message

	availabilityServiceField        = 1 // TargetAvailability.service
	availabilityPortField           = 2 // TargetAvailability.port
	availabilityReadyEndpointsField = 3 // TargetAvailability.ready_endpoints
	availabilityWeightField         = 4 // TargetAvailability.weight
	availabilityReasonField         = 5 // TargetAvailability.reason
)

// marshal encodes the answer into one buffer of its exact size, pooled
// when it is large, as gRPC's own codec does. Like protobuf, it refuses a
// string that is not UTF-8.
func (r *wireTranslateResponse) marshal() (mem.BufferSlice, error) {
	size := sizeTranslateResponse(r.result)
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := appendTranslateResponse(make([]byte, 0, size), r.result)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	b, err := appendTranslateResponse((*buf)[:0], r.result)
	if err != nil {
		pool.Put(buf)
		return nil, err
	}
	*buf = b
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

// sizeTranslateResponse is the length of res's encoding.
func sizeTranslateResponse(res *translate.Result) int {
	n := 0
	for i := range res.Clusters {
		n += sizeNested(sizeResource(&res.Clusters[i], resourcev3.ClusterType))
	}
	for i := range res.ClusterLoadAssignments {
		n += sizeNested(sizeResource(&res.ClusterLoadAssignments[i], resourcev3.EndpointType))
	}
	for i := range res.Statuses {
		n += sizeNested(sizeStatus(&res.Statuses[i]))
	}
	return n
}

// appendTranslateResponse appends res's encoding to b, or fails on a
// string that is not UTF-8.
func appendTranslateResponse(b []byte, res *translate.Result) ([]byte, error) {
	e := responseEncoder{b: b}
	for i := range res.Clusters {
		e.resource(responseClustersField, &res.Clusters[i], resourcev3.ClusterType)
	}
	for i := range res.ClusterLoadAssignments {
		e.resource(responseClusterLoadAssignmentsField, &res.ClusterLoadAssignments[i], resourcev3.EndpointType)
	}
	for i := range res.Statuses {
		e.status(&res.Statuses[i])
	}
	return e.b, e.err
}

// responseEncoder appends fields to b; err is the first string found not
// to be UTF-8.
type responseEncoder struct {
	b   []byte
	err error
}

// The sizes of fields and messages, as protobuf omits a proto3 scalar at
// its zero value. Every field number here is below 16: its tag is a byte.

func sizeString(s string) int {
	if s == "" {
		return 0
	}
	return 1 + protowire.SizeBytes(len(s))
}

func sizeVarint(v uint64) int {
	if v == 0 {
		return 0
	}
	return 1 + protowire.SizeVarint(v)
}

// sizeNested is the size of a message field whose message is n bytes: a
// message that is set is written even when it is empty.
func sizeNested(n int) int { return 1 + protowire.SizeBytes(n) }

func sizeResource(r *translate.Resource, typeURL string) int {
	return sizeString(r.Name) + sizeString(r.Version) + sizeNested(sizeAny(r.Body, typeURL))
}

func sizeAny(body []byte, typeURL string) int {
	n := sizeString(typeURL)
	if len(body) > 0 {
		n += 1 + protowire.SizeBytes(len(body))
	}
	return n
}

func sizeStatus(st *model.Status) int {
	n := sizeString(st.Namespace) + sizeString(st.Name) + sizeNested(sizeCondition(&st.Condition)) +
		sizeString(st.ClusterName) + sizeString(st.ResponseTimeout)
	for i := range st.Availability {
		n += sizeNested(sizeAvailability(&st.Availability[i]))
	}
	return n
}

func sizeCondition(c *model.Condition) int {
	n := sizeString(c.Type) + sizeString(c.Status) + sizeVarint(uint64(c.ObservedGeneration)) +
		sizeString(c.Reason) + sizeString(c.Message)
	for i := range c.Errors {
		n += sizeNested(sizeSubCondition(&c.Errors[i]))
	}
	for i := range c.Warnings {
		n += sizeNested(sizeSubCondition(&c.Warnings[i]))
	}
	return n
}

func sizeSubCondition(sc *model.SubCondition) int {
	return sizeString(sc.Type) + sizeString(sc.Status) + sizeString(sc.Reason) + sizeString(sc.Message)
}

func sizeAvailability(a *model.TargetAvailability) int {
	// An int32 is written as its int64: a negative one takes ten bytes.
	return sizeString(a.Service) + sizeVarint(uint64(int64(a.Port))) + sizeVarint(uint64(a.ReadyEndpoints)) +
		sizeVarint(uint64(a.Weight)) + sizeString(a.Reason)
}

// str appends string field num, left out when s is empty.
func (e *responseEncoder) str(num protowire.Number, s string) {
	if s == "" {
		return
	}
	if e.err == nil && !utf8.ValidString(s) {
		e.err = fmt.Errorf("string field %d of the response (%.40q) is not valid UTF-8", num, s)
	}
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendString(e.b, s)
}

// varint appends varint field num, left out when v is 0.
func (e *responseEncoder) varint(num protowire.Number, v uint64) {
	if v == 0 {
		return
	}
	e.b = protowire.AppendTag(e.b, num, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, v)
}

// nested starts message field num of n bytes; its fields follow.
func (e *responseEncoder) nested(num protowire.Number, n int) {
	e.b = protowire.AppendTag(e.b, num, protowire.BytesType)
	e.b = protowire.AppendVarint(e.b, uint64(n))
}

func (e *responseEncoder) resource(num protowire.Number, r *translate.Resource, typeURL string) {
	e.nested(num, sizeResource(r, typeURL))
	e.str(resourceNameField, r.Name)
	e.str(resourceVersionField, r.Version)
	e.nested(resourceResourceField, sizeAny(r.Body, typeURL))
	e.str(anyTypeURLField, typeURL)
	if len(r.Body) > 0 {
		e.b = protowire.AppendTag(e.b, anyValueField, protowire.BytesType)
		e.b = protowire.AppendBytes(e.b, r.Body)
	}
}

func (e *responseEncoder) status(st *model.Status) {
	e.nested(responseStatusesField, sizeStatus(st))
	e.str(statusNamespaceField, st.Namespace)
	e.str(statusNameField, st.Name)
	c := &st.Condition
	e.nested(statusConditionsField, sizeCondition(c))
	e.str(conditionTypeField, c.Type)
	e.str(conditionStatusField, c.Status)
	e.varint(conditionObservedGenerationField, uint64(c.ObservedGeneration))
	e.str(conditionReasonField, c.Reason)
	e.str(conditionMessageField, c.Message)
	for i := range c.Errors {
		e.subCondition(conditionErrorsField, &c.Errors[i])
	}
	for i := range c.Warnings {
		e.subCondition(conditionWarningsField, &c.Warnings[i])
	}
	e.str(statusClusterNameField, st.ClusterName)
	e.str(statusResponseTimeoutField, st.ResponseTimeout)
	for i := range st.Availability {
		a := &st.Availability[i]
		e.nested(statusAvailabilityField, sizeAvailability(a))
		e.str(availabilityServiceField, a.Service)
		e.varint(availabilityPortField, uint64(int64(a.Port)))
		e.varint(availabilityReadyEndpointsField, uint64(a.ReadyEndpoints))
		e.varint(availabilityWeightField, uint64(a.Weight))
		e.str(availabilityReasonField, a.Reason)
	}
}

func (e *responseEncoder) subCondition(num protowire.Number, sc *model.SubCondition) {
	e.nested(num, sizeSubCondition(sc))
	e.str(subConditionTypeField, sc.Type)
	e.str(subConditionStatusField, sc.Status)
	e.str(subConditionReasonField, sc.Reason)
	e.str(subConditionMessageField, sc.Message)
}
