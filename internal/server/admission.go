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
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/internal/source"
)

// DecodeAmplification is how many bytes of memory a request costs the
// server per byte on the wire while it is in flight: the decoded protobuf
// and the pipeline's view of it. BenchmarkDecodeAmplification measures,
// for EndpointSlices (the bulk of every large request), 7.9 bytes allocated
// per wire byte to decode, 9.8 to decode and check, 11.2 for the whole
// Translate; the garbage collector lets the heap grow to twice what is live
// before it collects (GOGC=100) unless GOMEMLIMIT makes it collect sooner,
// and RSS adds the runtime's own overhead: a 62 MB request was seen to peak
// at 1.98 GB of RSS, 32 times its size. 32 covers that.
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

// admission is the codec's verdict on one received message, for the
// interceptors to act on: the bytes of the budget it holds, or the error
// that refuses it (then it holds nothing and the message is left empty).
type admission struct {
	bytes   int64
	refused error
}

// admissionCodec is gRPC's proto codec with the in-flight budget in front:
// it knows a message's wire length before decoding it, reserves
// DecodeAmplification times that, and decodes only what fits. gRPC turns
// any error of a codec into Internal ("grpc: failed to unmarshal the
// received message", see recv in grpc's rpc_util.go), so a refusal is not
// returned from Unmarshal: the message stays empty, the verdict is kept
// under the message's pointer, and admitUnary or admittedStream, which see
// the same pointer right after, answer the client with the refusal
// (ResourceExhausted for the budget, InvalidArgument for bytes that do not
// decode). For a Sync stream this also lets the session send the answers it
// owes before the stream ends.
type admissionCodec struct {
	budget   *inflightBudget
	verdicts sync.Map // message pointer → admission
}

var protoCodecV2 = encoding.GetCodecV2(grpcproto.Name)

func (*admissionCodec) Name() string { return grpcproto.Name }

func (*admissionCodec) Marshal(v any) (mem.BufferSlice, error) { return protoCodecV2.Marshal(v) }

func (c *admissionCodec) Unmarshal(data mem.BufferSlice, v any) error {
	wire := data.Len()
	cost := int64(wire) * DecodeAmplification
	verdict := admission{bytes: cost}
	if !c.budget.reserve(cost) {
		verdict = admission{refused: status.Errorf(codes.ResourceExhausted,
			"the server has no memory for a request of %d bytes now (requests in flight may use %d bytes, --max-inflight-bytes, and a request costs about %d times its size); retry later",
			wire, c.budget.max, DecodeAmplification)}
	} else if err := protoCodecV2.Unmarshal(data, v); err != nil {
		c.budget.release(cost)
		// protobuf-go puts a random mix of spaces and no-break spaces in
		// its errors, against matching on them: a status message is
		// better read as plain text.
		reason := strings.ReplaceAll(err.Error(), "\u00a0", " ")
		verdict = admission{refused: status.Errorf(codes.InvalidArgument, "cannot unmarshal the message as %s: %s", messageName(v), source.Truncate(reason))}
	}
	// A message decoded again (a second message on a stream that takes
	// one, which gRPC reads into the same pointer) gives back what the
	// first one held.
	if old, loaded := c.verdicts.Swap(v, verdict); loaded {
		c.budget.release(old.(admission).bytes)
	}
	return nil
}

// take removes and returns the verdict on m; a message the codec did not
// decode holds nothing.
func (c *admissionCodec) take(m any) admission {
	v, ok := c.verdicts.LoadAndDelete(m)
	if !ok {
		return admission{}
	}
	return v.(admission)
}

func messageName(v any) string {
	if m, ok := v.(proto.Message); ok {
		return string(m.ProtoReflect().Descriptor().FullName())
	}
	return fmt.Sprintf("%T", v)
}

// admitUnary answers a unary call whose request the codec refused with the
// refusal, and gives the request's share of the budget back when the call
// ends. It runs inside the logging and metrics interceptors, so a refused
// call is logged and counted with the code the client got.
func (c *admissionCodec) admitUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	verdict := c.take(req)
	defer c.budget.release(verdict.bytes)
	if verdict.refused != nil {
		return nil, verdict.refused
	}
	return handler(ctx, req)
}

// admitStream makes every RecvMsg of a stream answer a refused message
// with its refusal, and gives a message's share of the budget back when
// the next one is asked for or the call ends: a handler asks for the next
// message once it is done with the last.
func (c *admissionCodec) admitStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	wrapped := &admittedStream{ServerStream: ss, codec: c}
	defer wrapped.end()
	return handler(srv, wrapped)
}

type admittedStream struct {
	grpc.ServerStream
	codec *admissionCodec

	// mu guards held and ended: RecvMsg runs on a goroutine of the
	// handler's (Sync's receiver), which may still be in it when the
	// call ends.
	mu    sync.Mutex
	held  int64
	ended bool
}

func (s *admittedStream) RecvMsg(m any) error {
	s.mu.Lock()
	s.codec.budget.release(s.held)
	s.held = 0
	s.mu.Unlock()
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	verdict := s.codec.take(m)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		s.codec.budget.release(verdict.bytes)
	} else {
		s.held = verdict.bytes
	}
	return verdict.refused
}

// end gives back what the last message held.
func (s *admittedStream) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codec.budget.release(s.held)
	s.held, s.ended = 0, true
}
