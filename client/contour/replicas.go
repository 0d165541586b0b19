package contour

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"

	"github.com/tributary-dev/tributary/client"
	"github.com/tributary-dev/tributary/client/internal/objectkind"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// ReplicatedAdapter is an Adapter for Tributary run as several replicas:
// it keeps one Sync session per replica, sends every informer event to all
// of them, and hands the sinks the output of one. Kubernetes, through the
// informers, stays the only source of truth: each replica holds exactly what
// its session sent it, so every replica serves the same output (over xDS,
// with client.WithXDSPublishing among the session options), and any Envoy
// may connect to any replica. There is no store shared between replicas.
//
// Replicas come and go as resolve says: an error or an empty answer keeps
// the replicas known so far, since a DNS outage, or a moment with no ready
// pod, must not end sessions that can reconnect. A replica that appears gets every
// current object in its session's first batch (at once, once the first
// Flush is done), so it converges to the full state; a replica that
// disappears has its session closed.
//
// The sinks receive the output of one replica, the primary, so Contour
// writes each status once. The primary is the first replica, by address,
// whose connection is Ready and whose session has answered a flush since
// it joined and since its connection was last lost (so its output is that
// of the complete, current object set, not what it held before an
// outage); it stays primary while that holds. When it fails, the next
// such replica becomes primary and the sinks get the difference between what they have and its output, which is
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

// NewReplicatedAdapter starts looking replicas up with resolve (see
// LookupReplicas), and keeps a session under settings open to each, until
// ctx ends or Close is called. The first lookup happens at once, in the
// background.
//
// To have Envoy fetch endpoints from the replicas directly, publish over
// xDS, WithSyncOptions(client.WithXDSPublishing(nodeGroup, false)), with
// xdsClusterName naming a bootstrap cluster that reaches the replicas' xDS
// port; see docs/direct-eds.md. Every replica must then serve xDS
// (tributary serve --xds-address).
func NewReplicatedAdapter(ctx context.Context, settings *Config, resolve ResolveFunc, opts ...ReplicaOption) (*ReplicatedAdapter, error) {
	if resolve == nil {
		return nil, errors.New("tributary: NewReplicatedAdapter needs a ResolveFunc")
	}
	var o replicaOptions
	for _, opt := range opts {
		opt.applyToReplicas(&o)
	}
	a := newAdapter(ctx, o.adapterOptions)
	ctx, cancel := context.WithCancel(ctx)
	rs := &replicaSet{
		ctx:       ctx,
		cancel:    cancel,
		settings:  Settings(settings),
		syncOpts:  o.syncOptions,
		resolve:   resolve,
		interval:  o.resolveInterval,
		deliver:   a.apply,
		logger:    cmp.Or(o.logger, slog.Default()),
		onNack:    o.onXDSNack,
		delivered: newDeliveredState(),
		desired:   map[objectkind.Key]*tributaryv1.KubernetesObject{},
		replicas:  map[string]*replica{},
		changed:   make(chan struct{}),
	}
	if rs.interval <= 0 {
		rs.interval = DefaultResolveInterval
	}
	if rs.onNack == nil {
		rs.onNack = func(replica string, n *tributaryv1.XdsNack) {
			rs.logger.Warn("tributary: an xDS client rejected resources", "replica", replica, "node", n.GetNodeId(),
				"group", n.GetNodeGroup(), "type", n.GetTypeUrl(), "resources", n.GetResourceNames(), "error", n.GetErrorDetail())
		}
	}
	rs.dialOpts = append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 15 * time.Second, Timeout: 5 * time.Second, PermitWithoutStream: true}),
		grpc.WithIdleTimeout(0),
	}, o.dialOptions...)
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
