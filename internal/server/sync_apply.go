package server

import (
	"errors"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// handle acts on what the receiver got: a batch is applied (or rejected);
// anything else ends the session's input.
func (s *syncCall) handle(m received) {
	m.panicAgain()
	switch {
	case errors.Is(m.err, io.EOF):
		s.stopReceiving(nil)
	case m.err != nil:
		s.noteRefusal(m.err)
		s.stopReceiving(m.err)
	default:
		switch msg := m.req.GetMessage().(type) {
		case *tributaryv1.SyncRequest_Batch:
			s.apply(msg.Batch)
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
// outbox, or, when the batch is malformed, keeps its rejection for the
// sender.
func (s *syncCall) apply(pb *tributaryv1.SyncBatch) {
	var p problems
	b := s.decodeWithinLimits(pb, &p)
	if p.count > 0 {
		s.rejection = rejection(pb.GetId(), &p)
		s.observer.rejected(pb.GetId(), &p)
		return
	}
	began := time.Now()
	d := s.session.Apply(b)
	s.observer.applied(s.session, time.Since(began))
	// Published before the delta is sent, so xDS clients get a change no
	// later than the Sync client.
	s.publish(&d)
	s.outbox.Put(pb.GetId(), d)
	s.unanswered++
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
