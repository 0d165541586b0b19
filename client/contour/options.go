package contour

import (
	"log/slog"
	"time"

	"google.golang.org/grpc"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// Options follow connect-go's style, as package client's do: an
// AdapterOption configures an Adapter and, since a ReplicatedAdapter is an
// Adapter per replica, a ReplicatedAdapter too; a ReplicaOption only a
// ReplicatedAdapter.

// AdapterOption configures an Adapter or a ReplicatedAdapter.
type AdapterOption interface {
	ReplicaOption
	applyToAdapter(*adapterOptions)
}

// ReplicaOption configures a ReplicatedAdapter.
type ReplicaOption interface {
	applyToReplicas(*replicaOptions)
}

type adapterOptions struct {
	clusters     ClusterSink
	endpoints    EndpointSink
	statuses     StatusWriter
	debounce     time.Duration
	unwrap       func(any) (any, bool)
	onFlushError func(error)
	syncOptions  []client.SyncOption
	logger       *slog.Logger
}

type replicaOptions struct {
	adapterOptions
	resolveInterval time.Duration
	dialOptions     []grpc.DialOption
	onXDSNack       func(replica string, n *tributaryv1.XdsNack)
}

type adapterOptionFunc func(*adapterOptions)

func (f adapterOptionFunc) applyToAdapter(o *adapterOptions)  { f(o) }
func (f adapterOptionFunc) applyToReplicas(o *replicaOptions) { f(&o.adapterOptions) }

type replicaOptionFunc func(*replicaOptions)

func (f replicaOptionFunc) applyToReplicas(o *replicaOptions) { f(o) }

// WithClusterSink sets where Clusters go; without it they are ignored.
func WithClusterSink(s ClusterSink) AdapterOption {
	return adapterOptionFunc(func(o *adapterOptions) { o.clusters = s })
}

// WithEndpointSink sets where ClusterLoadAssignments go; without it they
// are ignored (as when Envoy fetches them from Tributary over xDS).
func WithEndpointSink(s EndpointSink) AdapterOption {
	return adapterOptionFunc(func(o *adapterOptions) { o.endpoints = s })
}

// WithStatusWriter sets where ExtensionService statuses go; without it
// they are ignored.
func WithStatusWriter(w StatusWriter) AdapterOption {
	return adapterOptionFunc(func(o *adapterOptions) { o.statuses = w })
}

// WithDebounce sets the shortest time between two automatic flushes: a
// change after a quiet period is sent at once, and the changes that follow
// it within d are sent together when d has passed since that flush
// started (see Adapter). 0 means DefaultDebounce; a negative value sends
// only on Flush. A longer d puts a burst in fewer batches and delays the
// changes after its first by up to d; a lone change never waits for it.
func WithDebounce(d time.Duration) AdapterOption {
	return adapterOptionFunc(func(o *adapterOptions) { o.debounce = d })
}

// WithTombstoneUnwrapper sets the function that returns the object inside
// a tombstone OnDelete received, and whether obj was one. The default
// recognises client-go's cache.DeletedFinalStateUnknown by its shape (a
// struct with an Obj field), so the adapter needs no client-go; set it to
// unwrap anything else.
func WithTombstoneUnwrapper(unwrap func(obj any) (any, bool)) AdapterOption {
	return adapterOptionFunc(func(o *adapterOptions) { o.unwrap = unwrap })
}

// WithFlushErrorHandler sets the function that receives the errors of
// automatic flushes (a *client.BatchRejectedError, or the session's end),
// on the goroutine that flushed; without it they are logged. Errors after
// Close are not reported.
func WithFlushErrorHandler(f func(error)) AdapterOption {
	return adapterOptionFunc(func(o *adapterOptions) { o.onFlushError = f })
}

// WithSyncOptions adds options for the session (every replica's, for a
// ReplicatedAdapter), client.WithXDSPublishing among them. An update
// handler among them is replaced by the adapter's, and so, for a
// ReplicatedAdapter, is an xDS NACK handler (see WithXDSNackHandler).
func WithSyncOptions(opts ...client.SyncOption) AdapterOption {
	return adapterOptionFunc(func(o *adapterOptions) { o.syncOptions = append(o.syncOptions, opts...) })
}

// WithLogger sets where the adapter reports what it cannot return: flush
// errors without a handler, and for a ReplicatedAdapter replica changes,
// failovers and xDS NACKs without a handler. The default is slog.Default().
// Sessions log through client.WithLogger.
func WithLogger(l *slog.Logger) AdapterOption {
	return adapterOptionFunc(func(o *adapterOptions) { o.logger = l })
}

// WithResolveInterval sets the time between lookups of the replicas; 0
// means DefaultResolveInterval. A lookup may take at most that long.
func WithResolveInterval(d time.Duration) ReplicaOption {
	return replicaOptionFunc(func(o *replicaOptions) { o.resolveInterval = d })
}

// WithDialOptions adds options for each replica's connection, after the
// defaults: plaintext, client keepalive every 15 s (so a replica whose node
// died is noticed), no idle timeout (so a connection is only not Ready when
// its replica is unreachable). Add transport credentials here for TLS.
func WithDialOptions(opts ...grpc.DialOption) ReplicaOption {
	return replicaOptionFunc(func(o *replicaOptions) { o.dialOptions = append(o.dialOptions, opts...) })
}

// WithXDSNackHandler sets the function that receives what an xDS client of
// the node group the sessions publish to (client.WithXDSPublishing)
// rejected, with the address of the replica that served it; without it
// NACKs are logged.
func WithXDSNackHandler(f func(replica string, nack *tributaryv1.XdsNack)) ReplicaOption {
	return replicaOptionFunc(func(o *replicaOptions) { o.onXDSNack = f })
}
