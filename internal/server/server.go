// Package server exposes translation as the gRPC TranslationService, with
// the standard health and reflection services beside it.
//
// The checks that turn a request into the pipeline's input live here (see
// request.go): a malformed request is the client's error (InvalidArgument),
// while an ExtensionService that is merely invalid is reported in its status.
package server

import (
	"context"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/apidocs"
	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/xds"
)

// DefaultMaxMsgSize bounds one request or response unless Options say
// otherwise. gRPC's own 4 MiB default is too small for a cluster's worth of
// EndpointSlices; 64 MiB holds about two million endpoints.
const DefaultMaxMsgSize = 64 << 20

// connectionTimeout bounds the connection handshake, so a client that
// opens a socket and goes silent does not hold it. The other limits are in
// limits.go.
const connectionTimeout = 10 * time.Second

// keepaliveParams make the server probe idle connections, so it notices
// clients that vanished without closing (a node that died, a NAT that
// forgot the flow), close connections idle for long, and close every
// connection once it is maxAge old (see DefaultMaxConnectionAge).
func keepaliveParams(maxAge, grace time.Duration) keepalive.ServerParameters {
	return keepalive.ServerParameters{
		MaxConnectionIdle:     15 * time.Minute,
		MaxConnectionAge:      maxAge,
		MaxConnectionAgeGrace: grace,
		Time:                  1 * time.Minute,
		Timeout:               20 * time.Second,
	}
}

// DefaultMaxConnectionAge is how long a client connection lives before the
// server asks the client to open a new one (an HTTP/2 GOAWAY, with gRPC's
// jitter of ±10%), so that clients spread over the replicas a scale-up
// added instead of staying on the old ones for good. New calls go to the
// new connection; calls open on the old one may go on for
// DefaultMaxConnectionAgeGrace, then the connection closes and a Sync
// session still on it ends with Unavailable: the Go client reconnects and
// sends its objects again (a second or so of a Contour's endpoints). An
// hour and a quarter of an hour cut a session at most once in 75 minutes.
const (
	DefaultMaxConnectionAge      = time.Hour
	DefaultMaxConnectionAgeGrace = 15 * time.Minute
)

// DefaultMaxHeaderListSize bounds the request headers of one call, instead
// of gRPC's 16 MiB: Tributary's clients send a few hundred bytes (path,
// authority, content type, user agent, a deadline), so 64 KiB is far above
// any of them, and 16 streams at the limit on a connection hold 1 MiB.
const DefaultMaxHeaderListSize = 64 << 10

// keepalivePolicy lets well-behaved clients keep a connection warm between
// calls while refusing ping floods (the server closes a connection that
// pings more often than every 10 seconds).
var keepalivePolicy = keepalive.EnforcementPolicy{
	MinTime:             10 * time.Second,
	PermitWithoutStream: true,
}

