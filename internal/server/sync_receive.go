package server

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// receiver reads a Sync stream on a goroutine of its own, since Recv
// cannot be interrupted: the loop asks for one message at a time and gets
// it, or Recv's error, on messages. It decodes and hands over, nothing
// more. Asking, rather than reading ahead, bounds what a call holds to one
// message (a batch may be as large as the message size limit): the
// receiver never holds a message the loop has not asked for.
//
// The goroutine ends when Recv fails, or when ctx ends while it waits to
// be asked (even if asked meanwhile: the call is over then). One that is
// in Recv when the handler returns ends with the call, which ends Recv.
type receiver struct {
	// next asks for a message; messages delivers it. Both have room for
	// one, so neither side ever blocks on the other: one message is asked
	// for at a time.
	next     chan struct{}
	messages chan received
	// stopped is closed when the goroutine ends.
	stopped chan struct{}
	// asked is set while a message is asked for and not yet taken from
	// messages; the loop's alone.
	asked bool
}

// received is what one Recv gave. panicked holds a panic of Recv (a codec
// or a stream wrapper), with the receiver's stack, for the loop to panic
// with on the handler's goroutine, where the recovery interceptor answers
// the client and logs it, as for any handler.
type received struct {
	req      *wireSyncRequest
	err      error
	panicked any
}

// message is the SyncRequest received, nil when Recv failed (receiveOne
// then keeps no request).
func (m *received) message() *tributaryv1.SyncRequest {
	if m.req == nil {
		return nil
	}
	return &m.req.request
}

func startReceiver(ctx context.Context, stream grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) *receiver {
	r := &receiver{next: make(chan struct{}, 1), messages: make(chan received, 1), stopped: make(chan struct{})}
	go func() {
		defer close(r.stopped)
		for {
			select {
			case <-r.next:
			case <-ctx.Done():
				return
			}
			m := receiveOne(stream)
			r.messages <- m
			if m.err != nil || m.panicked != nil {
				return
			}
		}
	}()
	return r
}

// panicAgain panics with m's panic, if Recv panicked: on the handler's
// goroutine, where the recovery interceptor answers the client.
func (m *received) panicAgain() {
	if m.panicked != nil {
		panic(m.panicked)
	}
}

// receiveOne calls Recv once, recovering a panic of it.
func receiveOne(stream grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) (m received) {
	defer func() {
		if p := recover(); p != nil {
			m = received{panicked: fmt.Sprintf("%v\n\nin the goroutine receiving Sync batches:\n%s", p, debug.Stack())}
		}
	}()
	// Received as a wireSyncRequest, for the codec to read the batch's
	// slices' endpoints straight from the wire (see wireTranslateRequest).
	req := new(wireSyncRequest)
	if err := stream.RecvMsg(req); err != nil {
		return received{err: err}
	}
	return received{req: req}
}

// ask asks for the next message.
func (r *receiver) ask() {
	r.asked = true
	r.next <- struct{}{}
}

// wait waits for the message asked for; ok is false when the receiver
// stopped without calling Recv, because the call ended.
func (r *receiver) wait() (m received, ok bool) {
	r.asked = false
	select {
	case m = <-r.messages:
		return m, true
	case <-r.stopped:
		// A message delivered just before stopping is still there.
		select {
		case m = <-r.messages:
			return m, true
		default:
			return received{}, false
		}
	}
}

// first receives the first message of the call, unless the server starts
// draining first (a client slow to send its start must not hold the drain)
// or timeout passes first.
func (r *receiver) first(ctx context.Context, draining <-chan struct{}, timeout time.Duration) (*tributaryv1.SyncRequest, error) {
	r.ask()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil, startTimedOut(timeout)
	case m := <-r.messages:
		r.asked = false
		m.panicAgain()
		return m.message(), m.err
	case <-r.stopped:
		if m, ok := r.wait(); ok {
			m.panicAgain()
			return m.message(), m.err
		}
		return nil, status.FromContextError(ctx.Err()).Err()
	case <-draining:
		return nil, errDraining
	}
}

// startTimedOut ends a stream that sent no SyncStart within timeout.
// DeadlineExceeded says what happened (the server's deadline for the start
// passed) and is a code clients retry: a client that was merely slow (a
// paused process) reconnects, while a silent stream is not retried by
// anyone. InvalidArgument or FailedPrecondition would end the Go client's
// session for good, and Unavailable would blame the server.
func startTimedOut(timeout time.Duration) error {
	return status.Errorf(codes.DeadlineExceeded, "no SyncStart within %s: a Sync stream must send its start (SyncStart) first", timeout)
}
