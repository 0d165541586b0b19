package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
)

// Sync runs one session: see the TranslationService contract. The stream
// ends
//   - with InvalidArgument, before anything is applied, when the first
//     message is not a SyncStart or its settings are malformed (there is no
//     session without settings);
//   - with FailedPrecondition when a second SyncStart comes: settings are
//     fixed for a session's life, and a client that wants others opens a new
//     stream. Deltas for the batches before it are sent first;
//   - with InvalidArgument when a SyncRequest holds neither a start nor a
//     batch, likewise after the earlier deltas;
//   - with OK once the client half-closes and every delta has been sent
//     (a client that half-closes before its SyncStart gets OK and nothing);
//   - with gRPC's own error when a message is over the size limit
//     (ResourceExhausted) or cannot be decoded (Internal), after the deltas
//     owed: gRPC answers the client itself, and the call log gets the same;
//   - with the stream's error when the client cancels or goes away;
//   - with Unavailable when the server starts draining (Options.Draining),
//     once the answers to the batches applied so far have been sent.
//
// A malformed batch is answered with a BatchRejected and the stream goes on.
// A SyncStart with include_json gets Resource.json on every resource sent.
// Answers come in the order of the batches they cover: a rejection follows
// the deltas of every earlier batch and precedes those of every later one.
//
// Two goroutines share the call: a receiver that decodes and applies
// batches and puts their deltas into a session.Outbox, and the handler's own
// goroutine, which takes merged deltas out and sends them. A client that
// writes faster than it reads thus blocks only the sender; the receiver goes
// on applying, and the Outbox merges what waits per resource, so memory is
// bounded by the size of the output rather than the number of batches. Rejections cannot merge, so the receiver waits
// for each to be sent. A delta's version is new whenever the output changed
// (and for the first delta); an empty acknowledgement repeats the version.
func (t translationService) Sync(stream grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) (err error) {
	if closed(t.draining) {
		return errDraining
	}
	release, err := t.limits.admitSession()
	if err != nil {
		return err
	}
	defer release()
	first, err := t.receiveStart(stream)
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

	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	s := newSyncCall(stream, settings)
	s.budget.limits = t.limits
	s.includeJSON = start.GetIncludeJson()
	s.observer = t.observeSession(stream.Context(), start)
	defer func() { s.observer.end(err) }()
	if err := t.openPublication(s, start); err != nil {
		return err
	}
	defer s.closePublication()
	// The waits below are on a condition variable, which a context cannot
	// interrupt: wake them when the call ends.
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.over = true
		s.changed.Broadcast()
	})
	if t.draining != nil {
		go func() {
			select {
			case <-t.draining:
				s.mu.Lock()
				defer s.mu.Unlock()
				s.draining = true
				s.changed.Broadcast()
			case <-ctx.Done():
			}
		}()
	}
	// The receiver outlives the handler only while it is in Recv or Apply:
	// gRPC ends Recv once the handler returns, and it then exits.
	go s.receive()
	return s.endOf(ctx, s.send(ctx))
}

