package contour

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/client"
	"github.com/tributary-dev/tributary/client/internal/objectkind"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// replicaSet is the syncTarget of a ReplicatedAdapter.
type replicaSet struct {
	ctx      context.Context
	cancel   context.CancelFunc
	settings *tributaryv1.Settings
	syncOpts []client.SyncOption
	dialOpts []grpc.DialOption
	resolve  ResolveFunc
	interval time.Duration
	deliver  func(client.Update)
	logger   *slog.Logger
	// onNack gets what the xDS clients of the group the sessions publish
	// to refuse, with the replica that reported it.
	onNack func(replica string, n *tributaryv1.XdsNack)
	wg     sync.WaitGroup

	// deliverMu orders everything that reaches the sinks: it is held while
	// the primary changes and while an update is delivered, so the sinks
	// never get a replaced primary's update after its successor's output.
	// Lock order: deliverMu before mu.
	deliverMu sync.Mutex
	delivered deliveredState

	mu sync.Mutex
	// desired is every object upserted and not deleted: the complete set a
	// joining replica is sent.
	desired  map[objectkind.Key]*tributaryv1.KubernetesObject
	replicas map[string]*replica
	primary  *replica
	// started is set by the first Flush; gen counts Flush calls, so a
	// replica's flush that began after the n-th covers its changes.
	started bool
	gen     uint64
	// changed is closed, and replaced, when a flush completes or the
	// primary changes: Flush waits on it.
	changed chan struct{}
	closed  bool
}

// replica is one Tributary instance and the session to it.
type replica struct {
	address string
	conn    *grpc.ClientConn
	session *client.SyncSession
	cancel  context.CancelFunc
	// kick asks the replica's flush loop for a flush.
	kick chan struct{}
	wg   sync.WaitGroup

	// Guarded by replicaSet.mu. answered is set once a flush that began
	// after the replica joined, and after its connection was last lost,
	// has been answered: its output is then that of every object sent so
	// far. A session that reconnects keeps showing the output it had until
	// its new stream answers, and a Flush waits for that answer when the
	// session has changes the replica missed. flushedGen is the gen the
	// last flush covered, flushErr its error. lost counts the times the
	// connection left Ready, so that a flush that spans a loss does not
	// count.
	answered   bool
	flushedGen uint64
	flushErr   error
	lost       uint64
}

// Upsert and Delete report whether the desired set changed, whatever the
// replicas hold: a replica that joins later is sent the whole set anyway.
func (rs *replicaSet) Upsert(objs ...*tributaryv1.KubernetesObject) (changed bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, o := range objs {
		k := objectkind.KeyOf(o)
		if cur, ok := rs.desired[k]; !ok || !proto.Equal(cur, o) {
			changed = true
		}
		rs.desired[k] = o
	}
	for _, r := range rs.replicas {
		r.session.Upsert(objs...)
	}
	return changed
}

func (rs *replicaSet) Delete(refs ...*tributaryv1.ObjectReference) (changed bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, ref := range refs {
		k := objectkind.KeyOfReference(ref)
		if _, ok := rs.desired[k]; ok {
			changed = true
		}
		delete(rs.desired, k)
	}
	for _, r := range rs.replicas {
		r.session.Delete(refs...)
	}
	return changed
}

// Flush asks every replica to flush, then waits until the primary has
// answered a flush that covers this one, and returns that flush's error.
// It first checks the primary itself, rather than relying on the
// connection watchers having run since the last change.
func (rs *replicaSet) Flush(ctx context.Context) error {
	rs.elect()
	rs.mu.Lock()
	if rs.closed {
		rs.mu.Unlock()
		return client.ErrSessionClosed
	}
	rs.started = true
	rs.gen++
	target := rs.gen
	for _, r := range rs.replicas {
		r.requestFlush()
	}
	rs.mu.Unlock()
	for {
		// deliverMu makes sure a new primary's output has reached the
		// sinks before its answers count.
		rs.deliverMu.Lock()
		rs.mu.Lock()
		p, closed, changed := rs.primary, rs.closed, rs.changed
		done := p != nil && p.answered && p.flushedGen >= target
		var err error
		if done {
			err = p.flushErr
		}
		rs.mu.Unlock()
		rs.deliverMu.Unlock()
		switch {
		case closed:
			return client.ErrSessionClosed
		case done:
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-rs.ctx.Done():
			return client.ErrSessionClosed
		}
	}
}

// Close ends every session and waits for every goroutine of the set.
func (rs *replicaSet) Close() {
	rs.cancel()
	rs.mu.Lock()
	rs.closed = true
	replicas := slices.Collect(maps.Values(rs.replicas))
	clear(rs.replicas)
	rs.primary = nil
	rs.broadcast()
	rs.mu.Unlock()
	for _, r := range replicas {
		r.close()
	}
	rs.wg.Wait()
}

// broadcast wakes every waiting Flush. Called with rs.mu held.
func (rs *replicaSet) broadcast() {
	close(rs.changed)
	rs.changed = make(chan struct{})
}

