package client

import (
	"log/slog"
	"time"

	"google.golang.org/grpc"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

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
