package main

import (
	"flag"
	"log/slog"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/tributary-dev/tributary/metrics"
	"github.com/tributary-dev/tributary/xds"
)

// xdsStopTimeout bounds how long xDS responses being written may take once
// serve stops; the streams themselves end at once (they never end on their
// own).
const xdsStopTimeout = 2 * time.Second

// xdsFlags are serve's xDS flags.
type xdsFlags struct {
	address string
	grace   time.Duration
	// credentials secure the listener (the TLS flags, see serve_tls.go);
	// nil serves plaintext.
	credentials credentials.TransportCredentials
}

// registerXDSFlags adds --xds-address and --xds-withdraw-grace to fs. xDS is
// off by default: Sync sessions then cannot name a node group.
func registerXDSFlags(fs *flag.FlagSet) *xdsFlags {
	f := &xdsFlags{}
	fs.StringVar(&f.address, "xds-address", "",
		"`host:port` serving xDS (ADS, CDS, EDS and LDS, State of the World and Delta) with the resources of Sync sessions that name an xds_node_group; a client's group is its node.cluster, or its node.id when that is empty. Empty (the default) serves none")
	fs.DurationVar(&f.grace, "xds-withdraw-grace", 30*time.Second,
		"how long a node group's resources stay served after the Sync session that published them ends, so a session that reconnects in time changes nothing for xDS clients")
	return f
}

// xdsEndpoint is the gRPC server of --xds-address and the Publisher it
// serves. Every method does nothing on a nil *xdsEndpoint, which is what
// listen returns when the flag is empty.
type xdsEndpoint struct {
	publisher *xds.Publisher
	lis       net.Listener
	server    *grpc.Server
	// failed receives the error of Serve, should it stop on its own.
	failed chan error
}

// listen opens the xDS listener before anything is served, so a busy port
// fails serve at once.
func (f *xdsFlags) listen(logger *slog.Logger, m *metrics.Metrics) (*xdsEndpoint, error) {
	if f.address == "" {
		return nil, nil
	}
	lis, err := net.Listen("tcp", f.address)
	if err != nil {
		return nil, err
	}
	var xm xds.Metrics
	if m != nil {
		xm = xdsMetrics{m}
	}
	p := xds.NewPublisher(xds.Options{WithdrawGrace: f.grace, Logger: logger, Metrics: xm})
	srv := grpc.NewServer(
		grpc.Creds(f.credentials),
		// xDS streams are long-lived and mostly idle: probe them, so the
		// server notices clients that vanished, and let clients keep
		// them warm without a ping flood.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: time.Minute, Timeout: 20 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
	)
	p.Register(srv)
	return &xdsEndpoint{publisher: p, lis: lis, server: srv, failed: make(chan error, 1)}, nil
}

// Publisher is what Sync sessions publish to: nil when xDS is off.
func (e *xdsEndpoint) Publisher() *xds.Publisher {
	if e == nil {
		return nil
	}
	return e.publisher
}

// serve starts serving xDS, after logging the address actually listened on
// (--xds-address 127.0.0.1:0 picks a free port).
func (e *xdsEndpoint) serve(logger *slog.Logger) {
	if e == nil {
		return
	}
	logger.Info("serving xDS", "address", e.lis.Addr().String())
	go func() {
		if err := e.server.Serve(e.lis); err != nil {
			e.failed <- err
		}
	}()
}

// failures receives the error that stopped the xDS server; with xDS off it
// is nil, so it never receives.
func (e *xdsEndpoint) failures() <-chan error {
	if e == nil {
		return nil
	}
	return e.failed
}

// stop ends every xDS stream and stops the server. It comes after the
// TranslationService has drained, so xDS clients are served until the end.
func (e *xdsEndpoint) stop(logger *slog.Logger) {
	if e == nil {
		return
	}
	e.publisher.Shutdown()
	stopWithin(e.server, xdsStopTimeout, logger, "xDS responses did not finish in time; closing connections")
}

// stopWithin stops srv gracefully, letting calls in flight finish, but for
// at most d: then it logs late and closes every connection.
func stopWithin(srv *grpc.Server, d time.Duration, logger *slog.Logger, late string) {
	drained := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(drained)
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-drained:
	case <-timer.C:
		logger.Warn(late)
		srv.Stop()
		<-drained
	}
}

// xdsMetrics records the Publisher's events into the service's metrics.
type xdsMetrics struct{ m *metrics.Metrics }

func (x xdsMetrics) Nack(n xds.Nack)                    { x.m.RecordNACK(n.TypeURL) }
func (x xdsMetrics) Refused(_, _, _ string, _ error)    {} // logged by the Publisher; a translator bug, not a rate
func (x xdsMetrics) Sent(typeURL string, n int)         { x.m.ResourcesSent(metrics.RPCXDS, typeURL, n) }
func (x xdsMetrics) Streams(xds.Variant, string, int)   {} // TODO(observability)
func (x xdsMetrics) ChangeToSend(string, time.Duration) {} // TODO(observability)
func (x xdsMetrics) SendToAck(string, time.Duration)    {} // TODO(observability)
