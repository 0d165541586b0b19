package server

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/translate"
)

// handle acts on what the receiver got: a batch is applied (or rejected);
// anything else ends the session's input. ctx is the call's.
func (s *syncCall) handle(ctx context.Context, m received) {
	m.panicAgain()
	switch {
	case errors.Is(m.err, io.EOF):
		s.stopReceiving(nil)
	case m.err != nil:
		s.noteRefusal(m.err)
		s.stopReceiving(m.err)
	default:
		switch msg := m.message().GetMessage().(type) {
		case *tributaryv1.SyncRequest_Batch:
			s.apply(ctx, msg.Batch, m.req.slices)
		case *tributaryv1.SyncRequest_Start:
			s.stopReceiving(status.Error(codes.FailedPrecondition, "a Sync stream takes one start (SyncStart), as its first message; open a new stream for other settings"))
		default:
			s.stopReceiving(status.Error(codes.InvalidArgument, "a SyncRequest must hold a start or a batch"))
		}
	}
}

// stopReceiving records that the session takes no more batches: the call
// ends with end (nil for OK) once the answers owed are sent.
func (s *syncCall) stopReceiving(end error) {
	s.received, s.end = true, end
}

// noteRefusal records err, a Recv's, if it failed on a message rather
// than on the call's end (see endWith).
func (s *syncCall) noteRefusal(err error) {
	if err != nil && !errors.Is(err, io.EOF) && !isCallEnd(err) {
		s.refused = err
	}
}

// apply applies one batch, publishes its delta and puts it into the
// outbox, or, when the batch is malformed or would make the session's
// output too large for one answer, keeps its rejection for the sender. A
// batch is applied whole or not at all: when ctx ends during the apply,
// the session is left as it was and the call ends with ctx's code.
//
// offWire is what the wire fast path kept of the batch's EndpointSlices
// outside their messages, nil when the messages hold everything.
func (s *syncCall) apply(ctx context.Context, pb *tributaryv1.SyncBatch, offWire []*sliceOffWire) {
	var p problems
	b := s.decodeWithinLimits(pb, offWire, &p)
	if p.count > 0 {
		s.reject(pb.GetId(), &p)
		return
	}
	began := time.Now()
	d, err := s.session.Apply(ctx, b, s.budget.limits.output(s.includeJSON))
	if err != nil {
		// Nothing changed: the session gives back what decodeWithinLimits
		// counted as held.
		s.budget.held -= s.session.SizeChange(b)
		if tooLarge, ok := errors.AsType[*translate.TooLargeError](err); ok {
			p.add("batch", ReasonResourceExhausted, tooLarge.Describe("with this batch, the session's output"))
			s.reject(pb.GetId(), &p)
			return
		}
		s.stopReceiving(status.FromContextError(err).Err())
		return
	}
	s.observer.applied(s.session, time.Since(began))
	// Published before the delta is sent, so xDS clients get a change no
	// later than the Sync client.
	s.publish(&d)
	s.outbox.Put(pb.GetId(), d)
	s.unanswered++
}

// reject keeps the rejection of batch id, for problems p, for the sender.
func (s *syncCall) reject(id uint64, p *problems) {
	s.rejection = rejection(id, p)
	s.observer.rejected(id, p)
}

// rejection is the BatchRejected for batch batchID with problems p: the
// message and violations a Translate request would get in its
// InvalidArgument status.
func rejection(batchID uint64, p *problems) *tributaryv1.BatchRejected {
	r := &tributaryv1.BatchRejected{BatchId: batchID, Message: p.message(), Violations: make([]*tributaryv1.FieldViolation, len(p.violations))}
	for i, v := range p.violations {
		r.Violations[i] = &tributaryv1.FieldViolation{Field: v.GetField(), Reason: v.GetReason(), Description: v.GetDescription()}
	}
	return r
}
