package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/xds"
)

// xdsStopTimeout bounds how long xDS responses being written may take once
// serve stops; the streams themselves end at once (they never end on their
// own).
const xdsStopTimeout = 2 * time.Second

// The defaults of the xDS port's gRPC limits, and why they fit the
// deployment's 1 GiB pod (deploy/base/deployment.yaml), where six Sync
// sessions may hold 768 MiB and the xDS server, its clients and the
// runtime share what is left.
const (
	// defaultXDSMaxStreamsPerConnection is HTTP/2's recommended minimum
	// (RFC 9113, 6.5.2), which clients expect; a legitimate one opens one
	// ADS stream (Envoy, gRPC) or one per type (three or four), so only a
	// client opening streams in a loop meets it, and its extra streams wait
	// for one to end instead of piling up. The streams of all connections
	// together are bounded by --xds-max-streams.
	defaultXDSMaxStreamsPerConnection = 100
	// defaultXDSMaxRequestBytes is gRPC's own default. The largest request
	// a legitimate client sends is a State-of-the-World subscription that
	// names every resource it wants: at --xds-max-names-per-stream
	// (50,000) names of about 60 bytes ("extension/<namespace>/<name>"),
	// about 3 MiB. A request is held only while it is read, and only if
	// the client sends all of it; but one connection at the defaults can
	// make the server hold 100 × 4 MiB, more than the pod has room for.
	// This bound is against a client's bug (one giant subscription); its
	// malice is kept off the port by mutual TLS and
	// --xds-tls-allowed-client-sans, which admit only the Envoys and gRPC
	// clients meant to use it.
	defaultXDSMaxRequestBytes = 4 << 20
	// xdsMaxHeaderListSize replaces gRPC's default of 16 MiB of request
	// headers per stream: xDS clients send a few hundred bytes (path,
	// authority, content type, user agent), so 64 KiB is far above any of
	// them, and 100 streams at the limit hold 6.4 MiB.
	xdsMaxHeaderListSize = 64 << 10
)

// xdsFlags are serve's xDS flags.
type xdsFlags struct {
	address string
	grace   time.Duration
	// limits bound what xDS clients can make the Publisher hold; it
	// enforces them.
	limits xds.Limits
	// streamsPerConnection and requestBytes bound the gRPC server itself.
	streamsPerConnection int
	requestBytes         byteSize
	// credentials secure the listener (the TLS flags, see serve_tls.go);
	// nil serves plaintext.
	credentials credentials.TransportCredentials
}

// registerXDSFlags adds --xds-address, --xds-withdraw-grace and the xDS
// limits to fs. xDS is off by default: Sync sessions then cannot name a
// node group.
func registerXDSFlags(fs *pflag.FlagSet) *xdsFlags {
	f := &xdsFlags{requestBytes: defaultXDSMaxRequestBytes}
	fs.StringVar(&f.address, "xds-address", "",
		"`host:port` serving xDS (ADS, CDS, EDS and LDS, State of the World and Delta) with the resources of Sync sessions that name an xds_node_group; a client's group is its node.cluster, or its node.id when that is empty. Empty (the default) serves none")
	fs.DurationVar(&f.grace, "xds-withdraw-grace", 30*time.Second,
		"how long a node group's resources stay served after the Sync session that published them ends, so a session that reconnects in time changes nothing for xDS clients")
	fs.IntVar(&f.limits.MaxStreams, "xds-max-streams", xds.DefaultMaxStreams,
		"most xDS streams open at once, all clients together; one more ends with RESOURCE_EXHAUSTED")
	fs.IntVar(&f.limits.MaxNamesPerStream, "xds-max-names-per-stream", xds.DefaultMaxNamesPerStream,
		"most resource names one xDS stream subscribes to, per type; a subscription beyond it ends the stream with RESOURCE_EXHAUSTED")
	fs.IntVar(&f.limits.MaxNames, "xds-max-names", xds.DefaultMaxNames,
		"most resource names all xDS streams subscribe to together; the stream whose subscription goes beyond it ends with RESOURCE_EXHAUSTED")
	fs.IntVar(&f.limits.MaxNodeLength, "xds-max-node-length", xds.DefaultMaxNodeLength,
		"longest node.id and node.cluster an xDS client may send, in bytes; a longer one ends its stream with INVALID_ARGUMENT")
	fs.IntVar(&f.streamsPerConnection, "xds-max-streams-per-connection", defaultXDSMaxStreamsPerConnection,
		"most xDS streams open at once on one connection; more wait for one to end")
	fs.Var(&f.requestBytes, "xds-max-request-bytes",
		"largest xDS request, a `quantity`; a larger one ends its stream with RESOURCE_EXHAUSTED")
	return f
}

