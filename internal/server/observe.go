package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	middleware "github.com/grpc-ecosystem/go-grpc-middleware/v2"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"google.golang.org/grpc"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/metrics"
)

// sessionKey is the log attribute that names a Sync session.
const sessionKey = "session"

// sessionIDKey is the context key of a Sync call's session id.
type sessionIDKey struct{}

// newSessionID returns a short random id: 48 bits, so two sessions of one
// process share an id with odds of about one in a million after twenty
// thousand sessions, which is fine for telling their log lines apart.
func newSessionID() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes instead)
	return hex.EncodeToString(b[:])
}

// sessionIDs gives every Sync call a session id before any other
// interceptor runs: the logging interceptor then puts it on the line that
// ends the call, and Sync on every line it logs (see sessionID), so all of
// a session's lines can be found by one attribute.
func sessionIDs(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if info.FullMethod != tributaryv1.TranslationService_Sync_FullMethodName {
		return handler(srv, ss)
	}
	id := newSessionID()
	ctx := logging.InjectLogField(context.WithValue(ss.Context(), sessionIDKey{}, id), sessionKey, id)
	wrapped := middleware.WrapServerStream(ss)
	wrapped.WrappedContext = ctx
	return handler(srv, wrapped)
}

// sessionID returns the session id sessionIDs gave the call of ctx, or a
// new one for a call that did not pass through it (a handler called
// directly).
func sessionID(ctx context.Context) string {
	if id, ok := ctx.Value(sessionIDKey{}).(string); ok {
		return id
	}
	return newSessionID()
}

// metricsInterceptors are the gRPC metrics interceptors of m, or ones that
// only call the handler when m is nil (a server without metrics).
func metricsInterceptors(m *metrics.Metrics) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	if m == nil {
		return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
				return handler(ctx, req)
			}, func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
				return handler(srv, ss)
			}
	}
	return m.UnaryServerInterceptor(), m.StreamServerInterceptor()
}

// orDefaultLogger is l, or slog.Default() when l is nil.
func orDefaultLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

// countSent counts the resources of one answer as sent over rpc.
func countSent(m *metrics.Metrics, rpc string, clusters, clusterLoadAssignments int) {
	m.ResourcesSent(rpc, resourcev3.ClusterType, clusters)
	m.ResourcesSent(rpc, resourcev3.EndpointType, clusterLoadAssignments)
}

// sessionLogger is l with the session attribute of the Sync call of ctx,
// or l itself outside Sync calls.
func sessionLogger(ctx context.Context, l *slog.Logger) *slog.Logger {
	if id, ok := ctx.Value(sessionIDKey{}).(string); ok {
		return l.With(sessionKey, id)
	}
	return l
}
