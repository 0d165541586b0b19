package contour

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// DefaultResolveInterval is how often a ReplicatedAdapter looks its
// replicas up again. CoreDNS answers for a headless Service with a 5 s TTL,
// so a replica that appears is found within about 15 s; one that vanishes
// is noticed at once by its broken connection, DNS only ends its session.
const DefaultResolveInterval = 10 * time.Second

// ResolveFunc returns the address (host:port) of every Tributary replica.
type ResolveFunc func(ctx context.Context) ([]string, error)

// LookupReplicas returns a ResolveFunc that finds the replicas behind a
// headless Service (clusterIP: None), whose DNS name has one record per
// ready pod. port is a number, giving the pods' addresses (A/AAAA records)
// with that port, or the name of a Service port ("grpc"), giving each pod's
// name and port from the SRV records _<port>._tcp.<service>. A nil r is
// net.DefaultResolver.
func LookupReplicas(r *net.Resolver, service, port string) ResolveFunc {
	if r == nil {
		r = net.DefaultResolver
	}
	if _, err := strconv.ParseUint(port, 10, 16); err == nil {
		return func(ctx context.Context) ([]string, error) {
			hosts, err := r.LookupHost(ctx, service)
			if err != nil {
				return nil, err
			}
			addrs := make([]string, len(hosts))
			for i, h := range hosts {
				addrs[i] = net.JoinHostPort(h, port)
			}
			return addrs, nil
		}
	}
	return func(ctx context.Context) ([]string, error) {
		_, records, err := r.LookupSRV(ctx, port, "tcp", service)
		if err != nil {
			return nil, err
		}
		addrs := make([]string, len(records))
		for i, rec := range records {
			addrs[i] = net.JoinHostPort(strings.TrimSuffix(rec.Target, "."), strconv.Itoa(int(rec.Port)))
		}
		return addrs, nil
	}
}

// ReplicaOptions configure a ReplicatedAdapter.
type ReplicaOptions struct {
	// AdapterOptions configure the sinks, the batching and every replica's
	// session, as for a single Adapter.
	AdapterOptions
	// Resolve finds the replicas (see LookupReplicas); required. An error
	// or an empty answer keeps the replicas known so far: a DNS outage, or
	// a moment with no ready pod, must not end sessions that can reconnect.
	Resolve ResolveFunc
	// ResolveInterval is the time between lookups; 0 means
	// DefaultResolveInterval. A lookup may take at most that long.
	ResolveInterval time.Duration
	// DialOptions for each replica's connection, after the defaults:
	// plaintext, client keepalive every 15 s (so a replica whose node died
	// is noticed), no idle timeout (so a connection is only not Ready when
	// its replica is unreachable). Add transport credentials here for TLS.
	DialOptions []grpc.DialOption
	// Logger receives replica changes and failovers; nil is slog.Default().
	Logger *slog.Logger
	// XDSNodeGroup, when set, makes every replica publish its session's
	// Clusters and ClusterLoadAssignments over xDS to the clients of that
	// node group (SyncStart.xds_node_group): their node.cluster, or node.id
	// when that is empty. With xdsClusterName naming a bootstrap cluster
	// that reaches the replicas' xDS port, Envoy then fetches endpoints
	// from Tributary directly; see docs/direct-eds.md. Every replica must
	// serve xDS (tributary serve --xds-address).
	XDSNodeGroup string
	// PublishListeners also publishes a Listener per Cluster, for
	// proxyless gRPC clients (SyncStart.publish_listeners); it needs
	// XDSNodeGroup.
	PublishListeners bool
	// OnXDSNack receives what an xDS client of the node group rejected,
	// with the address of the replica that served it; nil logs it.
	OnXDSNack func(replica string, nack *tributaryv1.XdsNack)
}

// ReplicatedAdapter is an Adapter for Tributary run as several replicas:
// it keeps one Sync session per replica, sends every informer event to all
// of them, and hands the sinks the output of one. Kubernetes, through the
// informers, stays the only source of truth: each replica holds exactly what
// its session sent it, so every replica serves the same output (over xDS,
// with ReplicaOptions.XDSNodeGroup), and any Envoy may connect to any
// replica. There is no store shared between replicas.
//
// Replicas come and go as Resolve says. A replica that appears gets every
// current object in its session's first batch (at once, once the first
// Flush is done), so it converges to the full state; a replica that
// disappears has its session closed.
//
// The sinks receive the output of one replica, the primary, so Contour
// writes each status once. The primary is the first replica, by address,
// whose connection is Ready and whose session has answered a flush since
// it joined and since its connection was last lost (so its output is that
// of the complete, current object set, not what it held before an
// outage); it stays primary while that holds. When it fails, the next such replica becomes primary and the
// sinks get the difference between what they have and its output, which is
// nothing when the replicas agree. With no such replica the sinks keep what
// they have.
//
// Flush sends the pending changes to every replica and returns when the
// primary has answered (waiting for one when there is none); replicas that
// are down get the changes when they reconnect. A ReplicatedAdapter is safe
// for concurrent use.
type ReplicatedAdapter struct {
	adapter *Adapter
	set     *replicaSet
}

