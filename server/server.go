// Package server exposes translation as the gRPC TranslationService.
package server

import (
	"log/slog"

	"google.golang.org/grpc"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// Options configure a Server; zero values mean the documented defaults.
type Options struct {
	// MaxRecvMsgSize and MaxSendMsgSize bound one message; 0 means DefaultMaxMsgSize.
	MaxRecvMsgSize, MaxSendMsgSize int
	// Logger receives request logs and recovered panics; nil means slog.Default().
	Logger *slog.Logger
}

// DefaultMaxMsgSize is the default bound on one request or response.
const DefaultMaxMsgSize = 64 << 20

// NewGRPCServer returns a *grpc.Server serving TranslationService, health and reflection.
func NewGRPCServer(opts Options) *grpc.Server {
	s := grpc.NewServer()
	tributaryv1.RegisterTranslationServiceServer(s, NewTranslationService())
	return s
}