// endOf returns the error the call ends with, given err, the sender's.
// When Recv fails on a message (over the size limit, or not decodable),
// gRPC answers the client with its own error and ends the call before Recv
// returns, so the sender may find the call over first and fail with the
// context's error: gRPC's answer then says why the call ended, and the call
// log and metrics must say what the client got. Only the context's errors
// are replaced: the sender's own (a reply over the send limit, a broken
// connection) and the client's cancel stand. Once the call is over a Recv
// returns at once, so the wait is short.
func (s *syncCall) endOf(ctx context.Context, err error) error {
	if ctx.Err() == nil || !isCallEnd(err) {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.receiving {
		s.changed.Wait()
	}
	if p := s.panicked; p != nil {
		panic(p)
	}
	if s.refused != nil {
		return s.refused
	}
	return err
}

// receiveStart receives the first message of a Sync call, unless the
// server starts draining first: a client slow to send its start must not
// hold the drain. Recv cannot be interrupted, so it runs on its own
// goroutine, which ends when the call does.
func (t translationService) receiveStart(stream grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) (*tributaryv1.SyncRequest, error) {
	if t.draining == nil {
		return stream.Recv()
	}
	type received struct {
		req *tributaryv1.SyncRequest
		err error
	}
	first := make(chan received, 1)
	go func() {
		req, err := stream.Recv()
		first <- received{req, err}
	}()
	select {
	case r := <-first:
		return r.req, r.err
	case <-t.draining:
		return nil, errDraining
	}
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

// syncCall is the state of one Sync call shared by its receiver and its
// sender (see Sync).
type syncCall struct {
	stream  grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]
	session *session.Session // the receiver's alone
	outbox  *session.Outbox
	// includeJSON asks for Resource.json on every resource sent.
	includeJSON bool
	// budget bounds what the session holds (see limits.go); the receiver's.
	budget   sessionBudget
	observer *syncObserver

	mu sync.Mutex
	// changed is broadcast whenever a field below changes.
	changed sync.Cond
	// applied counts the batches put into the outbox, answered those taken
	// out of it, and lastBatchID is the client's id of the last one put.
	// Puts and Takes happen under mu, so a Take covers exactly the batches
	// put so far, and the id to echo is lastBatchID: nothing per batch is
	// kept, however far the client writes ahead of its reads.
	applied, answered uint64
	lastBatchID       uint64
	// rejection waits to be sent; the receiver applies nothing meanwhile.
	rejection *tributaryv1.BatchRejected
	// xds holds the call's xDS publication and the NACKs to send (see
	// sync_xds.go).
	xds syncXDS
	// receiving is set while the receiver waits in Recv. refused is the
	// error of a Recv that failed on a message (not on the call's end):
	// gRPC has answered the client with it. received is set when the
	// receiver has stopped; end is then nil (the client half-closed) or the
	// error that ends the stream.
	receiving, received bool
	end, refused        error
	// panicked holds a panic of the receiver, with its stack, for the
	// handler's goroutine to raise again: the recovery interceptor then logs
	// it and answers Internal, instead of the process crashing.
	panicked any
	// over is set when the call has ended; draining when the server asks
	// it to end (see Sync).
	over, draining bool
}

func newSyncCall(stream grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse], settings source.Settings) *syncCall {
	s := &syncCall{stream: stream, session: session.New(settings), outbox: session.NewOutbox()}
	s.changed.L = &s.mu
	return s
}

// receive reads and applies batches until the stream ends.
func (s *syncCall) receive() {
	var end error
	defer func() {
		p := recover()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.received, s.end = true, end
		if p != nil {
			s.panicked = fmt.Sprintf("%v\n\nin the goroutine receiving Sync batches:\n%s", p, debug.Stack())
		}
		s.changed.Broadcast()
	}()
	end = s.receiveBatches()
}

// receiveBatches returns nil when the client half-closes, else why the
// stream ends.
func (s *syncCall) receiveBatches() error {
	for {
		req, err := s.recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch m := req.GetMessage().(type) {
		case *tributaryv1.SyncRequest_Batch:
			if !s.apply(m.Batch) {
				return nil
			}
		case *tributaryv1.SyncRequest_Start:
			return status.Error(codes.FailedPrecondition, "a Sync stream takes one start (SyncStart), as its first message; open a new stream for other settings")
		default:
			return status.Error(codes.InvalidArgument, "a SyncRequest must hold a start or a batch")
		}
	}
}

// recv receives the next message, with s.receiving set while it waits; a
// failure on a message is recorded in s.refused before receiving clears.
func (s *syncCall) recv() (*tributaryv1.SyncRequest, error) {
	s.mu.Lock()
	s.receiving = true
	s.mu.Unlock()
	req, err := s.stream.Recv()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && !errors.Is(err, io.EOF) && !isCallEnd(err) {
		s.refused = err
	}
	s.receiving = false
	s.changed.Broadcast()
	return req, err
}

// isCallEnd reports whether err is the error of a call that ended (the
// client cancelled, or the deadline passed) rather than of a message.
func isCallEnd(err error) bool {
	code := status.Code(err)
	return code == codes.Canceled || code == codes.DeadlineExceeded
}

// apply applies one batch and puts its delta into the outbox, or, when the
// batch is malformed, hands its rejection to the sender and waits until it
// is sent. It returns false once the call is over.
func (s *syncCall) apply(pb *tributaryv1.SyncBatch) bool {
	var p problems
	b := s.decodeWithinLimits(pb, &p)
	if p.count > 0 {
		r := rejection(pb.GetId(), &p)
		s.observer.rejected(pb.GetId(), &p)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.rejection = r
		s.changed.Broadcast()
		for s.rejection != nil && !s.over {
			s.changed.Wait()
		}
		return !s.over
	}
	began := time.Now()
	d := s.session.Apply(b)
	s.observer.applied(b, time.Since(began))
	s.put(pb.GetId(), d)
	return true
}