// check rejects limits that would turn xDS off or mean "default" (a zero
// xds.Limits field does).
func (f *xdsFlags) check() error {
	for _, l := range []struct {
		name  string
		value int
	}{
		{"xds-max-streams", f.limits.MaxStreams}, {"xds-max-names-per-stream", f.limits.MaxNamesPerStream},
		{"xds-max-names", f.limits.MaxNames}, {"xds-max-node-length", f.limits.MaxNodeLength},
		{"xds-max-streams-per-connection", f.streamsPerConnection}, {"xds-max-request-bytes", int(f.requestBytes)},
	} {
		if l.value <= 0 {
			return fmt.Errorf("--%s must be positive, not %d", l.name, l.value)
		}
	}
	// HTTP/2 carries the stream limit in 32 bits.
	if uint64(f.streamsPerConnection) > math.MaxUint32 {
		return fmt.Errorf("--xds-max-streams-per-connection must be at most %d, not %d", uint32(math.MaxUint32), f.streamsPerConnection)
	}
	return nil
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
	p := xds.NewPublisher(xds.Options{WithdrawGrace: f.grace, Logger: logger, Metrics: xm, Limits: f.limits})
	srv := grpc.NewServer(
		xds.ServerCodec(),
		grpc.Creds(f.credentials),
		grpc.MaxConcurrentStreams(uint32(f.streamsPerConnection)),
		grpc.MaxRecvMsgSize(int(f.requestBytes)),
		grpc.MaxHeaderListSize(xdsMaxHeaderListSize),
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

// handlerStopGrace is how long stopWithin waits, after closing every
// connection, for the handlers still running: Stop cancels their contexts,
// and the translation stops within about 100 ms of that. A handler that
// does not (a bug) must not hold the process: shutdown ends within the
// timeout plus this, whatever is in flight.
const handlerStopGrace = time.Second

// stopWithin stops srv gracefully, letting calls in flight finish, but for
// at most d: then it logs late, closes every connection and waits at most
// handlerStopGrace more for the handlers, logging those it leaves behind.
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
		select {
		case <-drained:
		case <-time.After(handlerStopGrace):
			logger.Error("handlers still running after their calls were cancelled; exiting without them", "waited", handlerStopGrace)
		}
	}
}

// xdsMetrics records the Publisher's events into the service's metrics.
type xdsMetrics struct{ m *metrics.Metrics }

func (x xdsMetrics) Nack(n xds.Nack)                 { x.m.RecordNACK(n.TypeURL) }
func (x xdsMetrics) Refused(_, _, _ string, _ error) {} // logged by the Publisher; a translator bug, not a rate
func (x xdsMetrics) Sent(typeURL string, n int)      { x.m.ResourcesSent(metrics.RPCXDS, typeURL, n) }
func (x xdsMetrics) Streams(v xds.Variant, typeURL string, delta int) {
	x.m.AddXDSStreams(string(v), typeURL, delta)
}
func (x xdsMetrics) ChangeToSend(typeURL string, d time.Duration) {
	x.m.ObserveXDSChangeToSend(typeURL, d)
}
func (x xdsMetrics) SendToAck(typeURL string, d time.Duration) { x.m.ObserveXDSSendToAck(typeURL, d) }

