package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// ErrSessionClosed is the error of a SyncSession ended by Close.
var ErrSessionClosed = errors.New("tributary: sync session closed")

// Default reconnect backoff: the first retry waits between 125 and 250 ms,
// each failure doubles the bound, up to 30 s, so a server that is down for
// long costs a few calls a minute, and one that restarts is found again
// within a second.
const (
	DefaultMinBackoff = 250 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
)

// NamespacedName names an ExtensionService.
type NamespacedName struct {
	Namespace, Name string
}

// Update is one change to a SyncSession's output, with the Envoy resources
// unpacked. Applying every Update in order to an empty state gives the
// session's View: each Update holds only what differs from the state the
// previous ones built, so a caller can push it to its caches as it is.
// The messages are shared with the session's View: treat them as read-only.
type Update struct {
	// BatchID is the last batch the update covers.
	BatchID uint64
	// FullState is true when the update comes from the first answer of a
	// stream: the session compared the server's complete state with what it
	// had delivered before and this update is the difference. After a
	// reconnect, that is how resources the new server no longer produces are
	// removed.
	FullState bool
	// Version is the version of the session's whole output after the update.
	// Versions come from the server instance: they change when the session
	// reconnects to another one.
	Version string
	// Clusters and ClusterLoadAssignments added or changed, sorted by name.
	Clusters               []*clusterv3.Cluster
	ClusterLoadAssignments []*endpointv3.ClusterLoadAssignment
	// ClusterVersions and ClusterLoadAssignmentVersions hold the version of
	// each added or changed resource, by name.
	ClusterVersions               map[string]string
	ClusterLoadAssignmentVersions map[string]string
	// Names of resources that no longer exist.
	RemovedClusters               []string
	RemovedClusterLoadAssignments []string
	// Statuses added or changed, and the ExtensionServices whose status is
	// gone (they were deleted).
	Statuses        []*tributaryv1.ExtensionServiceStatus
	RemovedStatuses []NamespacedName
}

// Empty reports whether u changes nothing.
func (u *Update) Empty() bool {
	return len(u.Clusters) == 0 && len(u.ClusterLoadAssignments) == 0 &&
		len(u.RemovedClusters) == 0 && len(u.RemovedClusterLoadAssignments) == 0 &&
		len(u.Statuses) == 0 && len(u.RemovedStatuses) == 0
}

// View is a SyncSession's last known output. Its maps are copies; the
// messages are shared and read-only.
type View struct {
	// Version is the version of the last Update (or of the last answer when
	// it changed nothing).
	Version                       string
	Clusters                      map[string]*clusterv3.Cluster
	ClusterLoadAssignments        map[string]*endpointv3.ClusterLoadAssignment
	ClusterVersions               map[string]string
	ClusterLoadAssignmentVersions map[string]string
	Statuses                      map[NamespacedName]*tributaryv1.ExtensionServiceStatus
}

// BatchRejectedError is the error of a Flush whose batch the server refused.
// The server's objects are as they were before the batch, and so is the
// session's desired set: the refused changes are dropped, so they are not
// sent again on reconnect. Upsert corrected objects and Flush again.
type BatchRejectedError struct {
	// BatchID is the id of the refused batch.
	BatchID uint64
	// Message says what is wrong, naming the object and field.
	Message string
	// Violations lists every problem found, with its field path (relative
	// to the batch: "upserts[3].metadata.name").
	Violations []*tributaryv1.FieldViolation
}

func (e *BatchRejectedError) Error() string {
	return fmt.Sprintf("tributary: batch %d rejected: %s", e.BatchID, e.Message)
}

// SyncOption configures a SyncSession.
type SyncOption func(*syncOptions)

type syncOptions struct {
	onUpdate               func(Update)
	minBackoff, maxBackoff time.Duration
	logger                 *slog.Logger
	callOptions            []grpc.CallOption
	xdsNodeGroup           string
	publishListeners       bool
	onXDSNack              func(*tributaryv1.XdsNack)
}

// WithUpdateHandler sets the function that receives every non-empty Update.
// It is called from one goroutine, in order, and the Flush whose batch an
// Update covers returns only after the handler has returned, so after a
// successful Flush the handler has seen its effects. The handler must not
// call Flush (it would wait for itself) and should return quickly: while it
// runs the session reads nothing, and the server merges what is pending.
func WithUpdateHandler(f func(Update)) SyncOption {
	return func(o *syncOptions) { o.onUpdate = f }
}

// WithBackoff bounds the wait before reopening a broken stream: the n-th
// consecutive failure waits a random time between half and all of
// min·2ⁿ⁻¹, capped at max. Values ≤ 0 keep the defaults.
func WithBackoff(minDelay, maxDelay time.Duration) SyncOption {
	return func(o *syncOptions) {
		if minDelay > 0 {
			o.minBackoff = minDelay
		}
		if maxDelay > 0 {
			o.maxBackoff = maxDelay
		}
	}
}

// WithLogger sets where the session reports broken streams and reconnects;
// the default is slog.Default().
func WithLogger(l *slog.Logger) SyncOption {
	return func(o *syncOptions) { o.logger = l }
}

