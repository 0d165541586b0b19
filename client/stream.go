package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tributary-dev/tributary/client/internal/objectkind"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// run opens streams for as long as the session lives, with backoff between
// failures.
func (s *SyncSession) run(ctx context.Context) {
	defer close(s.done)
	failures := 0
	for {
		if !s.needStream() {
			select {
			case <-s.wake:
				continue
			case <-ctx.Done():
				s.end(context.Cause(ctx))
				return
			}
		}
		synced, err := s.stream(ctx)
		if ctx.Err() != nil {
			s.end(context.Cause(ctx))
			return
		}
		if !retryable(err) {
			s.opts.logger.Error("tributary sync session ended", "error", err)
			s.end(err)
			return
		}
		if synced {
			failures = 0
		}
		failures++
		delay := s.backoff(failures)
		s.opts.logger.Warn("tributary sync stream broke; reconnecting", "error", err, "delay", delay, "attempt", failures)
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			s.end(context.Cause(ctx))
			return
		}
	}
}

// needStream reports whether there is anything for a stream to do: objects
// the server must hold, or a Flush waiting.
func (s *SyncSession) needStream() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.acked) > 0 || len(s.waiters) > 0
}

// backoff is the wait after the n-th consecutive failure (n ≥ 1).
func (s *SyncSession) backoff(n int) time.Duration {
	d := s.opts.maxBackoff
	if shift := n - 1; shift < 32 && s.opts.minBackoff<<shift < d && s.opts.minBackoff<<shift > 0 {
		d = s.opts.minBackoff << shift
	}
	return d/2 + rand.N(d/2+1)
}

// retryable reports whether a stream error is worth reopening the stream
// for. Errors that another attempt would only repeat end the session.
func retryable(err error) bool {
	var rejected *BatchRejectedError
	switch {
	case errors.As(err, &rejected):
		return false
	case errors.Is(err, ErrMalformedResponse), errors.Is(err, io.EOF):
		return true
	}
	switch status.Code(err) {
	case codes.InvalidArgument, codes.Unimplemented, codes.PermissionDenied, codes.Unauthenticated, codes.FailedPrecondition:
		return false
	case codes.ResourceExhausted:
		// A message over a size limit (gRPC says "larger than max", sending
		// or receiving, and has no typed error for it) would be sent again
		// and refused again; other exhaustion, such as the server's limit
		// on sessions, may pass later.
		return !strings.Contains(status.Convert(err).Message(), "larger than max")
	}
	return true
}

// end records why the session ended and releases every waiting Flush.
func (s *SyncSession) end(err error) {
	s.mu.Lock()
	s.err = err
	waiters := s.waiters
	s.waiters = nil
	s.mu.Unlock()
	notify(waiters, err)
}

type received struct {
	resp *tributaryv1.SyncResponse
	err  error
}

// stream runs one stream until it breaks. synced reports whether it got the
// server's full state, which resets the backoff.
func (s *SyncSession) stream(ctx context.Context) (synced bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	st, err := s.rpc.Sync(sctx, callOptions(s.opts.callOptions)...)
	if err != nil {
		cancel()
		return false, err
	}
	responses := make(chan received)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			resp, err := st.Recv()
			select {
			case responses <- received{resp, err}:
			case <-sctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	})
	defer func() {
		cancel()
		wg.Wait()
		s.requeueInflight()
	}()

	// sendErr turns a failed Send into the stream's real error, which only
	// Recv reports; answers that arrive meanwhile are still applied.
	sendErr := func() error {
		for {
			select {
			case r := <-responses:
				if r.err != nil {
					return r.err
				}
				if err := s.handle(r.resp, &synced); err != nil {
					return err
				}
			case <-sctx.Done():
				return context.Cause(ctx)
			}
		}
	}

	if err := st.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{
		Settings:         s.settings,
		XdsNodeGroup:     s.opts.xdsNodeGroup,
		PublishListeners: s.opts.publishListeners,
	}}}); err != nil {
		return synced, sendErr()
	}
	s.mu.Lock()
	req := s.resendBatch()
	if req == nil {
		req = s.nextBatch()
	}
	s.mu.Unlock()
	for {
		if req != nil {
			if err := st.Send(req); err != nil {
				return synced, sendErr()
			}
		}
		select {
		case <-s.wake:
		case r := <-responses:
			if r.err != nil {
				return synced, r.err
			}
			if err := s.handle(r.resp, &synced); err != nil {
				return synced, err
			}
		case <-sctx.Done():
			return synced, context.Cause(ctx)
		}
		s.mu.Lock()
		req = s.nextBatch()
		s.mu.Unlock()
	}
}

// resendBatch starts a stream: a batch of every acknowledged object, or nil
// when the server has nothing to hold. Called with s.mu held.
func (s *SyncSession) resendBatch() *tributaryv1.SyncRequest {
	if len(s.acked) == 0 {
		return nil
	}
	s.lastID++
	s.inflight = &batch{id: s.lastID, resend: true}
	keys := slices.SortedFunc(maps.Keys(s.acked), objectkind.Compare)
	b := &tributaryv1.SyncBatch{Id: s.lastID, Upserts: make([]*tributaryv1.KubernetesObject, len(keys))}
	for i, k := range keys {
		b.Upserts[i] = s.acked[k]
	}
	return &tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: b}}
}