// xdsStatus is what /debug/xds answers and `tributary xds status` reads:
// every open xDS stream and every node group. Its lists are never null, so
// scripts can index them without checking.
type xdsStatus struct {
	Streams []xds.StreamStatus `json:"streams"`
	Groups  []xds.GroupStatus  `json:"groups"`
}

// withEmptyLists replaces the nil lists of s, its streams' and its groups'
// with empty ones.
func (s xdsStatus) withEmptyLists() xdsStatus {
	if s.Streams == nil {
		s.Streams = []xds.StreamStatus{}
	}
	if s.Groups == nil {
		s.Groups = []xds.GroupStatus{}
	}
	for i := range s.Streams {
		if s.Streams[i].Types == nil {
			s.Streams[i].Types = []xds.TypeStatus{}
		}
	}
	for i := range s.Groups {
		if s.Groups[i].Types == nil {
			s.Groups[i].Types = []xds.GroupTypeStatus{}
		}
	}
	return s
}

// debugRoutes are the xDS server's endpoints on the metrics listener:
// none when xDS is off, so /debug/xds answers 404 and `tributary xds
// status` can say why.
func (e *xdsEndpoint) debugRoutes() []metrics.Route {
	if e == nil {
		return nil
	}
	return []metrics.Route{
		{Pattern: "GET /debug/xds", Handler: http.HandlerFunc(e.serveStatus)},
		{Pattern: "GET /debug/xds/resource", Handler: http.HandlerFunc(e.serveResource)},
	}
}

// xdsResource is what /debug/xds/resource answers: one resource a group
// serves, decoded.
type xdsResource struct {
	Group    string          `json:"group"`
	TypeURL  string          `json:"typeUrl"`
	Name     string          `json:"name"`
	Version  string          `json:"version"`
	Resource json.RawMessage `json:"resource"`
}

// serveResource answers /debug/xds/resource?group=G&type=T&name=N with the
// resource group G serves as type T (a type URL, or CDS, EDS, LDS…) under
// name N, decoded to JSON: what its clients are sent, as `tributary xds
// status` shows its version.
func (e *xdsEndpoint) serveResource(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	group, typeURL, name := q.Get("group"), q.Get("type"), q.Get("name")
	for _, d := range discoveryServices {
		if d.short == typeURL {
			typeURL = d.typeURL
		}
	}
	if group == "" || typeURL == "" || name == "" {
		http.Error(w, "group, type and name are required", http.StatusBadRequest)
		return
	}
	a, version, ok := e.publisher.Resource(group, typeURL, name)
	if !ok {
		http.Error(w, "the group serves no such resource", http.StatusNotFound)
		return
	}
	body, err := protojson.Marshal(a)
	if err != nil {
		http.Error(w, "cannot decode the resource: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	// A failed write means the client left; there is no one to tell.
	_ = json.NewEncoder(w).Encode(xdsResource{Group: group, TypeURL: typeURL, Name: name, Version: version, Resource: body})
}

// serveStatus answers /debug/xds with the xDS status as JSON; with
// ?versions=1 every group's types carry the version of each resource name,
// which at a million names is tens of megabytes: it is for debugging one
// server, not for a scraper.
func (e *xdsEndpoint) serveStatus(w http.ResponseWriter, r *http.Request) {
	versions := false
	if v := r.URL.Query().Get("versions"); v != "" {
		var err error
		if versions, err = strconv.ParseBool(v); err != nil {
			http.Error(w, "versions must be 1 or 0 (true or false)", http.StatusBadRequest)
			return
		}
	}
	status := xdsStatus{Streams: e.publisher.Streams(), Groups: e.publisher.Groups(versions)}.withEmptyLists()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	// A failed write means the client left; there is no one to tell.
	_ = json.NewEncoder(w).Encode(status)
}
