package server

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/session"
)

// Sync runs one session: see the TranslationService contract. The stream
// ends
//   - with InvalidArgument, before anything is applied, when the first
//     message is not a SyncStart or its settings are malformed (there is no
//     session without settings);
//   - with DeadlineExceeded when no SyncStart comes within
//     Options.SyncStartTimeout (see startTimedOut);
//   - with ResourceExhausted when the server holds Options.MaxSessions
//     sessions already: a stream takes a session slot with its SyncStart;
//   - with FailedPrecondition when a second SyncStart comes: settings are
//     fixed for a session's life, and a client that wants others opens a new
//     stream. Deltas for the batches before it are sent first;
//   - with InvalidArgument when a SyncRequest holds neither a start nor a
//     batch, likewise after the earlier deltas;
//   - with OK once the client half-closes and every delta has been sent
//     (a client that half-closes before its SyncStart gets OK and nothing);
//   - with gRPC's own error when a message is over the size limit
//     (ResourceExhausted): gRPC answers the client itself, at once, and the
//     answers owed are lost (the client reconnects and sends its objects
//     again);
//   - with InvalidArgument when a message cannot be decoded, and with
//     ResourceExhausted when it does not fit in the server's in-flight
//     budget (Options.MaxInflightBytes), after the answers owed: the
//     admission codec (admission.go) leaves the decision to the session;
//   - with the stream's error when the client cancels or goes away;
//   - with Unavailable when the server starts draining (Options.Draining),
//     once the answers to the batches applied so far have been sent.
//
// A malformed batch is answered with a BatchRejected and the stream goes on.
// A SyncStart with include_json gets Resource.json on every resource sent.
// Answers come in the order of the batches they cover: a rejection follows
// the deltas of every earlier batch and precedes those of every later one.
//
// One goroutine, the handler's, owns the session and everything about the
// call (see syncCall.run): it applies batches, puts their deltas into a
// session.Outbox, decides what to send next and when the call ends. Two
// helpers do the blocking I/O, and nothing else: a receiver that calls Recv
// when the loop asks for a message, and a sender that sends the one response
// the loop hands it at a time. A client that writes faster than it reads
// thus blocks only the sender; the loop goes on applying, and the Outbox
// merges what waits per resource, so memory is bounded by the size of the
// output rather than the number of batches. Rejections cannot merge, so the
// loop reads nothing more while one waits for the sender. A delta's version
// is new whenever the output changed (and for the first delta); an empty
// acknowledgement repeats the version.
func (t translationService) Sync(stream grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) (err error) {
	if closed(t.draining) {
		return errDraining
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel() // ends the receiver, unless it is in Recv: see receiver
	in := startReceiver(ctx, stream)
	first, err := in.first(ctx, t.draining, orDefaultDuration(t.limits.startTimeout, DefaultSyncStartTimeout))
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return status.Error(codes.InvalidArgument, "the first message of a Sync stream must be a start (SyncStart)")
	}
	settings, err := decodeStart(start)
	if err != nil {
		return err
	}
	release, err := t.limits.admitSession()
	if err != nil {
		return err
	}
	defer release()

	s := &syncCall{
		session:     session.New(settings),
		outbox:      session.NewOutbox(),
		includeJSON: start.GetIncludeJson(),
		budget:      sessionBudget{limits: t.limits},
		observer:    t.observeSession(stream.Context(), start),
		in:          in,
		drain:       t.draining,
		fullState:   true,
	}
	defer func() { s.observer.end(err) }()
	if err := t.openPublication(s, start); err != nil {
		return err
	}
	defer s.closePublication()
	s.out = startSender(stream)
	defer s.out.stop()
	return s.run(ctx)
}

// closed reports whether ch is closed; a nil ch never is.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// errDraining ends the Sync calls open when the server starts draining.
var errDraining = status.Error(codes.Unavailable, "the server is shutting down; reconnect and send the session's objects again")

// syncCall is one Sync call. Every field belongs to its loop (run), the
// handler's goroutine; the receiver and the sender share nothing with it
// but channels.
type syncCall struct {
	session *session.Session
	outbox  *session.Outbox
	// includeJSON asks for Resource.json on every resource sent.
	includeJSON bool
	// budget bounds what the session holds (see limits.go).
	budget   sessionBudget
	observer *syncObserver
	// xds is the call's xDS publication, if any (see sync_xds.go).
	xds syncXDS

	in  *receiver
	out *sender

	// unanswered counts the batches put into the outbox since it was
	// last taken from: how many batches the next delta covers.
	unanswered uint64
	// rejection waits for the sender; nothing more is received meanwhile.
	rejection *tributaryv1.BatchRejected
	// version is the version of the output the client has: it changes with
	// the output, so an empty acknowledgement repeats it. fullState is set
	// until the first delta is handed to the sender.
	version   string
	fullState bool
	// received is set once the stream has no more batches for the session;
	// end is then nil (the client half-closed) or the error that ends the
	// stream. refused is the error of a Recv that failed on a message (not
	// on the call's end): gRPC has answered the client with it.
	received     bool
	end, refused error
	// drain is closed when the server starts draining, and nil once the
	// loop has seen it: draining is then set.
	drain    <-chan struct{}
	draining bool
}

