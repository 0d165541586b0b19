package server

import (
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/session"
)

// Defaults of the limits in Options. Each bounds what one client can make
// the server hold or do; together with the message size they keep a
// misbehaving or hostile client from exhausting the process.
const (
	// DefaultMaxBatchObjects bounds the upserts and deletes of one
	// SyncBatch. A batch is applied in one step on the session's
	// goroutine, so the bound also bounds how long one batch holds the
	// session (the message size limit alone would let through a million
	// tiny deletes).
	DefaultMaxBatchObjects = 100_000
	// DefaultMaxSessions bounds the Sync sessions open at once in the
	// process: each holds a copy of a cluster's worth of objects.
	DefaultMaxSessions = 1000
	// DefaultMaxSessionBytes bounds the estimated memory of one session
	// (see session.SizeChange): room for about six million endpoints of
	// IPv4 pods, a hundred to a slice, estimated at 86 bytes each.
	DefaultMaxSessionBytes = 512 << 20
	// DefaultMaxConcurrentStreams bounds the calls in flight on one
	// connection. A translation uses every CPU, so a handful per
	// connection is plenty; the bound keeps one client from queueing
	// unbounded work and memory (each call may hold a whole request).
	DefaultMaxConcurrentStreams = 16
	// DefaultSyncStartTimeout bounds how long a Sync stream may stay
	// without its SyncStart. A client sends its start as it opens the
	// stream; one that does not within seconds is broken or hostile, and
	// each such stream still holds a goroutine and a stream of its
	// connection.
	DefaultSyncStartTimeout = 10 * time.Second
)

// ReasonResourceExhausted marks a batch rejected because the session would
// outgrow its memory bound.
const ReasonResourceExhausted = "RESOURCE_EXHAUSTED"

// syncLimits are the Sync limits of one server; the zero value means the
// defaults, without a bound on sessions (a TranslationService used in
// process).
type syncLimits struct {
	maxBatchObjects int
	maxSessionBytes int64
	// maxSendBytes bounds one answer (Options.MaxSendMsgSize): a Translate
	// response, or a Sync session's whole output (see output).
	maxSendBytes int
	// startTimeout bounds the wait for a stream's SyncStart; 0 means
	// DefaultSyncStartTimeout.
	startTimeout time.Duration
	// sessions counts the server's open sessions; nil counts nothing.
	sessions *sessionSlots
}

func newSyncLimits(opts Options) syncLimits {
	return syncLimits{
		maxBatchObjects: opts.MaxBatchObjects,
		maxSessionBytes: opts.MaxSessionBytes,
		maxSendBytes:    opts.MaxSendMsgSize,
		startTimeout:    opts.SyncStartTimeout,
		sessions:        &sessionSlots{max: int64(orDefault(opts.MaxSessions, DefaultMaxSessions)), metrics: opts.Metrics},
	}
}

// sessionSlots admits at most max sessions at once. Its count is the one
// source of tributary_sync_sessions_active: a slot taken moves the gauge up
// and a slot given back moves it down, in the same step, so the two never
// disagree.
type sessionSlots struct {
	max     int64
	active  atomic.Int64
	metrics *metrics.Metrics // nil records nothing
}

// admitSession takes a session slot, to give back with release when the
// session ends, or fails with ResourceExhausted when every slot is taken.
// The client may retry later, or on another replica. A stream takes its
// slot once its SyncStart is read and valid: streams that have sent nothing
// hold none, so they cannot lock sessions out (DefaultSyncStartTimeout
// bounds how long they stay).
func (l syncLimits) admitSession() (release func(), err error) {
	slots := l.sessions
	if slots == nil {
		return func() {}, nil
	}
	if slots.active.Add(1) > slots.max {
		slots.active.Add(-1)
		return nil, status.Errorf(codes.ResourceExhausted, "the server holds %d Sync sessions, its limit; retry later", slots.max)
	}
	slots.metrics.SessionStarted()
	return func() {
		slots.active.Add(-1)
		slots.metrics.SessionEnded()
	}, nil
}

// sessionBudget is what one session may still hold.
type sessionBudget struct {
	limits syncLimits
	// held is the estimated size of the session's objects: the sum of the
	// SizeChanges of the batches applied.
	held int64
}

// decodeWithinLimits decodes pb like decodeBatch, after checking that it
// holds at most MaxBatchObjects objects, and then that applying it keeps
// the session within MaxSessionBytes. A batch beyond either limit is
// rejected whole (problems go to p) and changes nothing; the session goes
// on. When it returns a batch without problems, that batch must be applied:
// its size is counted as held.
func (s *syncCall) decodeWithinLimits(pb *tributaryv1.SyncBatch, offWire []*sliceOffWire, p *problems) *session.Batch {
	maxObjects := orDefault(s.budget.limits.maxBatchObjects, DefaultMaxBatchObjects)
	if n := len(pb.GetUpserts()) + len(pb.GetDeletes()); n > maxObjects {
		p.add("batch", ReasonOutOfRange, fmt.Sprintf("batch holds %d upserts and deletes; a batch holds at most %d", n, maxObjects))
		return nil
	}
	b := decodeBatch(pb, offWire, p)
	if p.count > 0 {
		return b
	}
	maxBytes := orDefault(s.budget.limits.maxSessionBytes, DefaultMaxSessionBytes)
	growth := s.session.SizeChange(b)
	if after := s.budget.held + growth; after > maxBytes {
		p.add("batch", ReasonResourceExhausted, fmt.Sprintf(
			"batch would bring the session to about %d bytes, over its limit of %d (it holds about %d): delete objects first, or spread them over several sessions",
			after, maxBytes, s.budget.held))
		return nil
	}
	s.budget.held += growth
	return b
}