// NewReplicatedAdapter starts looking replicas up, and keeps a session
// under settings open to each, until ctx ends or Close is called. The first
// lookup happens at once, in the background.
func NewReplicatedAdapter(ctx context.Context, settings *Config, opts ReplicaOptions) (*ReplicatedAdapter, error) {
	if opts.Resolve == nil {
		return nil, errors.New("tributary: ReplicaOptions.Resolve is required")
	}
	if opts.PublishListeners && opts.XDSNodeGroup == "" {
		return nil, errors.New("tributary: ReplicaOptions.PublishListeners needs an XDSNodeGroup to publish to")
	}
	a := newAdapter(ctx, opts.AdapterOptions)
	ctx, cancel := context.WithCancel(ctx)
	rs := &replicaSet{
		ctx:       ctx,
		cancel:    cancel,
		settings:  Settings(settings),
		syncOpts:  opts.SyncOptions,
		resolve:   opts.Resolve,
		interval:  opts.ResolveInterval,
		deliver:   a.apply,
		logger:    opts.Logger,
		delivered: newDeliveredState(),
		desired:   map[objectKey]*tributaryv1.KubernetesObject{},
		replicas:  map[string]*replica{},
		changed:   make(chan struct{}),
	}
	if rs.interval <= 0 {
		rs.interval = DefaultResolveInterval
	}
	if rs.logger == nil {
		rs.logger = slog.Default()
	}
	rs.dialOpts = append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 15 * time.Second, Timeout: 5 * time.Second, PermitWithoutStream: true}),
		grpc.WithIdleTimeout(0),
	}, opts.DialOptions...)
	if opts.XDSNodeGroup != "" {
		rs.nodeGroup, rs.publishListeners, rs.onNack = opts.XDSNodeGroup, opts.PublishListeners, opts.OnXDSNack
		if rs.onNack == nil {
			rs.onNack = func(replica string, n *tributaryv1.XdsNack) {
				rs.logger.Warn("tributary: an xDS client rejected resources", "replica", replica, "node", n.GetNodeId(),
					"group", n.GetNodeGroup(), "type", n.GetTypeUrl(), "resources", n.GetResourceNames(), "error", n.GetErrorDetail())
			}
		}
	}
	a.target = newReferencedOnly(rs, rs.settings)
	rs.wg.Go(rs.resolveLoop)
	return &ReplicatedAdapter{adapter: a, set: rs}, nil
}

// OnAdd upserts obj in every replica's session (see Adapter.OnAdd).
func (r *ReplicatedAdapter) OnAdd(obj any, isInInitialList bool) {
	r.adapter.OnAdd(obj, isInInitialList)
}

// OnUpdate upserts newObj in every replica's session (see Adapter.OnUpdate).
func (r *ReplicatedAdapter) OnUpdate(oldObj, newObj any) { r.adapter.OnUpdate(oldObj, newObj) }

// OnDelete deletes obj from every replica's session (see Adapter.OnDelete).
func (r *ReplicatedAdapter) OnDelete(obj any) { r.adapter.OnDelete(obj) }

// Flush sends every change not yet sent to every replica and waits until
// the primary has answered and the sinks have been called. The first Flush
// also turns on automatic flushing, and lets replicas that join later get
// the object set at once.
func (r *ReplicatedAdapter) Flush(ctx context.Context) error { return r.adapter.Flush(ctx) }

// Close stops automatic flushing and lookups, and ends every session.
func (r *ReplicatedAdapter) Close() { r.adapter.Close() }

// Primary returns the address of the replica whose output the sinks
// receive, or "" when there is none.
func (r *ReplicatedAdapter) Primary() string {
	r.set.mu.Lock()
	defer r.set.mu.Unlock()
	if r.set.primary == nil {
		return ""
	}
	return r.set.primary.address
}

// ReplicaStatus describes one replica.
type ReplicaStatus struct {
	Address string
	// State is the state of the connection to the replica.
	State connectivity.State
	// Current reports whether the replica has answered a flush since it
	// joined and since its connection was last lost: only a current
	// replica with a Ready connection can be the primary.
	Current bool
	// Primary reports whether the sinks follow this replica.
	Primary bool
}

