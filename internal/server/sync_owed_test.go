package server

import (
	"errors"
	"io"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// rawCodec sends []byte messages as they are and receives them as they
// came, so a test can put bytes on a stream that no client would encode.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

// rawSync opens a Sync stream on conn that sends and receives raw bytes.
func rawSync(t *testing.T, conn *grpc.ClientConn) grpc.ClientStream {
	t.Helper()
	stream, err := conn.NewStream(t.Context(), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true},
		tributaryv1.TranslationService_Sync_FullMethodName, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

func sendRaw(t *testing.T, stream grpc.ClientStream, b []byte) {
	t.Helper()
	if err := stream.SendMsg(&b); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("SendMsg: %v", err)
	}
}

func marshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// junkMessage never decodes: field 1 of wire type 7, which does not exist.
var junkMessage = []byte{0x0f, 1, 2, 3}

// TestSyncOwedAnswerBeforeMalformedMessage: a message that does not decode,
// sent right after a batch, ends the stream with InvalidArgument, but only
// once the batch's delta has been sent: the client learns what the server
// applied. (Before the admission codec, gRPC answered the malformed message
// itself, at once, and the delta was lost whenever the stream ended first.)
func TestSyncOwedAnswerBeforeMalformedMessage(t *testing.T) {
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	for range 20 { // the old race lost the delta most of the time, not always
		stream := rawSync(t, conn)
		sendRaw(t, stream, marshal(t, &tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}}))
		sendRaw(t, stream, marshal(t, &tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: batch(1, plainES("h2c"), service("a"), slice("a", "10.0.0.1"))}}))
		sendRaw(t, stream, junkMessage)

		var reply []byte
		if err := stream.RecvMsg(&reply); err != nil {
			t.Fatalf("the delta of batch 1 was not sent: the stream ended with %v", err)
		}
		var resp tributaryv1.SyncResponse
		if err := proto.Unmarshal(reply, &resp); err != nil {
			t.Fatal(err)
		}
		if d := resp.GetDelta(); d.GetBatchId() != 1 || !d.GetFullState() || len(d.GetClusters()) != 1 {
			t.Fatalf("got %v, want the full state after batch 1, with one Cluster", &resp)
		}
		err := stream.RecvMsg(&reply)
		const want = "cannot unmarshal the message as tributary.v1.SyncRequest: proto: cannot parse invalid wire-format data"
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || st.Message() != want {
			t.Fatalf("the stream ended with %v, want InvalidArgument %q", err, want)
		}
	}
}
