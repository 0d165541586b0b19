package server

import (
	"context"
	"errors"
	"io"
	"testing"

	"google.golang.org/grpc"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// syncClient drives one Sync stream from the test's goroutine.
type syncClient struct {
	t      *testing.T
	stream grpc.BidiStreamingClient[tributaryv1.SyncRequest, tributaryv1.SyncResponse]
}

// openSync opens a Sync stream on conn and sends its SyncStart.
func openSync(ctx context.Context, t *testing.T, conn *grpc.ClientConn, settings *tributaryv1.Settings) *syncClient {
	t.Helper()
	c := openStream(ctx, t, conn)
	c.sendRequest(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{Settings: settings}}})
	return c
}

// openUnwelcome opens a Sync stream that the server ends without reading
// it (over the session limit, or while draining) and sends its start: the
// stream may have ended before the start goes out, so io.EOF from the send
// is part of the outcome, which Recv tells.
func openUnwelcome(t *testing.T, conn *grpc.ClientConn) *syncClient {
	t.Helper()
	c := openStream(t.Context(), t, conn)
	err := c.stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}})
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("Send: %v", err)
	}
	return c
}

// openStream opens a Sync stream and sends nothing.
func openStream(ctx context.Context, t *testing.T, conn *grpc.ClientConn) *syncClient {
	t.Helper()
	stream, err := tributaryv1.NewTranslationServiceClient(conn).Sync(ctx)
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	return &syncClient{t: t, stream: stream}
}

func (c *syncClient) sendRequest(req *tributaryv1.SyncRequest) {
	c.t.Helper()
	if err := c.stream.Send(req); err != nil {
		c.t.Fatalf("Send: %v", err)
	}
}

func (c *syncClient) send(b *tributaryv1.SyncBatch) {
	c.t.Helper()
	c.sendRequest(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: b}})
}

func (c *syncClient) recv() *tributaryv1.SyncResponse {
	c.t.Helper()
	resp, err := c.stream.Recv()
	if err != nil {
		c.t.Fatalf("Recv: %v", err)
	}
	return resp
}

// delta receives one response, which must be a delta.
func (c *syncClient) delta() *tributaryv1.SyncDelta {
	c.t.Helper()
	resp := c.recv()
	if resp.GetDelta() == nil {
		c.t.Fatalf("got %v, want a delta", resp)
	}
	return resp.GetDelta()
}

// end reads the stream to its end, which must come without another
// response, and returns its status (nil for OK).
func (c *syncClient) end() error {
	c.t.Helper()
	resp, err := c.stream.Recv()
	if err == nil {
		c.t.Fatalf("got %v, want the end of the stream", resp)
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// closeAndEnd half-closes the stream and expects it to end OK with no
// further response.
func (c *syncClient) closeAndEnd() {
	c.t.Helper()
	if err := c.stream.CloseSend(); err != nil {
		c.t.Fatalf("CloseSend: %v", err)
	}
	if err := c.end(); err != nil {
		c.t.Fatalf("stream ended with %v, want OK", err)
	}
}

func batch(id uint64, upserts ...*tributaryv1.KubernetesObject) *tributaryv1.SyncBatch {
	return &tributaryv1.SyncBatch{Id: id, Upserts: upserts}
}

func deleteOf(kind tributaryv1.ObjectKind, ns, name string) *tributaryv1.ObjectReference {
	return &tributaryv1.ObjectReference{Kind: kind, Namespace: ns, Name: name}
}