// Replicas describes every known replica, sorted by address.
func (r *ReplicatedAdapter) Replicas() []ReplicaStatus {
	r.set.mu.Lock()
	defer r.set.mu.Unlock()
	out := make([]ReplicaStatus, 0, len(r.set.replicas))
	for _, addr := range slices.Sorted(maps.Keys(r.set.replicas)) {
		rep := r.set.replicas[addr]
		out = append(out, ReplicaStatus{Address: addr, State: rep.conn.GetState(), Current: rep.answered, Primary: rep == r.set.primary})
	}
	return out
}

// Views returns each replica's last known output, by address.
func (r *ReplicatedAdapter) Views() map[string]client.View {
	r.set.mu.Lock()
	replicas := slices.Collect(maps.Values(r.set.replicas))
	r.set.mu.Unlock()
	views := make(map[string]client.View, len(replicas))
	for _, rep := range replicas {
		views[rep.address] = rep.session.View()
	}
	return views
}

// objectKey identifies an input object, as its ObjectReference does.
type objectKey struct {
	kind            tributaryv1.ObjectKind
	namespace, name string
}

func keyOf(obj *tributaryv1.KubernetesObject) objectKey {
	ref := client.Reference(obj)
	return objectKey{kind: ref.GetKind(), namespace: ref.GetNamespace(), name: ref.GetName()}
}

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
	// nodeGroup is the xDS node group every session publishes to ("" for
	// none), with Listeners when publishListeners; onNack gets what the
	// group's xDS clients refuse, with the replica that reported it.
	nodeGroup        string
	publishListeners bool
	onNack           func(replica string, n *tributaryv1.XdsNack)
	wg               sync.WaitGroup

	// deliverMu orders everything that reaches the sinks: it is held while
	// the primary changes and while an update is delivered, so the sinks
	// never get a replaced primary's update after its successor's output.
	// Lock order: deliverMu before mu.
	deliverMu sync.Mutex
	delivered deliveredState

	mu sync.Mutex
	// desired is every object upserted and not deleted: the complete set a
	// joining replica is sent.
	desired  map[objectKey]*tributaryv1.KubernetesObject
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

func (rs *replicaSet) Upsert(objs ...*tributaryv1.KubernetesObject) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, o := range objs {
		rs.desired[keyOf(o)] = o
	}
	for _, r := range rs.replicas {
		r.session.Upsert(objs...)
	}
}

func (rs *replicaSet) Delete(refs ...*tributaryv1.ObjectReference) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, ref := range refs {
		delete(rs.desired, objectKey{kind: ref.GetKind(), namespace: ref.GetNamespace(), name: ref.GetName()})
	}
	for _, r := range rs.replicas {
		r.session.Delete(refs...)
	}
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
	opts := append(slices.Clone(rs.syncOpts), client.WithUpdateHandler(func(u client.Update) { rs.onUpdate(r, u) }))
	if rs.nodeGroup != "" {
		opts = append(opts,
			client.WithXDSPublishing(rs.nodeGroup, rs.publishListeners),
			client.WithXDSNackHandler(func(n *tributaryv1.XdsNack) { rs.onNack(addr, n) }))
	}
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

// elect keeps the primary while it is eligible, or else makes the first
// eligible replica the primary and brings the sinks to its output.
func (rs *replicaSet) elect() {
	rs.deliverMu.Lock()
	defer rs.deliverMu.Unlock()
	rs.mu.Lock()
	prev := rs.primary
	if prev != nil && rs.eligible(prev) {
		rs.mu.Unlock()
		return
	}
	var next *replica
	for _, addr := range slices.Sorted(maps.Keys(rs.replicas)) {
		if r := rs.replicas[addr]; rs.eligible(r) {
			next = r
			break
		}
	}
	rs.primary = next
	rs.broadcast()
	rs.mu.Unlock()
	switch {
	case next == nil && prev != nil:
		rs.logger.Warn("tributary: no replica is reachable and up to date; the caches keep their last output", "previous", prev.address)
	case next != nil:
		from := ""
		if prev != nil {
			from = prev.address
		}
		rs.logger.Info("tributary: caches now follow replica", "address", next.address, "previous", from)
		rs.send(rs.delivered.toView(next.session.View()))
	}
}

// onUpdate delivers a replica's update when it is the primary's, leaving
// out what the sinks already have (the primary's output may have reached
// them when it was elected).
func (rs *replicaSet) onUpdate(r *replica, u client.Update) {
	rs.deliverMu.Lock()
	defer rs.deliverMu.Unlock()
	rs.mu.Lock()
	primary := rs.primary == r
	rs.mu.Unlock()
	if primary {
		rs.send(rs.delivered.apply(u))
	}
}

