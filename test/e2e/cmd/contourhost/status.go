package main

import (
	"context"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"time"

	contour_v1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	meta_v1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// Status writes wait between attempts when the API server fails them: from
// minStatusRetry, doubling, up to maxStatusRetry. The cap is short so that
// statuses follow within seconds once an API server comes back.
const (
	minStatusRetry = 100 * time.Millisecond
	maxStatusRetry = 5 * time.Second
	// conflictRetries bounds the immediate re-reads after a write lost a
	// race with another writer; past it the write waits like any other
	// failure.
	conflictRetries = 3
)

// statusWriter is contour.StatusWriter for Contour's ExtensionService
// status: status.conditions holding a DetailedCondition of type Valid,
// written through the status subresource.
//
// WriteStatus never blocks. The adapter calls it from the goroutine that
// delivers its session's output, the same goroutine that feeds the cluster
// sink and answers Flush; an API server that is slow, rate-limited or down
// must not hold Clusters and xDS back. (Contour's own status updater blocks
// its rebuild loop once its queue fills, which is why it needs tens of
// seconds to serve 1,000 ExtensionServices at its default client rate.) So
// WriteStatus only records the latest status of each ExtensionService and
// wakes one worker goroutine, which writes them one by one at the pace of
// the client's rate limiter (rest.Config QPS/Burst). A newer status
// replaces a queued one, so the queue never holds more than one entry per
// ExtensionService, and only the latest status is ever written.
type statusWriter struct {
	cached client.Reader // the informer cache: reads cost the API server nothing
	live   client.Client // reads after a conflict, and the writes
	out    *lines
	log    *slog.Logger
	wake   chan struct{}

	mu       sync.Mutex
	pending  map[types.NamespacedName]*tributaryv1.ExtensionServiceStatus
	queue    []types.NamespacedName // pending's keys, oldest first
	inflight types.NamespacedName   // the key being written, if any
	// inflightRemoved says RemoveStatus was called for inflight while it
	// was being written, so a failed write must not be queued again.
	inflightRemoved bool
}

func newStatusWriter(cached client.Reader, live client.Client, out *lines, log *slog.Logger) *statusWriter {
	return &statusWriter{
		cached:  cached,
		live:    live,
		out:     out,
		log:     log,
		wake:    make(chan struct{}, 1),
		pending: map[types.NamespacedName]*tributaryv1.ExtensionServiceStatus{},
	}
}

// WriteStatus queues st, replacing a status queued earlier for the same
// ExtensionService, and returns at once.
func (w *statusWriter) WriteStatus(namespace, name string, st *tributaryv1.ExtensionServiceStatus) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	w.mu.Lock()
	if _, queued := w.pending[key]; !queued {
		w.queue = append(w.queue, key)
	}
	w.pending[key] = st
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default: // the worker is already awake
	}
}

// RemoveStatus forgets a queued status. The ExtensionService is gone, and
// its status with it: there is nothing to write.
func (w *statusWriter) RemoveStatus(namespace, name string) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, queued := w.pending[key]; queued {
		delete(w.pending, key)
		w.queue = slices.DeleteFunc(w.queue, func(k types.NamespacedName) bool { return k == key })
	}
	if key == w.inflight {
		w.inflightRemoved = true
	}
}

// run writes queued statuses until ctx ends. It never gives up on an API
// server: while one is unreachable every write fails, and the worker waits
// longer between attempts, up to maxStatusRetry; the queue meanwhile keeps
// only the latest status of each ExtensionService.
func (w *statusWriter) run(ctx context.Context) {
	retry := time.Duration(0)
	for {
		key, st, ok := w.next()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
				continue
			}
		}
		err := w.write(ctx, key, st)
		w.done(key, st, err)
		if err == nil {
			retry = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		retry = min(max(2*retry, minStatusRetry), maxStatusRetry)
		w.log.Warn("contourhost: cannot write an ExtensionService status; retrying", "extensionservice", key, "in", retry, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
	}
}

// next takes the oldest queued status.
func (w *statusWriter) next() (types.NamespacedName, *tributaryv1.ExtensionServiceStatus, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return types.NamespacedName{}, nil, false
	}
	key := w.queue[0]
	w.queue = w.queue[1:]
	st := w.pending[key]
	delete(w.pending, key)
	w.inflight, w.inflightRemoved = key, false
	return key, st, true
}

// done queues a failed write again, at the back, unless a newer status
// arrived meanwhile (it is queued already) or the ExtensionService went.
func (w *statusWriter) done(key types.NamespacedName, st *tributaryv1.ExtensionServiceStatus, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, newer := w.pending[key]
	if err != nil && !newer && !w.inflightRemoved {
		w.pending[key] = st
		w.queue = append(w.queue, key)
	}
	w.inflight, w.inflightRemoved = types.NamespacedName{}, false
}