// Options configure a Server; zero values mean the documented defaults.
type Options struct {
	// MaxRecvMsgSize and MaxSendMsgSize bound one request and one response
	// in bytes; 0 means DefaultMaxMsgSize. A larger request fails with
	// ResourceExhausted before it is decoded.
	MaxRecvMsgSize, MaxSendMsgSize int
	// Logger receives one line per call and every recovered panic; nil
	// means slog.Default().
	Logger *slog.Logger
	// Metrics, when set, counts and times every call and records the
	// service's own metrics (see package metrics).
	Metrics *metrics.Metrics
	// Health, when set, is the health service registered, so the caller
	// can report NOT_SERVING (Health.Shutdown) when it starts draining;
	// NewGRPCServer sets its statuses to SERVING. Nil means a private one.
	Health *health.Server
	// XDS, when set, publishes the resources of Sync sessions that name an
	// xDS node group (SyncStart.xds_node_group); serve it with
	// XDS.Register on its own gRPC server. Nil refuses such sessions.
	XDS *xds.Publisher
	// Credentials secure the listener: TLS or mutual TLS (see package
	// tlsfiles). Nil serves plaintext.
	Credentials credentials.TransportCredentials
	// Limits against abuse (see limits.go); 0 means the default of each.
	// MaxConcurrentStreams bounds the calls in flight on one connection;
	// MaxSessions the Sync sessions open at once (one more fails with
	// ResourceExhausted); MaxBatchObjects the upserts and deletes of one
	// SyncBatch and MaxSessionBytes the estimated memory of one session (a
	// batch beyond either is rejected with a BatchRejected and changes
	// nothing).
	MaxConcurrentStreams, MaxSessions, MaxBatchObjects int
	MaxSessionBytes                                    int64
	// MaxInflightBytes bounds the memory of the requests in flight in the
	// whole server, counted as DecodeAmplification times their size on the
	// wire: a message that does not fit is refused with ResourceExhausted
	// before it is decoded (a Sync stream ends, after the answers it owes).
	// 0 means DefaultMaxInflightBytes.
	MaxInflightBytes int64
	// SyncStartTimeout is how long a Sync stream may take to send its
	// SyncStart; 0 means DefaultSyncStartTimeout. A stream holds no session
	// slot before its start.
	SyncStartTimeout time.Duration
	// MaxConnectionAge and MaxConnectionAgeGrace: see
	// DefaultMaxConnectionAge; 0 means the defaults.
	MaxConnectionAge, MaxConnectionAgeGrace time.Duration
	// Draining, when set, is closed as the server starts shutting down. A
	// Sync stream never ends by itself, so GracefulStop would hold each
	// one until its timeout; instead every open Sync call sends the
	// answers it owes and ends with Unavailable, which clients take as the
	// signal to reconnect (to another replica, or to this address once the
	// server is back) and send their objects again.
	Draining <-chan struct{}

	// admission and statsHandlers are for tests: the codec to use, so a
	// test can look at the budget, and stats handlers that run after the
	// server's own, so a test knows when a call's End has been handled.
	admission     *admissionCodec
	statsHandlers []stats.Handler
}

// NewGRPCServer returns a *grpc.Server serving TranslationService, the
// standard health service (grpc.health.v1, SERVING for "" and for
// tributary.v1.TranslationService) and server reflection (v1 and v1alpha,
// which also describes the Envoy resource types inside the responses' Any
// fields). Every call is logged when it ends (health and reflection calls
// at debug, see standardService); a panicking handler becomes an Internal
// error, with the panic and its stack logged, and the server keeps serving.
//
// The caller owns the server: Serve it on a listener, then stop it. Health
// Watch and reflection streams stay open until their clients leave, so bound
// GracefulStop with a timeout and fall back to Stop.
func NewGRPCServer(opts Options) *grpc.Server {
	return newGRPCServer(opts, translationService{logger: orDefaultLogger(opts.Logger), metrics: opts.Metrics, xds: opts.XDS, limits: newSyncLimits(opts), draining: opts.Draining})
}