// send hands u to the sinks. Called with deliverMu held.
func (rs *replicaSet) send(u client.Update) {
	if !u.Empty() {
		rs.deliver(u)
	}
}

// deliveredState is what the sinks hold: each resource's version, and each
// status.
type deliveredState struct {
	clusters, clas map[string]string
	statuses       map[client.NamespacedName]*tributaryv1.ExtensionServiceStatus
}

func newDeliveredState() deliveredState {
	return deliveredState{clusters: map[string]string{}, clas: map[string]string{}, statuses: map[client.NamespacedName]*tributaryv1.ExtensionServiceStatus{}}
}

// apply records u and returns the part of it the sinks do not have yet.
func (d *deliveredState) apply(u client.Update) client.Update {
	out := client.Update{BatchID: u.BatchID, FullState: u.FullState, Version: u.Version}
	out.Clusters, out.ClusterVersions = newer(d.clusters, u.Clusters, u.ClusterVersions, (*clusterv3.Cluster).GetName)
	out.ClusterLoadAssignments, out.ClusterLoadAssignmentVersions = newer(d.clas, u.ClusterLoadAssignments, u.ClusterLoadAssignmentVersions, (*endpointv3.ClusterLoadAssignment).GetClusterName)
	out.RemovedClusters = held(d.clusters, u.RemovedClusters)
	out.RemovedClusterLoadAssignments = held(d.clas, u.RemovedClusterLoadAssignments)
	for _, st := range u.Statuses {
		n := client.NamespacedName{Namespace: st.GetNamespace(), Name: st.GetName()}
		if cur, ok := d.statuses[n]; ok && proto.Equal(cur, st) {
			continue
		}
		d.statuses[n] = st
		out.Statuses = append(out.Statuses, st)
	}
	for _, n := range u.RemovedStatuses {
		if _, ok := d.statuses[n]; ok {
			delete(d.statuses, n)
			out.RemovedStatuses = append(out.RemovedStatuses, n)
		}
	}
	return out
}

// toView records v as the sinks' state and returns the Update that takes
// them there.
func (d *deliveredState) toView(v client.View) client.Update {
	u := client.Update{FullState: true, Version: v.Version, ClusterVersions: v.ClusterVersions, ClusterLoadAssignmentVersions: v.ClusterLoadAssignmentVersions}
	for _, name := range slices.Sorted(maps.Keys(v.Clusters)) {
		u.Clusters = append(u.Clusters, v.Clusters[name])
	}
	for _, name := range slices.Sorted(maps.Keys(v.ClusterLoadAssignments)) {
		u.ClusterLoadAssignments = append(u.ClusterLoadAssignments, v.ClusterLoadAssignments[name])
	}
	u.RemovedClusters = missing(d.clusters, v.ClusterVersions)
	u.RemovedClusterLoadAssignments = missing(d.clas, v.ClusterLoadAssignmentVersions)
	for _, n := range slices.SortedFunc(maps.Keys(v.Statuses), compareNames) {
		u.Statuses = append(u.Statuses, v.Statuses[n])
	}
	for _, n := range slices.SortedFunc(maps.Keys(d.statuses), compareNames) {
		if _, ok := v.Statuses[n]; !ok {
			u.RemovedStatuses = append(u.RemovedStatuses, n)
		}
	}
	return d.apply(u)
}

func compareNames(a, b client.NamespacedName) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// newer records the resources whose version differs from the recorded one
// and returns them with their versions.
func newer[T any](have map[string]string, changed []T, versions map[string]string, nameOf func(T) string) ([]T, map[string]string) {
	var out []T
	var outVersions map[string]string
	for _, r := range changed {
		name := nameOf(r)
		v := versions[name]
		if cur, ok := have[name]; ok && cur == v {
			continue
		}
		have[name] = v
		out = append(out, r)
		if outVersions == nil {
			outVersions = map[string]string{}
		}
		outVersions[name] = v
	}
	return out, outVersions
}

// held forgets the removed names that are recorded and returns them.
func held(have map[string]string, removed []string) []string {
	var out []string
	for _, name := range removed {
		if _, ok := have[name]; ok {
			delete(have, name)
			out = append(out, name)
		}
	}
	return out
}

// missing returns, sorted, the recorded names that keep lacks.
func missing(have, keep map[string]string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if _, ok := keep[name]; !ok {
			out = append(out, name)
		}
	}
	return out
}
