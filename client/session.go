package client

import (
	"context"
	"log/slog"
	"maps"
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/client/internal/objectkind"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// Reference returns the reference that deletes obj: its kind, namespace and
// name. An object of no kind gets OBJECT_KIND_UNSPECIFIED.
func Reference(obj *tributaryv1.KubernetesObject) *tributaryv1.ObjectReference {
	return objectkind.KeyOf(obj).Reference()
}

// batch is a SyncBatch the session sent and has no answer for yet.
type batch struct {
	id uint64
	// resend marks the batch that restores the acknowledged objects on a new
	// stream; it changes nothing the session has not already acknowledged.
	resend bool
	// changes maps each object the batch changes to its new value, nil for
	// a delete.
	changes map[objectkind.Key]*tributaryv1.KubernetesObject
	// waiters are the Flush calls whose changes the batch carries.
	waiters []chan<- error
}

// SyncSession is a client's side of TranslationService.Sync: it holds the
// objects the caller wants translated (the desired set) and the last known
// output, and keeps the two in step over a stream it reopens when it breaks.
//
// Changes (Upsert, Delete) are collected until Flush sends them as one
// batch. One batch is in flight at a time; changes made meanwhile go in the
// next, so a fast writer produces few large batches rather than many small
// ones.
//
// A stream that breaks with a transient error (Unavailable, an ended
// stream, a malformed answer) is reopened after a backoff. The new stream
// gets the settings and ONE batch holding every object the server had
// acknowledged; changes not yet acknowledged follow in the next batch,
// exactly as if they had been made after the reconnect. The first answer of
// the new stream holds the server's complete state, which replaces the
// output: what is gone is delivered as removals, what is unchanged is not
// delivered again, so the handler sees one consistent view, never a mix of
// two servers' states. Until then the last known output stays as it is.
// A permanent error (InvalidArgument for bad settings, Unimplemented,
// PermissionDenied, Unauthenticated, FailedPrecondition, a message over a
// size limit, or a refused resend) ends the session: Err reports it and
// Flush returns it.
//
// A stream only breaks when gRPC notices the connection is gone; to notice
// a server that vanished without closing its connections, dial with client
// keepalive (keepalive.ClientParameters; the server accepts pings every 10 s
// or more, even without streams).
//
// A SyncSession is safe for concurrent use.
type SyncSession struct {
	rpc      tributaryv1.TranslationServiceClient
	settings *tributaryv1.Settings
	opts     syncOptions
	cancel   context.CancelCauseFunc
	done     chan struct{}
	// wake tells the run loop that a Flush is waiting.
	wake chan struct{}

	mu sync.Mutex
	// desired is every object the caller upserted and did not delete.
	desired map[objectkind.Key]*tributaryv1.KubernetesObject
	// acked is the server's objects as far as its answers say: the objects
	// of every accepted batch.
	acked map[objectkind.Key]*tributaryv1.KubernetesObject
	// pending holds the keys changed in desired since they were last sent.
	pending map[objectkind.Key]struct{}
	// waiters are the Flush calls waiting for pending to be sent and answered.
	waiters  []chan<- error
	inflight *batch
	lastID   uint64
	out      output
	// err is why the session ended; nil while it runs.
	err error
}

// Sync opens a Sync session under settings and keeps it open until ctx ends
// or Close is called. The stream itself opens at the first Flush that has
// something to send.
func (c *Client) Sync(ctx context.Context, settings *tributaryv1.Settings, opts ...SyncOption) *SyncSession {
	o := syncOptions{minBackoff: DefaultMinBackoff, maxBackoff: DefaultMaxBackoff, logger: slog.Default()}
	for _, opt := range opts {
		opt.applyToSync(&o)
	}
	o.maxBackoff = max(o.maxBackoff, o.minBackoff)
	ctx, cancel := context.WithCancelCause(ctx)
	s := &SyncSession{
		rpc:      c.rpc,
		settings: settings,
		opts:     o,
		cancel:   cancel,
		done:     make(chan struct{}),
		wake:     make(chan struct{}, 1),
		desired:  map[objectkind.Key]*tributaryv1.KubernetesObject{},
		acked:    map[objectkind.Key]*tributaryv1.KubernetesObject{},
		pending:  map[objectkind.Key]struct{}{},
		out:      newOutput(),
	}
	go s.run(ctx)
	return s
}

// Upsert adds objects to the desired set or replaces those with the same
// kind, namespace and name, and reports whether the set changed. An object
// equal to the one already desired is not sent again, so informer resyncs
// cost nothing, and a caller that flushes after each change can tell that
// there is nothing to flush. The session keeps the objects: don't modify
// them afterwards.
func (s *SyncSession) Upsert(objs ...*tributaryv1.KubernetesObject) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, obj := range objs {
		k := objectkind.KeyOf(obj)
		if cur, ok := s.desired[k]; ok && proto.Equal(cur, obj) {
			continue
		}
		s.desired[k] = obj
		s.pending[k] = struct{}{}
		changed = true
	}
	return changed
}

// Delete removes objects from the desired set, and reports whether the set
// changed: deleting an object that is not in it does nothing.
func (s *SyncSession) Delete(refs ...*tributaryv1.ObjectReference) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ref := range refs {
		k := objectkind.KeyOfReference(ref)
		if _, ok := s.desired[k]; !ok {
			continue
		}
		delete(s.desired, k)
		s.pending[k] = struct{}{}
		changed = true
	}
	return changed
}

// Flush sends the changes made since the last batch and waits until the
// server has answered the batch that carries them (after the update handler
// has seen the answer). With nothing to send it returns at once, or, when a
// batch is in flight, once that batch is answered. A refused batch gives a
// *BatchRejectedError. If the stream breaks first, the changes are sent
// again on the next stream and Flush keeps waiting, until ctx ends or the
// session does.
func (s *SyncSession) Flush(ctx context.Context) error {
	answered := make(chan error, 1)
	s.mu.Lock()
	switch {
	case s.err != nil:
		err := s.err
		s.mu.Unlock()
		return err
	case len(s.pending) > 0:
		s.waiters = append(s.waiters, answered)
	case s.inflight != nil:
		s.inflight.waiters = append(s.inflight.waiters, answered)
	default:
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	select {
	case err := <-answered:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// View returns the last known output.
func (s *SyncSession) View() View {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := View{
		Version:                       s.out.version,
		Clusters:                      make(map[string]*clusterv3.Cluster, len(s.out.clusters)),
		ClusterLoadAssignments:        make(map[string]*endpointv3.ClusterLoadAssignment, len(s.out.clas)),
		ClusterVersions:               make(map[string]string, len(s.out.clusters)),
		ClusterLoadAssignmentVersions: make(map[string]string, len(s.out.clas)),
		Statuses:                      maps.Clone(s.out.statuses),
	}
	for name, r := range s.out.clusters {
		v.Clusters[name], v.ClusterVersions[name] = r.msg, r.version
	}
	for name, r := range s.out.clas {
		v.ClusterLoadAssignments[name], v.ClusterLoadAssignmentVersions[name] = r.msg, r.version
	}
	return v
}

// Done is closed when the session has ended.
func (s *SyncSession) Done() <-chan struct{} { return s.done }

// Err returns why the session ended (ErrSessionClosed after Close, the
// cause of ctx when it ended), or nil while it runs.
func (s *SyncSession) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the session and its stream, and waits until it has stopped.
// Waiting Flush calls return ErrSessionClosed.
func (s *SyncSession) Close() {
	s.cancel(ErrSessionClosed)
	<-s.done
}