// run is the call's loop. Each turn it hands the sender the next answer if
// the sender is idle, or ends the call when nothing is left to answer and
// nothing more will come; asks the receiver for the next message if the
// session may take one; and waits for whichever event comes first: a
// message, a send done, an xDS event, the drain, or the call's end.
func (s *syncCall) run(ctx context.Context) error {
	for {
		if !s.out.busy() {
			answer, covered, err := s.nextAnswer()
			switch {
			case err != nil:
				return err
			case answer != nil:
				s.out.send(answer, covered)
			default:
				if done, err := s.idle(); done {
					return s.endWith(ctx, err)
				}
			}
		}
		if s.mayReceive() {
			s.in.ask()
		} else if !s.out.busy() && (s.draining || s.xds.superseded) {
			// mayReceive has just seen the drain or the takeover, and
			// nothing else would wake the select below: decide at the
			// top of the loop, where idle ends the call.
			continue
		}
		var messages <-chan received
		if s.in.asked {
			messages = s.in.messages
		}
		var nacks <-chan *tributaryv1.XdsNack
		if !s.out.busy() {
			nacks = s.xds.nacks
		}
		select {
		case m := <-messages:
			s.in.asked = false
			s.handle(ctx, m)
			// The batch is applied or rejected: its share of the
			// in-flight budget goes back now, not when the next
			// message is read, which waits while a rejection waits
			// for a client that may never read it.
			releaseMessage(ctx, m.req)
		case r := <-s.out.doneOrNil():
			if err := s.sent(r); err != nil {
				return s.endWith(ctx, err)
			}
		case n := <-nacks:
			s.out.send(nackResponse(n), 0)
		case <-s.xds.supersededOrNil():
			s.xds.superseded = true
		case <-s.drain:
			s.draining, s.drain = true, nil
		case <-ctx.Done():
			return s.endWith(ctx, status.FromContextError(ctx.Err()).Err())
		}
	}
}

// mayReceive reports whether the loop asks for another message: not once
// the stream has no more, nor while a rejection waits to be sent (answers
// keep the order of batches), nor once the server drains or a newer session
// took the node group over, since the call then ends once it has answered
// the batches applied so far. The drain is looked at here too, not only in
// the loop's select: a drain that began before the client read the answer
// the loop just handed on must be seen before the loop reads again.
func (s *syncCall) mayReceive() bool {
	select { // both channels are nil once seen
	case <-s.drain:
		s.draining, s.drain = true, nil
	case <-s.xds.supersededOrNil():
		s.xds.superseded = true
	default:
	}
	return !s.received && s.rejection == nil && !s.draining && !s.xds.superseded && !s.in.asked
}

// idle decides what to do when the sender is idle and no answer waits: end
// the call (done, with err), or send a NACK, or wait. A superseded
// publication ends the call at once; a client that half-closed, or a
// drain, once the NACKs that wait are sent.
func (s *syncCall) idle() (done bool, err error) {
	if s.xds.superseded {
		return true, errSuperseded
	}
	select {
	case n := <-s.xds.nacks: // nil without a publication: never ready
		s.out.send(nackResponse(n), 0)
		return false, nil
	default:
	}
	switch {
	case s.received:
		return true, s.end
	case s.draining:
		return true, errDraining
	}
	return false, nil
}

// endWith returns the error the call ends with, given err, the loop's.
// gRPC ends the call itself when a Send fails (a reply over the send limit)
// or a Recv fails on a message (over the size limit, or not decodable),
// and answers the client with its own error before the Send or Recv
// returns, so the loop may find the call over first: that error then says
// why the call ended, and the call log and metrics must say what the client
// got. Only the context's errors are replaced: the sender's own and the
// client's cancel stand. Once the call is over a Send or Recv returns at
// once, so waiting for the one under way is short.
func (s *syncCall) endWith(ctx context.Context, err error) error {
	if ctx.Err() == nil || !isCallEnd(err) {
		return err
	}
	if s.out.busy() {
		r := <-s.out.done
		s.out.finish()
		if r.panicked != nil {
			panic(r.panicked)
		}
		if r.err != nil && !isCallEnd(r.err) {
			return r.err
		}
	}
	if s.in.asked {
		if m, ok := s.in.wait(); ok {
			m.panicAgain()
			s.noteRefusal(m.err)
		}
	}
	if s.refused != nil {
		return s.refused
	}
	return err
}

// isCallEnd reports whether err is the error of a call that ended (the
// client cancelled, or the deadline passed) rather than of a message.
func isCallEnd(err error) bool {
	code := status.Code(err)
	return code == codes.Canceled || code == codes.DeadlineExceeded
}
