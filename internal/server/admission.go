package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/internal/source"
)

// DecodeAmplification is how many bytes of memory a request costs the
// server per byte on the wire while it is in flight: the decoded protobuf
// and the pipeline's view of it. BenchmarkDecodeAmplification measures,
// for EndpointSlices (the bulk of every large request), 7.9 bytes allocated
// per wire byte to decode with protobuf, 8.9 to decode and check, 10.1 for
// the whole Translate. The server's own reading of a plainly encoded
// Translate request (wireTranslateRequest) takes 1.7 to decode and check,
// but a request is admitted before anyone knows which path it will take,
// and protobuf's is the costlier. The garbage collector lets the heap grow
// to twice what is live before it collects (GOGC=100) unless GOMEMLIMIT
// makes it collect sooner, and RSS adds the runtime's own overhead: a 62 MB
// request was seen to peak at 1.98 GB of RSS, 32 times its size. 32 covers
// that.
const DecodeAmplification = 32

// DefaultMaxInflightBytes bounds the memory of the requests in flight when
// GOMEMLIMIT is not set: room for one request of DefaultMaxMsgSize.
const DefaultMaxInflightBytes = DecodeAmplification * DefaultMaxMsgSize

// inflightBudget is the memory the server's requests in flight may cost
// together (see DecodeAmplification), shared by every call.
type inflightBudget struct {
	max  int64
	used atomic.Int64
}

// reserve takes n bytes of the budget, or reports that they do not fit. It
// never waits: a request that does not fit now is refused, and the client
// retries later or elsewhere, instead of the server queueing memory.
func (b *inflightBudget) reserve(n int64) bool {
	if b.used.Add(n) > b.max {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *inflightBudget) release(n int64) { b.used.Add(-n) }

// admission is the codec's verdict on one received message: the bytes of
// the budget it holds, or the error that refuses it (then it holds nothing
// and the message is left empty).
type admission struct {
	bytes   int64
	refused error
}

// admissionCodec is gRPC's proto codec with the in-flight budget in front:
// it knows a message's wire length before decoding it, reserves
// DecodeAmplification times that, and decodes only what fits. gRPC turns
// any error of a codec into Internal ("grpc: failed to unmarshal the
// received message", see recv in grpc's rpc_util.go), so a refusal is not
// returned from Unmarshal: the message stays empty and the verdict waits in
// decoded, under the message's pointer, for the call's callAdmission to
// take it (see admissionStats), and admitUnary or admittedStream answer the
// client with the refusal (ResourceExhausted for the budget,
// InvalidArgument for bytes that do not decode). For a Sync stream this
// also lets the session send the answers it owes before the stream ends.
type admissionCodec struct {
	budget *inflightBudget
	// decoded holds a verdict from Unmarshal until the call takes it:
	// at the InPayload that gRPC reports right after a message is
	// decoded, or at the call's End for the one message gRPC decodes
	// without an InPayload (the second message of a call that takes one,
	// read into the same pointer only to refuse the call). Every entry is
	// gone once its call has ended.
	decoded sync.Map // message pointer → admission
}

var protoCodecV2 = encoding.GetCodecV2(grpcproto.Name)

func (*admissionCodec) Name() string { return grpcproto.Name }

func (*admissionCodec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(*wireTranslateResponse); ok {
		return r.marshal()
	}
	return protoCodecV2.Marshal(v)
}

func (c *admissionCodec) Unmarshal(data mem.BufferSlice, v any) error {
	wire := data.Len()
	cost := int64(wire) * DecodeAmplification
	verdict := admission{bytes: cost}
	if !c.budget.reserve(cost) {
		verdict = admission{refused: status.Errorf(codes.ResourceExhausted,
			"the server has no memory for a request of %d bytes now (requests in flight may use %d bytes, --max-inflight-bytes, and a request costs about %d times its size); retry later",
			wire, c.budget.max, DecodeAmplification)}
	} else if err := unmarshalRequest(data, v); err != nil {
		c.budget.release(cost)
		// protobuf-go puts a random mix of spaces and no-break spaces in
		// its errors, against matching on them: a status message is
		// better read as plain text.
		reason := strings.ReplaceAll(err.Error(), "\u00a0", " ")
		verdict = admission{refused: status.Errorf(codes.InvalidArgument, "cannot unmarshal the message as %s: %s", messageName(v), source.Truncate(reason))}
	}
	// A verdict not yet taken on the same pointer (not seen from gRPC,
	// which reports every decode but the refused second one) is given
	// back rather than lost.
	if old, loaded := c.decoded.Swap(v, verdict); loaded {
		c.budget.release(old.(admission).bytes)
	}
	return nil
}

// take removes and returns the verdict on m; a message the codec did not
// decode holds nothing.
func (c *admissionCodec) take(m any) admission {
	v, ok := c.decoded.LoadAndDelete(m)
	if !ok {
		return admission{}
	}
	return v.(admission)
}

func messageName(v any) string {
	switch r := v.(type) {
	case *wireTranslateRequest:
		v = &r.request
	case *wireSyncRequest:
		v = &r.request
	}
	if m, ok := v.(proto.Message); ok {
		return string(m.ProtoReflect().Descriptor().FullName())
	}
	return fmt.Sprintf("%T", v)
}

// responseAmplification is how many bytes a Translate response costs the
// server per byte of its estimated size (translate.Estimator, an upper
// bound) while the call is in flight: the resources built, then the
// message gRPC marshals from them before the call ends.
const responseAmplification = 2

// callAdmission is one call's account with the budget: the share of the
// last message received that the call has not given back yet. It is the
// one owner of the release: a message's share is given back when the call
// is done with it (the next message is asked for, or Sync has applied or
// rejected it: releaseMessage) or, whatever happened, when the call ends,
// which gRPC reports to admissionStats on every path, including those that
// never reach an interceptor (a stream reset before the request's end, a
// second message on a call that takes one).
type callAdmission struct {
	codec *admissionCodec

	// mu guards the rest: the receiving goroutine (Sync's receiver, in
	// RecvMsg), the handler's and gRPC's End may all touch it.
	mu sync.Mutex
	// last is the last message received; held its share of the budget
	// not yet given back, and refused the codec's refusal of it.
	last    any
	held    int64
	refused error
	// response is what the call holds for its response (reserveResponse),
	// given back when the call ends: after the response is sent.
	response int64
	// ended is set at the call's End: what is received after (a
	// receiving goroutine still in RecvMsg) is given back at once.
	ended bool
}

type callAdmissionKey struct{}

func callAdmissionOf(ctx context.Context) *callAdmission {
	c, _ := ctx.Value(callAdmissionKey{}).(*callAdmission)
	return c
}

// received takes the codec's verdict on m, just decoded.
func (c *callAdmission) received(m any) {
	verdict := c.codec.take(m)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		c.codec.budget.release(verdict.bytes)
		return
	}
	c.last, c.refused = m, verdict.refused
	c.held += verdict.bytes
}