// put puts the delta of batch batchID into the outbox.
func (s *syncCall) put(batchID uint64, d session.Delta) {
	s.publish(&d)
	s.mu.Lock()
	defer s.mu.Unlock() // deferred, so that a panic in Put releases the lock
	s.outbox.Put(batchID, d)
	s.applied++
	s.lastBatchID = batchID
	s.changed.Broadcast()
}

// take takes everything put so far out of the outbox, and says how many
// batches that covers; something must be pending, so Take returns at once.
func (s *syncCall) take(ctx context.Context) (batchID uint64, d session.Delta, covered uint64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, d, err = s.outbox.Take(ctx); err != nil {
		return 0, d, 0, err
	}
	covered, s.answered = s.applied-s.answered, s.applied
	return s.lastBatchID, d, covered, nil
}

// send sends deltas and rejections in order until the stream ends.
func (s *syncCall) send(ctx context.Context) error {
	// version is the version of the output the client has: it changes with
	// the output, so an empty acknowledgement repeats it.
	var version string
	fullState := true
	for {
		s.mu.Lock()
		for !s.over && s.panicked == nil && s.applied == s.answered && s.rejection == nil && !s.xdsPendingLocked() && !s.received && !s.draining {
			s.changed.Wait()
		}
		switch {
		case s.panicked != nil:
			p := s.panicked
			s.mu.Unlock()
			panic(p)
		case s.over:
			s.mu.Unlock()
			return status.FromContextError(ctx.Err()).Err()
		case s.applied > s.answered:
			// Deltas first: while a rejection waits, nothing more is applied,
			// so these cover exactly the batches before it.
			s.mu.Unlock()
			batchID, d, covered, err := s.take(ctx)
			if err != nil {
				return status.FromContextError(err).Err()
			}
			if fullState || !d.Empty() {
				version = session.NextVersion()
			}
			resp := encodeDelta(batchID, fullState, version, &d)
			if s.includeJSON {
				if err := addJSON(resp.GetDelta().GetClusters(), resp.GetDelta().GetClusterLoadAssignments()); err != nil {
					return err
				}
			}
			if err := s.stream.Send(resp); err != nil {
				return err
			}
			s.observer.answered(resp, covered)
			fullState = false
		case s.rejection != nil:
			r := s.rejection
			s.mu.Unlock()
			if err := s.stream.Send(&tributaryv1.SyncResponse{Message: &tributaryv1.SyncResponse_Rejected{Rejected: r}}); err != nil {
				return err
			}
			s.mu.Lock()
			s.rejection = nil
			s.changed.Broadcast()
			s.mu.Unlock()
		case s.xdsPendingLocked():
			if done, err := s.sendXDSLocked(); done {
				return err
			}
		case !s.received: // draining, and everything sent
			s.mu.Unlock()
			return errDraining
		default: // received, and everything sent
			end := s.end
			s.mu.Unlock()
			return end
		}
	}
}

// encodeDelta converts a Delta into a response. Resources are encoded like
// Translate's, their bytes used as they are.
func encodeDelta(batchID uint64, fullState bool, version string, d *session.Delta) *tributaryv1.SyncResponse {
	return &tributaryv1.SyncResponse{Message: &tributaryv1.SyncResponse_Delta{Delta: &tributaryv1.SyncDelta{
		BatchId:                       batchID,
		FullState:                     fullState,
		Version:                       version,
		Clusters:                      encodeResources(d.Clusters, translate.ClusterType),
		ClusterLoadAssignments:        encodeResources(d.ClusterLoadAssignments, translate.ClusterLoadAssignmentType),
		RemovedClusters:               d.RemovedClusters,
		RemovedClusterLoadAssignments: d.RemovedClusterLoadAssignments,
		Statuses:                      encodeStatuses(d.Statuses),
		RemovedStatuses:               encodeRemovedStatuses(d.RemovedStatuses),
	}}}
}

func encodeRemovedStatuses(names []source.NamespacedName) []*tributaryv1.ObjectReference {
	if len(names) == 0 {
		return nil
	}
	out := make([]*tributaryv1.ObjectReference, len(names))
	for i, n := range names {
		out[i] = &tributaryv1.ObjectReference{Kind: tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE, Namespace: n.Namespace, Name: n.Name}
	}
	return out
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