func (r *replica) requestFlush() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// resolveLoop looks the replicas up every interval until the set closes.
func (rs *replicaSet) resolveLoop() {
	ticker := time.NewTicker(rs.interval)
	defer ticker.Stop()
	for {
		rs.refresh()
		select {
		case <-ticker.C:
		case <-rs.ctx.Done():
			return
		}
	}
}

// refresh looks the replicas up once and opens and closes sessions to
// match.
func (rs *replicaSet) refresh() {
	ctx, cancel := context.WithTimeout(rs.ctx, rs.interval)
	addrs, err := rs.resolve(ctx)
	cancel()
	if rs.ctx.Err() != nil {
		return
	}
	if err != nil || len(addrs) == 0 {
		rs.logger.Warn("tributary: looking up replicas failed; keeping the known ones", "error", err, "found", len(addrs))
		return
	}
	want := make(map[string]bool, len(addrs))
	for _, a := range addrs {
		want[a] = true
	}

	rs.mu.Lock()
	if rs.closed {
		rs.mu.Unlock()
		return
	}
	var gone []*replica
	for addr, r := range rs.replicas {
		if !want[addr] {
			gone = append(gone, r)
			delete(rs.replicas, addr)
		}
	}
	for _, addr := range slices.Sorted(maps.Keys(want)) {
		if _, ok := rs.replicas[addr]; ok {
			continue
		}
		r, err := rs.join(addr)
		if err != nil {
			rs.logger.Error("tributary: cannot connect to replica", "address", addr, "error", err)
			continue
		}
		rs.replicas[addr] = r
	}
	rs.mu.Unlock()

	for _, r := range gone {
		rs.logger.Info("tributary: replica gone; closing its session", "address", r.address)
		r.close()
	}
	if len(gone) > 0 {
		rs.elect()
	}
}

// join opens a session to the replica at addr holding every desired object,
// and starts its goroutines; it flushes at once when the first Flush is
// done. Called with rs.mu held.
func (rs *replicaSet) join(addr string) (*replica, error) {
	conn, err := grpc.NewClient(addr, rs.dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("dialing %s: %w", addr, err)
	}
	// Connect now rather than at the first stream: a session with nothing
	// to send opens none, and its replica must still be Ready to be
	// primary.
	conn.Connect()
	ctx, cancel := context.WithCancel(rs.ctx)
	r := &replica{address: addr, conn: conn, cancel: cancel, kick: make(chan struct{}, 1)}
	// The set's handlers come last, so that they win.
	opts := append(slices.Clone(rs.syncOpts),
		client.WithUpdateHandler(func(u client.Update) { rs.onUpdate(r, u) }),
		client.WithXDSNackHandler(func(n *tributaryv1.XdsNack) { rs.onNack(addr, n) }))
	r.session = client.New(conn).Sync(ctx, rs.settings, opts...)
	r.session.Upsert(slices.Collect(maps.Values(rs.desired))...)
	if rs.started {
		r.requestFlush()
	}
	rs.logger.Info("tributary: replica found; opening its session", "address", addr, "objects", len(rs.desired))
	r.wg.Go(func() { rs.flushLoop(ctx, r) })
	r.wg.Go(func() { rs.watch(ctx, r) })
	r.wg.Go(func() {
		select {
		case <-r.session.Done():
			rs.elect()
		case <-ctx.Done():
		}
	})
	return r, nil
}

// close ends the replica's session and goroutines, and its connection.
func (r *replica) close() {
	r.cancel()
	r.session.Close()
	r.wg.Wait()
	_ = r.conn.Close()
}

// flushLoop flushes the replica's session whenever asked, one flush at a
// time, so a replica that is down holds at most one waiting flush however
// often the caller flushes.
func (rs *replicaSet) flushLoop(ctx context.Context, r *replica) {
	for {
		select {
		case <-r.kick:
		case <-ctx.Done():
			return
		}
		rs.mu.Lock()
		gen, lost := rs.gen, r.lost
		rs.mu.Unlock()
		err := r.session.Flush(ctx)
		if ctx.Err() != nil {
			return
		}
		rs.mu.Lock()
		r.flushedGen, r.flushErr = gen, err
		if r.lost == lost {
			r.answered = true
		}
		rs.broadcast()
		rs.mu.Unlock()
		rs.elect()
	}
}

// watch re-elects the primary whenever the replica's connection changes
// state. A connection that is not Ready makes the replica's output suspect
// until a flush begun after it is answered; one that is Ready again asks
// for that flush.
func (rs *replicaSet) watch(ctx context.Context, r *replica) {
	for {
		state := r.conn.GetState()
		rs.mu.Lock()
		if state != connectivity.Ready {
			r.lost++
			r.answered = false
		} else if rs.started && !r.answered {
			r.requestFlush()
		}
		rs.mu.Unlock()
		rs.elect()
		if !r.conn.WaitForStateChange(ctx, state) {
			return
		}
	}
}

// eligible reports whether r may be the primary: it holds the complete set
// and is reachable. Called with rs.mu held.
func (rs *replicaSet) eligible(r *replica) bool {
	return rs.replicas[r.address] == r && r.answered && r.session.Err() == nil && r.conn.GetState() == connectivity.Ready
}
