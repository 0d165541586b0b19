package server

import (
	"context"
	"log/slog"
	"time"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
)

// syncObserver reports one Sync session: its log lines, every one of which
// carries the session id, and its metrics. Like the session, it belongs to
// the call's loop.
type syncObserver struct {
	log     *slog.Logger
	metrics *metrics.Metrics // nil records nothing
	began   time.Time

	// reported is what tributary_sync_session_objects was given, by kind:
	// what to take back when the session ends. Nil without metrics.
	reported                                map[source.Kind]int
	batches, rejections, answers, coalesced uint64
}

// observeSession starts reporting the session of a Sync call whose stream
// has ctx and which start opened.
func (t translationService) observeSession(ctx context.Context, start *tributaryv1.SyncStart) *syncObserver {
	o := &syncObserver{log: orDefaultLogger(t.logger).With(sessionKey, sessionID(ctx)), metrics: t.metrics, began: time.Now()}
	if o.metrics != nil {
		o.reported = map[source.Kind]int{}
	}
	o.log.Debug("sync session started", "include_json", start.GetIncludeJson())
	return o
}

// applied records that s applied a batch in d.
func (o *syncObserver) applied(s *session.Session, d time.Duration) {
	o.metrics.ObserveTranslation(metrics.RPCSync, d)
	o.batches++
	if o.reported == nil {
		return
	}
	for k := range source.Kinds() {
		n := s.Objects(k)
		o.metrics.AddSessionObjects(k.String(), n-o.reported[k])
		o.reported[k] = n
	}
}

// rejected records that batch id was rejected for p.
func (o *syncObserver) rejected(id uint64, p *problems) {
	o.metrics.BatchRejected()
	o.rejections++
	o.log.Info("sync batch rejected", "batch", id, "error", p.message())
}

// answered records that resp, a delta covering the given number of
// batches, was sent.
func (o *syncObserver) answered(resp *tributaryv1.SyncResponse, covered uint64) {
	delta := resp.GetDelta()
	countSent(o.metrics, metrics.RPCSync, len(delta.GetClusters()), len(delta.GetClusterLoadAssignments()))
	merged := covered - 1 // every answer covers at least one batch
	o.metrics.DeltasCoalesced(int(merged))
	o.answers++
	o.coalesced += merged
}

// end records that the session ended, with err (nil when the client
// half-closed): its objects no longer count (the session stops counting as
// active when it gives its slot back, see admitSession).
func (o *syncObserver) end(err error) {
	for k, n := range o.reported {
		o.metrics.AddSessionObjects(k.String(), -n)
	}
	o.log.Debug("sync session ended", "batches", o.batches, "rejected", o.rejections, "answers", o.answers,
		"coalesced", o.coalesced, "duration", time.Since(o.began), "error", err)
}
