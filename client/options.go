package client

import (
	"log/slog"
	"time"

	"google.golang.org/grpc"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// Options follow connect-go's style: each With function returns a value of
// the narrowest interface that says where it applies. An Option applies to
// Translate calls and to Sync sessions alike.

// TranslateOption configures a Translate call.
type TranslateOption interface {
	applyToTranslate(*translateOptions)
}

// SyncOption configures a SyncSession.
type SyncOption interface {
	applyToSync(*syncOptions)
}

// Option configures both Translate calls and Sync sessions.
type Option interface {
	TranslateOption
	SyncOption
}

type translateOptions struct {
	callOptions []grpc.CallOption
}

type syncOptions struct {
	onUpdate               func(Update)
	minBackoff, maxBackoff time.Duration
	logger                 *slog.Logger
	callOptions            []grpc.CallOption
	xdsNodeGroup           string
	publishListeners       bool
	onXDSNack              func(*tributaryv1.XdsNack)
}

// syncOptionFunc is a SyncOption that only applies to Sync sessions.
type syncOptionFunc func(*syncOptions)

func (f syncOptionFunc) applyToSync(o *syncOptions) { f(o) }

// WithCallOptions adds call options to a Translate call, or to every
// stream a Sync session opens, after the client's defaults (message sizes
// matching the server's), so they override them.
func WithCallOptions(opts ...grpc.CallOption) Option {
	return callOptionsOption(opts)
}

type callOptionsOption []grpc.CallOption

func (c callOptionsOption) applyToTranslate(o *translateOptions) {
	o.callOptions = append(o.callOptions, c...)
}

func (c callOptionsOption) applyToSync(o *syncOptions) {
	o.callOptions = append(o.callOptions, c...)
}

// WithUpdateHandler sets the function that receives every non-empty Update.
// It is called from one goroutine, in order, and the Flush whose batch an
// Update covers returns only after the handler has returned, so after a
// successful Flush the handler has seen its effects. The handler must not
// call Flush (it would wait for itself) and should return quickly: while it
// runs the session reads nothing, and the server merges what is pending.
func WithUpdateHandler(f func(Update)) SyncOption {
	return syncOptionFunc(func(o *syncOptions) { o.onUpdate = f })
}

// WithBackoff bounds the wait before reopening a broken stream: the n-th
// consecutive failure waits a random time between half and all of
// min·2ⁿ⁻¹, capped at max. Values ≤ 0 keep the defaults.
func WithBackoff(minDelay, maxDelay time.Duration) SyncOption {
	return syncOptionFunc(func(o *syncOptions) {
		if minDelay > 0 {
			o.minBackoff = minDelay
		}
		if maxDelay > 0 {
			o.maxBackoff = maxDelay
		}
	})
}

// WithLogger sets where the session reports broken streams and reconnects;
// the default is slog.Default().
func WithLogger(l *slog.Logger) SyncOption {
	return syncOptionFunc(func(o *syncOptions) { o.logger = l })
}

// WithXDSPublishing asks the server to publish the session's Clusters and
// ClusterLoadAssignments over xDS to the xDS clients of nodeGroup (their
// node.cluster, or node.id), and with listeners also a Listener per Cluster
// for proxyless gRPC clients (SyncStart.xds_node_group and
// publish_listeners). The server must serve xDS (tributary serve
// --xds-address). It is the one way to publish over xDS: the Contour
// adapters take it among their session options (contour.WithSyncOptions).
func WithXDSPublishing(nodeGroup string, listeners bool) SyncOption {
	return syncOptionFunc(func(o *syncOptions) { o.xdsNodeGroup, o.publishListeners = nodeGroup, listeners })
}

// WithXDSNackHandler sets the function that receives what xDS clients of the
// session's node group refused (XdsNack answers), so the caller can surface
// it. It is called on the session's receiving goroutine and should return
// quickly. Without a handler, NACKs are logged as warnings.
func WithXDSNackHandler(f func(*tributaryv1.XdsNack)) SyncOption {
	return syncOptionFunc(func(o *syncOptions) { o.onXDSNack = f })
}
