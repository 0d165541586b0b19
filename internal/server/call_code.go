package server

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// The call log and grpc_server_handled_total must carry the code the client
// got, and a handler's return value is not always it: a handler that
// ignores its context may return OK long after the client's deadline
// passed (the client got DeadlineExceeded) or the client cancelled (it got
// Canceled), and gRPC answers a stream itself when a RecvMsg or SendMsg
// fails on a message (over a size limit), before the handler returns.
// clientCodeUnary and clientCodeStream sit inside the logging and metrics
// interceptors and replace the handler's error by what the client got.
//
// A server Stop also cancels every call's context; its clients see the
// connection close (Unavailable) while the log says Canceled: the line is
// still right that the call did not finish.

func clientCodeUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	// Nothing is sent before the handler returns: a context over by now
	// means the client has stopped waiting.
	if ended := contextEnd(ctx); ended != nil {
		return nil, ended
	}
	return resp, err
}

// deadlineSlack: see contextEnd.
const deadlineSlack = 100 * time.Millisecond

// contextEnd is the status the client of the call of ctx got when ctx is
// over, or nil. The client's own timer fires first and it resets the
// stream, which the server sees as a cancel at about its own deadline (the
// client's deadline plus the latency, both ways): a call cancelled within
// deadlineSlack of its deadline, or after it, ended with DeadlineExceeded.
func contextEnd(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < deadlineSlack {
		err = context.DeadlineExceeded
	}
	return status.FromContextError(err).Err()
}

func clientCodeStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	watched := &answeredStream{ServerStream: ss}
	err := handler(srv, watched)
	if answered := watched.answered(); answered != nil {
		return answered
	}
	if ended := contextEnd(ss.Context()); ended != nil {
		return ended
	}
	return err
}

// answeredStream records the first error of gRPC's own RecvMsg or SendMsg:
// gRPC writes it to the client as the call's status at once (see RecvMsg
// and SendMsg in grpc's stream.go), so it is what the client got.
type answeredStream struct {
	grpc.ServerStream
	mu    sync.Mutex
	first error
}

func (s *answeredStream) RecvMsg(m any) error {
	return s.note(s.ServerStream.RecvMsg(m))
}

func (s *answeredStream) SendMsg(m any) error {
	return s.note(s.ServerStream.SendMsg(m))
}

// note records err unless it is the end of the stream or of the call: a
// RecvMsg or SendMsg that fails because the client cancelled (often having
// just got the status of another one's failure) or the deadline passed
// says nothing gRPC wrote to the client, and contextEnd tells those.
func (s *answeredStream) note(err error) error {
	if err != nil && !errors.Is(err, io.EOF) && !isCallEnd(err) {
		s.mu.Lock()
		if s.first == nil {
			s.first = err
		}
		s.mu.Unlock()
	}
	return err
}

func (s *answeredStream) answered() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}