// write puts st on the ExtensionService key. It returns nil when the write
// is done or pointless (the object is gone, or already says st), and an
// error when it should be tried again later.
func (w *statusWriter) write(ctx context.Context, key types.NamespacedName, st *tributaryv1.ExtensionServiceStatus) error {
	// The first read is from the informer cache, which usually is current.
	// When it is not, the write conflicts (the resourceVersion is stale)
	// and the next attempt reads the API server itself.
	reader := w.cached
	for attempt := 0; ; attempt++ {
		var es contour_v1alpha1.ExtensionService
		if err := reader.Get(ctx, key, &es); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		conditions := mergeConditions(es.Status.Conditions, st.GetConditions(), meta_v1.Now())
		if equalIgnoringTransitionTime(conditions, es.Status.Conditions) {
			return nil // as Contour's updater: a write that changes nothing is not made
		}
		es.Status.Conditions = conditions
		err := w.live.Status().Update(ctx, &es)
		switch {
		case err == nil:
			w.printWritten(key, conditions)
			return nil
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err) && attempt < conflictRetries:
			reader = w.live
			continue
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			// The CRD's schema refused the status: writing it again
			// cannot help, and a retry loop would starve the others.
			w.log.Error("contourhost: the API server refused an ExtensionService status", "extensionservice", key, "error", err)
			return nil
		}
		return err
	}
}

// statusLine is the {"status":...} line.
type statusLine struct {
	Status writtenStatus `json:"status"`
}

type writtenStatus struct {
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Generation int64  `json:"generation"`
	Reason     string `json:"reason"`
}

func (w *statusWriter) printWritten(key types.NamespacedName, conditions []contour_v1.DetailedCondition) {
	line := statusLine{Status: writtenStatus{Namespace: key.Namespace, Name: key.Name}}
	for _, c := range conditions {
		if c.Type == contour_v1.ValidConditionType {
			line.Status.Generation, line.Status.Reason = c.ObservedGeneration, c.Reason
		}
	}
	w.out.print(line)
}

// mergeConditions returns have with each of Tributary's conditions (in
// practice one, Valid) put in place of the condition of its type, or
// appended. Conditions of other types are kept untouched: Contour, too,
// leaves conditions it does not own to whoever set them.
//
// lastTransitionTime is kept from the condition being replaced when its
// status and reason are the same, else it is now: a status that only
// restates the same verdict (a new observedGeneration, a reworded message)
// is not a transition.
func mergeConditions(have []contour_v1.DetailedCondition, want []*tributaryv1.DetailedCondition, now meta_v1.Time) []contour_v1.DetailedCondition {
	out := slices.Clone(have)
	for _, c := range want {
		dc := contour_v1.DetailedCondition{
			Condition: meta_v1.Condition{
				Type:               c.GetType(),
				Status:             meta_v1.ConditionStatus(c.GetStatus()),
				ObservedGeneration: c.GetObservedGeneration(),
				LastTransitionTime: now,
				Reason:             c.GetReason(),
				Message:            c.GetMessage(),
			},
			Errors:   subConditions(c.GetErrors()),
			Warnings: subConditions(c.GetWarnings()),
		}
		i := slices.IndexFunc(out, func(o contour_v1.DetailedCondition) bool { return o.Type == dc.Type })
		if i < 0 {
			out = append(out, dc)
			continue
		}
		if out[i].Status == dc.Status && out[i].Reason == dc.Reason {
			dc.LastTransitionTime = out[i].LastTransitionTime
		}
		out[i] = dc
	}
	return out
}

// subConditions converts errors or warnings; none gives nil, as the API
// server returns an omitted list, so that comparisons see them equal.
func subConditions(in []*tributaryv1.SubCondition) []contour_v1.SubCondition {
	if len(in) == 0 {
		return nil
	}
	out := make([]contour_v1.SubCondition, len(in))
	for i, s := range in {
		out[i] = contour_v1.SubCondition{
			Type:    s.GetType(),
			Status:  meta_v1.ConditionStatus(s.GetStatus()),
			Reason:  s.GetReason(),
			Message: s.GetMessage(),
		}
	}
	return out
}

// equalIgnoringTransitionTime reports whether a and b say the same, whatever
// their lastTransitionTimes (which the API server also rounds to seconds).
func equalIgnoringTransitionTime(a, b []contour_v1.DetailedCondition) bool {
	return slices.EqualFunc(a, b, func(x, y contour_v1.DetailedCondition) bool {
		x.LastTransitionTime, y.LastTransitionTime = meta_v1.Time{}, meta_v1.Time{}
		return reflect.DeepEqual(x, y)
	})
}
