package xds

import (
	"context"
	"fmt"
	"log/slog"

	clusterservice "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	discoveryservice "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpointservice "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	listenerservice "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	sotwv3 "github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
)

// Register serves p on s: the Aggregated Discovery Service (what gRPC's
// xDS client and most Envoys use) and the per-type Cluster, Endpoint and
// Listener discovery services, each in both State-of-the-World and Delta
// variants. NACKs on any of them are reported (see Nack).
func (p *Publisher) Register(s *grpc.Server) {
	// The logger option is shared by the State-of-the-World and Delta servers.
	srv := serverv3.NewServer(p.ctx, p.cache, p.cache, sotwv3.WithLogger(slogAdapter{p.logger}))
	discoveryservice.RegisterAggregatedDiscoveryServiceServer(s, srv)
	clusterservice.RegisterClusterDiscoveryServiceServer(s, srv)
	endpointservice.RegisterEndpointDiscoveryServiceServer(s, srv)
	listenerservice.RegisterListenerDiscoveryServiceServer(s, srv)
}

// slogAdapter lets go-control-plane log to a *slog.Logger. Its Info lines
// (one per watch opened) become Debug: at Info they would bury the rest.
// Its lines repeat what clients sent (a type URL, a resource name), so each
// is cut to maxLoggedLineBytes: a client's 1 MiB type URL must not become a
// 1 MiB log line.
type slogAdapter struct{ l *slog.Logger }

// maxLoggedLineBytes bounds one line of go-control-plane's.
const maxLoggedLineBytes = 1024

func (a slogAdapter) Debugf(format string, args ...any) { a.log(slog.LevelDebug, format, args) }
func (a slogAdapter) Infof(format string, args ...any)  { a.log(slog.LevelDebug, format, args) }
func (a slogAdapter) Warnf(format string, args ...any)  { a.log(slog.LevelWarn, format, args) }
func (a slogAdapter) Errorf(format string, args ...any) { a.log(slog.LevelError, format, args) }

func (a slogAdapter) log(level slog.Level, format string, args []any) {
	if !a.l.Enabled(context.Background(), level) {
		return
	}
	a.l.Log(context.Background(), level, "go-control-plane: "+clipTo(fmt.Sprintf(format, args...), maxLoggedLineBytes))
}