// WithSyncCallOptions adds call options to every stream the session opens,
// after the client's defaults.
func WithSyncCallOptions(opts ...grpc.CallOption) SyncOption {
	return func(o *syncOptions) { o.callOptions = append(o.callOptions, opts...) }
}

// WithXDSPublishing asks the server to publish the session's Clusters and
// ClusterLoadAssignments over xDS to the xDS clients of nodeGroup (their
// node.cluster, or node.id), and with listeners also a Listener per Cluster
// for proxyless gRPC clients (SyncStart.xds_node_group and
// publish_listeners). The server must serve xDS (tributary serve
// --xds-address).
func WithXDSPublishing(nodeGroup string, listeners bool) SyncOption {
	return func(o *syncOptions) { o.xdsNodeGroup, o.publishListeners = nodeGroup, listeners }
}

// WithXDSNackHandler sets the function that receives what xDS clients of the
// session's node group refused (XdsNack answers), so the caller can surface
// it. It is called on the session's receiving goroutine and should return
// quickly. Without a handler, NACKs are logged as warnings.
func WithXDSNackHandler(f func(*tributaryv1.XdsNack)) SyncOption {
	return func(o *syncOptions) { o.onXDSNack = f }
}

// objectKey identifies an input object within a session.
type objectKey struct {
	kind            tributaryv1.ObjectKind
	namespace, name string
}

func compareKeys(a, b objectKey) int {
	return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
}

// Reference returns the reference that deletes obj: its kind, namespace and
// name. An object of no kind gets OBJECT_KIND_UNSPECIFIED.
func Reference(obj *tributaryv1.KubernetesObject) *tributaryv1.ObjectReference {
	k := keyOf(obj)
	return &tributaryv1.ObjectReference{Kind: k.kind, Namespace: k.namespace, Name: k.name}
}

func keyOf(obj *tributaryv1.KubernetesObject) objectKey {
	var kind tributaryv1.ObjectKind
	var meta *tributaryv1.ObjectMeta
	switch o := obj.GetKind().(type) {
	case *tributaryv1.KubernetesObject_ExtensionService:
		kind, meta = tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE, o.ExtensionService.GetMetadata()
	case *tributaryv1.KubernetesObject_Service:
		kind, meta = tributaryv1.ObjectKind_OBJECT_KIND_SERVICE, o.Service.GetMetadata()
	case *tributaryv1.KubernetesObject_EndpointSlice:
		kind, meta = tributaryv1.ObjectKind_OBJECT_KIND_ENDPOINT_SLICE, o.EndpointSlice.GetMetadata()
	case *tributaryv1.KubernetesObject_Secret:
		kind, meta = tributaryv1.ObjectKind_OBJECT_KIND_SECRET, o.Secret.GetMetadata()
	case *tributaryv1.KubernetesObject_TlsCertificateDelegation:
		kind, meta = tributaryv1.ObjectKind_OBJECT_KIND_TLS_CERTIFICATE_DELEGATION, o.TlsCertificateDelegation.GetMetadata()
	}
	return objectKey{kind: kind, namespace: meta.GetNamespace(), name: meta.GetName()}
}

// batch is a SyncBatch the session sent and has no answer for yet.
type batch struct {
	id uint64
	// resend marks the batch that restores the acknowledged objects on a new
	// stream; it changes nothing the session has not already acknowledged.
	resend bool
	// changes maps each object the batch changes to its new value, nil for
	// a delete.
	changes map[objectKey]*tributaryv1.KubernetesObject
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
	desired map[objectKey]*tributaryv1.KubernetesObject
	// acked is the server's objects as far as its answers say: the objects
	// of every accepted batch.
	acked map[objectKey]*tributaryv1.KubernetesObject
	// pending holds the keys changed in desired since they were last sent.
	pending map[objectKey]struct{}
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
		opt(&o)
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
		desired:  map[objectKey]*tributaryv1.KubernetesObject{},
		acked:    map[objectKey]*tributaryv1.KubernetesObject{},
		pending:  map[objectKey]struct{}{},
		out:      newOutput(),
	}
	go s.run(ctx)
	return s
}

// Upsert adds objects to the desired set or replaces those with the same
// kind, namespace and name. An object equal to the one already desired is
// not sent again, so informer resyncs cost nothing. The session keeps the
// objects: don't modify them afterwards.
func (s *SyncSession) Upsert(objs ...*tributaryv1.KubernetesObject) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, obj := range objs {
		k := keyOf(obj)
		if cur, ok := s.desired[k]; ok && proto.Equal(cur, obj) {
			continue
		}
		s.desired[k] = obj
		s.pending[k] = struct{}{}
	}
}

