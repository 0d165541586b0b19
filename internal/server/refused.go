package server

import (
	"context"
	"log/slog"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// refusedCalls logs the calls gRPC refuses before they reach the service,
// such as a request over the message size limit or one that does not
// decode: gRPC answers those itself, before any interceptor runs, so the
// call log never sees them. The reached interceptors below mark every call
// that does get that far; a call that ends in an error unmarked is logged.
type refusedCalls struct {
	logger   *slog.Logger
	warnings *peerWarnings
}

var _ stats.Handler = refusedCalls{}

type reachedKey struct{}

// reached records whether a call got as far as the interceptors.
type reached struct {
	method string
	yes    atomic.Bool
}

func (refusedCalls) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, reachedKey{}, &reached{method: info.FullMethodName})
}

func (r refusedCalls) HandleRPC(ctx context.Context, s stats.RPCStats) {
	end, ok := s.(*stats.End)
	if !ok || end.Error == nil {
		return
	}
	mark, _ := ctx.Value(reachedKey{}).(*reached)
	if mark == nil || mark.yes.Load() {
		return
	}
	st := status.Convert(end.Error)
	// The method is the client's :path, which gRPC also refuses when it
	// names no method: cut it like the error.
	attrs := []any{"grpc.method", clipError(mark.method), "grpc.code", st.Code().String(), "grpc.error", clipError(st.Message())}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		address := p.Addr.String()
		allowed, suppressed := r.warnings.allow(address)
		if !allowed {
			return
		}
		attrs = append(attrs, "peer.address", address)
		if suppressed > 0 {
			attrs = append(attrs, "warnings.suppressed", suppressed)
		}
	}
	r.logger.Warn("refused a call before it reached the service", attrs...)
}

func (refusedCalls) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (refusedCalls) HandleConn(context.Context, stats.ConnStats) {}

func markReached(ctx context.Context) {
	if mark, ok := ctx.Value(reachedKey{}).(*reached); ok {
		mark.yes.Store(true)
	}
}

// reachedUnary and reachedStream mark a call as having reached the service;
// they run first in their chains.
func reachedUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	markReached(ctx)
	return handler(ctx, req)
}

func reachedStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	markReached(ss.Context())
	return handler(srv, ss)
}
