package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/session"
)

// syncObserver reports one Sync session: its log lines, every one of which
// carries the session id, and its metrics. Its receiver-side methods
// (applied, rejected) and sender-side ones (answered) may run at once.
type syncObserver struct {
	log     *slog.Logger
	metrics *metrics.Metrics // nil records nothing
	began   time.Time

	mu sync.Mutex
	// held is nil without metrics (see heldObjects).
	held *heldObjects
	// over is set by end; objects applied later are not counted, since
	// end has withdrawn the session's objects already.
	over                                    bool
	batches, rejections, answers, coalesced uint64
}

// observeSession starts reporting the session of a Sync call whose stream
// has ctx and which start opened.
func (t translationService) observeSession(ctx context.Context, start *tributaryv1.SyncStart) *syncObserver {
	o := &syncObserver{log: orDefaultLogger(t.logger).With(sessionKey, sessionID(ctx)), metrics: t.metrics, began: time.Now()}
	if o.metrics != nil {
		o.held = newHeldObjects()
	}
	o.metrics.SessionStarted()
	o.log.Debug("sync session started", "include_json", start.GetIncludeJson())
	return o
}

// applied records that the session applied b in d.
func (o *syncObserver) applied(b *session.Batch, d time.Duration) {
	o.metrics.ObserveTranslation(metrics.RPCSync, d)
	var changes map[session.Kind]int
	if o.held != nil {
		changes = o.held.apply(b) // the receiver's alone, like the session
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.batches++
	if !o.over && o.held != nil {
		o.held.report(o.metrics, changes)
	}
}

// rejected records that batch id was rejected for p.
func (o *syncObserver) rejected(id uint64, p *problems) {
	o.metrics.BatchRejected()
	o.mu.Lock()
	o.rejections++
	o.mu.Unlock()
	o.log.Info("sync batch rejected", "batch", id, "error", p.message())
}

// answered records that resp, a delta covering the given number of
// batches, was sent.
func (o *syncObserver) answered(resp *tributaryv1.SyncResponse, covered uint64) {
	delta := resp.GetDelta()
	countSent(o.metrics, metrics.RPCSync, delta.GetClusters(), delta.GetClusterLoadAssignments())
	merged := covered - 1 // every answer covers at least one batch
	o.metrics.DeltasCoalesced(int(merged))
	o.mu.Lock()
	defer o.mu.Unlock()
	o.answers++
	o.coalesced += merged
}

// end records that the session ended, with err (nil when the client
// half-closed): the session no longer counts as active, nor do its objects.
func (o *syncObserver) end(err error) {
	o.mu.Lock()
	o.over = true
	if o.held != nil {
		o.held.withdraw(o.metrics)
	}
	batches, rejections, answers, coalesced := o.batches, o.rejections, o.answers, o.coalesced
	o.mu.Unlock()
	o.metrics.SessionEnded()
	o.log.Debug("sync session ended", "batches", batches, "rejected", rejections, "answers", answers,
		"coalesced", coalesced, "duration", time.Since(o.began), "error", err)
}