// nextBatch takes the pending changes as the next batch when a Flush waits
// for them and no batch is in flight. Changes that would change nothing on
// the server are left out; when none is left, the waiting Flush calls return
// at once. Called with s.mu held.
func (s *SyncSession) nextBatch() *tributaryv1.SyncRequest {
	if s.inflight != nil || len(s.waiters) == 0 {
		return nil
	}
	b := &batch{changes: make(map[objectkind.Key]*tributaryv1.KubernetesObject, len(s.pending)), waiters: s.waiters}
	s.waiters = nil
	msg := &tributaryv1.SyncBatch{}
	for _, k := range slices.SortedFunc(maps.Keys(s.pending), objectkind.Compare) {
		obj, desired := s.desired[k]
		acked, held := s.acked[k]
		switch {
		case desired && held && acked == obj:
		case desired:
			msg.Upserts = append(msg.Upserts, obj)
			b.changes[k] = obj
		case held:
			msg.Deletes = append(msg.Deletes, k.Reference())
			b.changes[k] = nil
		}
	}
	clear(s.pending)
	if len(b.changes) == 0 {
		notify(b.waiters, nil)
		return nil
	}
	s.lastID++
	b.id, msg.Id = s.lastID, s.lastID
	s.inflight = b
	return &tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: msg}}
}

// requeueInflight puts the changes of a batch left unanswered by a broken
// stream back into pending, and its Flush calls back in line: the next
// stream sends them again, with whatever changed since.
func (s *SyncSession) requeueInflight() {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.inflight
	if b == nil {
		return
	}
	s.inflight = nil
	for k := range b.changes {
		s.pending[k] = struct{}{}
	}
	s.waiters = append(b.waiters, s.waiters...)
}

// handle applies one answer. An answer that breaks the protocol is an error
// wrapping ErrMalformedResponse; a refused resend is a *BatchRejectedError.
func (s *SyncSession) handle(resp *tributaryv1.SyncResponse, synced *bool) error {
	switch m := resp.GetMessage().(type) {
	case *tributaryv1.SyncResponse_Delta:
		return s.handleDelta(m.Delta, synced)
	case *tributaryv1.SyncResponse_Rejected:
		return s.handleRejected(m.Rejected)
	case *tributaryv1.SyncResponse_XdsNack:
		if s.opts.onXDSNack != nil {
			s.opts.onXDSNack(m.XdsNack)
		} else {
			n := m.XdsNack
			s.opts.logger.Warn("an xDS client refused a resource", "node", n.GetNodeId(), "type", n.GetTypeUrl(), "resources", n.GetResourceNames(), "error", n.GetErrorDetail())
		}
		return nil
	default:
		return fmt.Errorf("%w: a SyncResponse with no message", ErrMalformedResponse)
	}
}

func (s *SyncSession) handleDelta(d *tributaryv1.SyncDelta, synced *bool) error {
	if !*synced && !d.GetFullState() {
		return fmt.Errorf("%w: the first delta of a stream (batch %d) does not hold the full state", ErrMalformedResponse, d.GetBatchId())
	}
	t, err := Unpack(&tributaryv1.TranslateResponse{
		Clusters:               d.GetClusters(),
		ClusterLoadAssignments: d.GetClusterLoadAssignments(),
		Statuses:               d.GetStatuses(),
	})
	if err != nil {
		return fmt.Errorf("delta for batch %d: %w", d.GetBatchId(), err)
	}
	*synced = true
	s.mu.Lock()
	u := s.out.apply(d, t)
	var answered *batch
	if b := s.inflight; b != nil && d.GetBatchId() >= b.id {
		answered, s.inflight = b, nil
		for k, obj := range b.changes {
			if obj == nil {
				delete(s.acked, k)
			} else {
				s.acked[k] = obj
			}
		}
	}
	s.mu.Unlock()
	if !u.Empty() && s.opts.onUpdate != nil {
		s.opts.onUpdate(u)
	}
	if answered != nil {
		notify(answered.waiters, nil)
	}
	return nil
}

func (s *SyncSession) handleRejected(r *tributaryv1.BatchRejected) error {
	err := &BatchRejectedError{BatchID: r.GetBatchId(), Message: r.GetMessage(), Violations: r.GetViolations()}
	s.mu.Lock()
	b := s.inflight
	if b == nil || b.id != r.GetBatchId() {
		s.mu.Unlock()
		return fmt.Errorf("%w: batch %d rejected, but it is not the batch in flight", ErrMalformedResponse, r.GetBatchId())
	}
	s.inflight = nil
	if b.resend {
		// The server refuses objects an earlier server accepted: retrying
		// would only be refused again. The session ends, and with it the
		// Flush calls waiting for the resend.
		s.waiters = append(b.waiters, s.waiters...)
		s.mu.Unlock()
		return err
	}
	// Drop the refused changes from the desired set, unless the caller has
	// changed the object again since.
	for k := range b.changes {
		if _, changed := s.pending[k]; changed {
			continue
		}
		if obj, held := s.acked[k]; held {
			s.desired[k] = obj
		} else {
			delete(s.desired, k)
		}
	}
	s.mu.Unlock()
	s.opts.logger.Warn("tributary sync batch rejected", "batch", r.GetBatchId(), "message", r.GetMessage())
	notify(b.waiters, err)
	return nil
}