// Delete removes objects from the desired set; deleting an object that is
// not in it does nothing.
func (s *SyncSession) Delete(refs ...*tributaryv1.ObjectReference) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ref := range refs {
		k := objectKey{kind: ref.GetKind(), namespace: ref.GetNamespace(), name: ref.GetName()}
		if _, ok := s.desired[k]; !ok {
			continue
		}
		delete(s.desired, k)
		s.pending[k] = struct{}{}
	}
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
	keys := slices.SortedFunc(maps.Keys(s.acked), compareKeys)
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
	b := &batch{changes: make(map[objectKey]*tributaryv1.KubernetesObject, len(s.pending)), waiters: s.waiters}
	s.waiters = nil
	msg := &tributaryv1.SyncBatch{}
	for _, k := range slices.SortedFunc(maps.Keys(s.pending), compareKeys) {
		obj, desired := s.desired[k]
		acked, held := s.acked[k]
		switch {
		case desired && held && acked == obj:
		case desired:
			msg.Upserts = append(msg.Upserts, obj)
			b.changes[k] = obj
		case held:
			msg.Deletes = append(msg.Deletes, &tributaryv1.ObjectReference{Kind: k.kind, Namespace: k.namespace, Name: k.name})
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

// versioned is a resource with its version.
type versioned[T any] struct {
	version string
	msg     T
}

// output is the last known output of a session.
type output struct {
	version  string
	clusters map[string]versioned[*clusterv3.Cluster]
	clas     map[string]versioned[*endpointv3.ClusterLoadAssignment]
	statuses map[NamespacedName]*tributaryv1.ExtensionServiceStatus
}

func newOutput() output {
	return output{
		clusters: map[string]versioned[*clusterv3.Cluster]{},
		clas:     map[string]versioned[*endpointv3.ClusterLoadAssignment]{},
		statuses: map[NamespacedName]*tributaryv1.ExtensionServiceStatus{},
	}
}

// apply applies a delta (t is its unpacked content) and returns what it
// changed. A full-state delta replaces the output: whatever it lacks is
// removed. What equals the output already (same version, equal status) is
// not reported, so an Update never repeats what the caller has.
func (o *output) apply(d *tributaryv1.SyncDelta, t *Translation) Update {
	u := Update{BatchID: d.GetBatchId(), FullState: d.GetFullState(), Version: d.GetVersion()}
	o.version = d.GetVersion()

	removedClusters, removedCLAs := d.GetRemovedClusters(), d.GetRemovedClusterLoadAssignments()
	var removedStatuses []NamespacedName
	if !d.GetFullState() {
		for _, r := range d.GetRemovedStatuses() {
			removedStatuses = append(removedStatuses, NamespacedName{r.GetNamespace(), r.GetName()})
		}
	} else {
		removedClusters = absent(o.clusters, t.ClusterVersions)
		removedCLAs = absent(o.clas, t.ClusterLoadAssignmentVersions)
		present := make(map[NamespacedName]bool, len(t.Statuses))
		for _, st := range t.Statuses {
			present[NamespacedName{st.GetNamespace(), st.GetName()}] = true
		}
		for _, n := range slices.SortedFunc(maps.Keys(o.statuses), compareNames) {
			if !present[n] {
				removedStatuses = append(removedStatuses, n)
			}
		}
	}

	u.Clusters, u.ClusterVersions, u.RemovedClusters = applyResources(o.clusters, t.Clusters, t.ClusterVersions, (*clusterv3.Cluster).GetName, removedClusters)
	u.ClusterLoadAssignments, u.ClusterLoadAssignmentVersions, u.RemovedClusterLoadAssignments = applyResources(o.clas, t.ClusterLoadAssignments, t.ClusterLoadAssignmentVersions, (*endpointv3.ClusterLoadAssignment).GetClusterName, removedCLAs)
	for _, st := range t.Statuses {
		n := NamespacedName{st.GetNamespace(), st.GetName()}
		if cur, ok := o.statuses[n]; ok && proto.Equal(cur, st) {
			continue
		}
		o.statuses[n] = st
		u.Statuses = append(u.Statuses, st)
	}
	for _, n := range removedStatuses {
		if _, ok := o.statuses[n]; ok {
			delete(o.statuses, n)
			u.RemovedStatuses = append(u.RemovedStatuses, n)
		}
	}
	return u
}

func compareNames(a, b NamespacedName) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// absent returns, sorted, the names in have that are not in keep.
func absent[T any](have map[string]versioned[T], keep map[string]string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if _, ok := keep[name]; !ok {
			out = append(out, name)
		}
	}
	return out
}

// applyResources stores changed resources whose version differs from the
// stored one and deletes the removed names that are stored, returning what
// actually changed.
func applyResources[T any](have map[string]versioned[T], changed []T, versions map[string]string, nameOf func(T) string, removed []string) (outChanged []T, outVersions map[string]string, outRemoved []string) {
	for _, r := range changed {
		name := nameOf(r)
		v := versions[name]
		if cur, ok := have[name]; ok && cur.version == v {
			continue
		}
		have[name] = versioned[T]{version: v, msg: r}
		outChanged = append(outChanged, r)
		if outVersions == nil {
			outVersions = map[string]string{}
		}
		outVersions[name] = v
	}
	for _, name := range removed {
		if _, ok := have[name]; ok {
			delete(have, name)
			outRemoved = append(outRemoved, name)
		}
	}
	return outChanged, outVersions, outRemoved
}

// notify answers every waiting Flush.
func notify(waiters []chan<- error, err error) {
	for _, w := range waiters {
		w <- err
	}
}