// refusal is the codec's refusal of m, if m is the last message received.
func (c *callAdmission) refusal(m any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last != m {
		return nil
	}
	return c.refused
}

// done gives m's share back, if m is the last message received and its
// share is still held; a second call for the same message does nothing.
func (c *callAdmission) done(m any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == m {
		c.codec.budget.release(c.held)
		c.held = 0
	}
}

// end gives back everything the call holds, and the verdict on a message
// gRPC decoded without reporting it.
func (c *callAdmission) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.codec.budget.release(c.held + c.response)
	c.held, c.response, c.ended = 0, 0, true
	if c.last != nil {
		c.codec.budget.release(c.codec.take(c.last).bytes)
	}
}

// reserveResponse takes responseAmplification times estimate, a
// response's estimated size, from the budget until the call ends, or
// refuses the call with ResourceExhausted when that does not fit now.
func (c *callAdmission) reserveResponse(estimate int64) error {
	n := estimate * responseAmplification
	if !c.codec.budget.reserve(n) {
		return status.Errorf(codes.ResourceExhausted,
			"the server has no memory now for a response of about %d bytes (requests and responses in flight may use %d bytes, --max-inflight-bytes; a response costs about %d times its size); retry later",
			estimate, c.codec.budget.max, responseAmplification)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		c.codec.budget.release(n)
		return nil
	}
	c.response += n
	return nil
}

// admissionStats gives every call a callAdmission and tells it what gRPC
// reports: each message decoded (InPayload, right after Unmarshal on the
// same goroutine) and the call's End.
type admissionStats struct{ codec *admissionCodec }

var _ stats.Handler = admissionStats{}

func (a admissionStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, callAdmissionKey{}, &callAdmission{codec: a.codec})
}

func (admissionStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	call := callAdmissionOf(ctx)
	if call == nil {
		return
	}
	switch s := s.(type) {
	case *stats.InPayload:
		call.received(s.Payload)
	case *stats.End:
		call.end()
	}
}

func (admissionStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (admissionStats) HandleConn(context.Context, stats.ConnStats) {}

// releaseMessage gives the share of m, a message of the call of ctx, back
// to the budget: the handler is done with it.
func releaseMessage(ctx context.Context, m any) {
	if call := callAdmissionOf(ctx); call != nil {
		call.done(m)
	}
}

// admitUnary answers a unary call whose request the codec refused with the
// refusal. It runs inside the logging and metrics interceptors, so a
// refused call is logged and counted with the code the client got. The
// request's share is given back at the call's End.
func admitUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if call := callAdmissionOf(ctx); call != nil {
		if err := call.refusal(req); err != nil {
			return nil, err
		}
	}
	return handler(ctx, req)
}

// admitStream makes every RecvMsg of a stream answer a refused message
// with its refusal, and gives a message's share of the budget back when
// the next one is asked for: a handler asks for the next message once it
// is done with the last (Sync gives it back sooner, see releaseMessage).
func admitStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	call := callAdmissionOf(ss.Context())
	if call == nil {
		return handler(srv, ss)
	}
	return handler(srv, &admittedStream{ServerStream: ss, call: call})
}

type admittedStream struct {
	grpc.ServerStream
	call *callAdmission
	// previous is the message the last RecvMsg received into; RecvMsg
	// runs on one goroutine at a time.
	previous any
}

func (s *admittedStream) RecvMsg(m any) error {
	if s.previous != nil {
		s.call.done(s.previous)
	}
	s.previous = m
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return s.call.refusal(m)
}