// orDefaultDuration is d, or def when d is not positive.
func orDefaultDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// newGRPCServer is NewGRPCServer over any TranslationService, so tests can
// put a failing handler behind the production interceptors.
func newGRPCServer(opts Options, translation tributaryv1.TranslationServiceServer) *grpc.Server {
	logger := orDefaultLogger(opts.Logger)
	unaryMetrics, streamMetrics := metricsInterceptors(opts.Metrics)
	admission := opts.admission
	if admission == nil {
		admission = &admissionCodec{budget: &inflightBudget{max: orDefault(opts.MaxInflightBytes, DefaultMaxInflightBytes)}}
	}
	warnings := newPeerWarnings()
	serverOptions := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(orDefault(opts.MaxRecvMsgSize, DefaultMaxMsgSize)),
		grpc.MaxSendMsgSize(orDefault(opts.MaxSendMsgSize, DefaultMaxMsgSize)),
		grpc.MaxConcurrentStreams(uint32(orDefault(opts.MaxConcurrentStreams, DefaultMaxConcurrentStreams))),
		grpc.MaxHeaderListSize(DefaultMaxHeaderListSize),
		grpc.ForceServerCodecV2(admission),
		grpc.Creds(opts.Credentials), // nil: plaintext
		grpc.ConnectionTimeout(connectionTimeout),
		grpc.KeepaliveParams(keepaliveParams(
			orDefaultDuration(opts.MaxConnectionAge, DefaultMaxConnectionAge),
			orDefaultDuration(opts.MaxConnectionAgeGrace, DefaultMaxConnectionAgeGrace))),
		grpc.KeepaliveEnforcementPolicy(keepalivePolicy),
		// Logging is outermost so it reports the code recovery produced;
		// metrics count that code too, and both the code the client got
		// (call_code.go), which admission's refusals are part of. Session
		// ids come first, for logging to put them on the line that ends a
		// Sync call.
		grpc.StatsHandler(refusedCalls{logger: logger, warnings: warnings}),
		// Gives back what each call holds of the in-flight budget when
		// it ends, on every path (see callAdmission).
		grpc.StatsHandler(admissionStats{codec: admission}),
		grpc.ChainUnaryInterceptor(
			reachedUnary,
			logging.UnaryServerInterceptor(callLogger(logger, warnings), logOnFinish, callLevels(opts.Draining)),
			unaryMetrics,
			clientCodeUnary,
			admitUnary,
			recovery.UnaryServerInterceptor(recovery.WithRecoveryHandlerContext(recoverPanic(logger))),
		),
		grpc.ChainStreamInterceptor(
			reachedStream,
			sessionIDs,
			logging.StreamServerInterceptor(callLogger(logger, warnings), logOnFinish, callLevels(opts.Draining)),
			streamMetrics,
			clientCodeStream,
			admitStream,
			recovery.StreamServerInterceptor(recovery.WithRecoveryHandlerContext(recoverPanic(logger))),
		),
	}
	for _, h := range opts.statsHandlers {
		serverOptions = append(serverOptions, grpc.StatsHandler(h))
	}
	s := grpc.NewServer(serverOptions...)
	s.RegisterService(&translationServiceDesc, translation)

	healthServer := opts.Health
	if healthServer == nil {
		healthServer = health.NewServer()
	}
	healthServer.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthServer.SetServingStatus(tributaryv1.TranslationService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(s, healthServer)

	apidocs.RegisterReflection(s)
	opts.Metrics.InitializeGRPC(s)
	opts.Metrics.InitializeSessionObjects(sessionKindNames()...)
	return s
}

// sessionKindNames are the names of the kinds a Sync session holds: the
// kind labels of its metrics.
func sessionKindNames() []string {
	var names []string
	for k := range source.Kinds() {
		names = append(names, k.String())
	}
	return names
}

func orDefault[T int | int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// logOnFinish logs one line per call, when it ends: its code, error and
// duration are what an operator needs; a start line would double the volume.
var logOnFinish = logging.WithLogOnEvents(logging.FinishCall)

// callLevels is the middleware's default level per code, but for
// Unavailable once the server drains (Options.Draining): Sync calls then
// end with it by design, and connections that close with it are expected.
// Before the drain, Unavailable stays a warning. InvalidArgument is a
// warning too.
func callLevels(draining <-chan struct{}) logging.Option {
	return logging.WithLevels(func(code codes.Code) logging.Level {
		switch {
		case code == codes.Unavailable && closed(draining):
			return logging.LevelInfo
		case code == codes.InvalidArgument:
			// A malformed request or message: the client's doing, worth a
			// warning (rate limited per client, see callLogger), while
			// the middleware's default says info.
			return logging.LevelWarn
		}
		return logging.DefaultServerCodeToLevel(code)
	})
}

// standardService reports whether service is one of the standard services
// beside TranslationService: health, which load balancers and kubelets
// probe every few seconds, and reflection, which grpcurl opens for every
// command. Their routine calls would bury the translations in the call log,
// so callLogger logs at debug what it would log at info for them; their
// warnings and errors keep their level.
func standardService(service string) bool {
	return service == healthpb.Health_ServiceDesc.ServiceName || strings.HasPrefix(service, "grpc.reflection.")
}

// recoverPanic logs a handler's panic with its stack and answers Internal.
// The panic value stays in the log: it may hold request data or internals a
// client has no business seeing.
func recoverPanic(l *slog.Logger) recovery.RecoveryHandlerFuncContext {
	return func(ctx context.Context, p any) error {
		sessionLogger(ctx, l).ErrorContext(ctx, "panic in gRPC handler", "panic", p, "stack", string(debug.Stack()))
		return status.Error(codes.Internal, "internal error")
	}
}
