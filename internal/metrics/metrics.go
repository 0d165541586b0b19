// Package metrics is Tributary's Prometheus instrumentation: the standard
// gRPC server metrics of go-grpc-middleware's prometheus provider, the
// translation service's own metrics, and the HTTP endpoints that serve them
// with liveness and readiness (see Handler).
//
// Every metric lives in the registry of one Metrics value, never in the
// global default registry, so tests and several servers in one process read
// exactly their own counts.
package metrics

import (
	"strings"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"
)

// RPC label values of tributary_translation_duration_seconds and
// tributary_resources_sent_total.
const (
	RPCTranslate = "translate"
	RPCSync      = "sync"
	// RPCXDS labels resources sent by the xDS server.
	RPCXDS = "xds"
)

// translationBuckets span a small translation (a few ExtensionServices,
// about 100µs) to the largest the message limit allows (millions of
// endpoints, tens of seconds), a factor of four apart.
var translationBuckets = prometheus.ExponentialBuckets(0.0001, 4, 10)

// xdsLatencyBuckets span an xDS response on loopback (about 100µs) to a
// client that reads or ACKs after seconds (a stalled Envoy, a connection
// about to die), at 1, 2 and 5 per decade: finer than translationBuckets
// where the targets are (a 2ms boundary for a single change, 200ms and
// 500ms around a rollout's), and each boundary a number an operator reads
// at a glance in le="...".
var xdsLatencyBuckets = []float64{
	0.0001, 0.0002, 0.0005,
	0.001, 0.002, 0.005,
	0.01, 0.02, 0.05,
	0.1, 0.2, 0.5,
	1, 2, 5,
	10,
}

// XDSVariants are the variant label values of tributary_xds_streams: the
// xDS protocol variants, as package xds names them (xds.SotW, xds.Delta;
// this package does not import xds, so a test of the command that joins
// them checks the two agree).
var XDSVariants = []string{"sotw", "delta"}

// Metrics owns a Prometheus registry holding the gRPC server metrics, Go
// runtime and process metrics, and Tributary's own. It is safe for
// concurrent use.
//
// A nil *Metrics is valid and records nothing: code that reports metrics
// needs no check of its own for a server built without them.
type Metrics struct {
	registry *prometheus.Registry
	grpc     *grpcprom.ServerMetrics

	sessionsActive      prometheus.Gauge
	sessionObjects      *prometheus.GaugeVec
	translationDuration *prometheus.HistogramVec
	resourcesSent       *prometheus.CounterVec
	deltasCoalesced     prometheus.Counter
	batchesRejected     prometheus.Counter
	nacks               *prometheus.CounterVec
	xdsStreams          *prometheus.GaugeVec
	xdsChangeToSend     *prometheus.HistogramVec
	xdsSendToAck        *prometheus.HistogramVec
	buildInfo           *prometheus.GaugeVec
	certificateExpiry   *prometheus.GaugeVec

	probes probes
}

// New returns Metrics with every metric registered and at zero. It starts
// out not ready (see SetReady).
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		grpc:     grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram()),
		sessionsActive: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tributary_sync_sessions_active",
			Help: "Sync sessions open now (counted from a valid SyncStart until the stream ends).",
		}),
		sessionObjects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_sync_session_objects",
			Help: "Input objects held by all open Sync sessions, by kind; divide by tributary_sync_sessions_active for the mean per session.",
		}, []string{"kind"}),
		translationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tributary_translation_duration_seconds",
			Help:    "Time spent translating: a whole Translate request (rpc=translate) or applying one Sync batch (rpc=sync).",
			Buckets: translationBuckets,
		}, []string{"rpc"}),
		resourcesSent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_resources_sent_total",
			Help: "Envoy resources sent to clients, by RPC and resource type.",
		}, []string{"rpc", "type"}),
		deltasCoalesced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_deltas_coalesced_total",
			Help: "Sync batches answered by the delta of a later batch, because the client read slower than it wrote.",
		}),
		batchesRejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_sync_batches_rejected_total",
			Help: "Sync batches refused as malformed (answered with BatchRejected).",
		}),
		nacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_xds_nacks_total",
			Help: "xDS responses a client rejected (NACKed), by resource type.",
		}, []string{"type"}),
		xdsStreams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_xds_streams",
			Help: "xDS streams open now, by protocol variant (sotw, delta) and each resource type they have asked for; a stream asking for several types counts once per type.",
		}, []string{"variant", "type"}),
		xdsChangeToSend: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tributary_xds_change_to_send_seconds",
			Help:    "Time from a change being published by a Sync session to the xDS response carrying it being sent, per response, by resource type (the oldest change a response carries).",
			Buckets: xdsLatencyBuckets,
		}, []string{"type"}),
		xdsSendToAck: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tributary_xds_send_to_ack_seconds",
			Help:    "Time from an xDS response being sent to the client accepting it (ACK), by resource type.",
			Buckets: xdsLatencyBuckets,
		}, []string{"type"}),
		// The *_build_info convention: a gauge that is always 1, whose
		// labels say what runs, so a query can join them onto any other
		// series (count by (version) shows a rollout's progress).
		buildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_build_info",
			Help: "Always 1; the labels say which build of Tributary runs: its version, its VCS revision and the Go version it was built with.",
		}, []string{"version", "revision", "go_version"}),
		// A Unix time in seconds, hence _timestamp_seconds: time() minus it
		// is how long is left, whatever the certificate's lifetime.
		certificateExpiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_tls_certificate_expiry_timestamp_seconds",
			Help: "When the certificate a listener serves now expires (its NotAfter), in seconds since the Unix epoch, by listener (grpc, xds); updated whenever the certificate is reloaded.",
		}, []string{"listener"}),
	}
	m.registry.MustRegister(
		m.grpc,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.sessionsActive, m.sessionObjects, m.translationDuration,
		m.resourcesSent, m.deltasCoalesced, m.batchesRejected, m.nacks,
		m.xdsStreams, m.xdsChangeToSend, m.xdsSendToAck,
		m.buildInfo, m.certificateExpiry,
	)
	// Series that exist before their first event, so a dashboard shows 0
	// rather than no data and rate() sees the first increment.
	for _, rpc := range []string{RPCTranslate, RPCSync} {
		m.translationDuration.WithLabelValues(rpc)
	}
	for _, rpc := range []string{RPCTranslate, RPCSync} {
		for _, typeURL := range translationTypes {
			m.resourcesSent.WithLabelValues(rpc, TypeLabel(typeURL))
		}
	}
	for _, typeURL := range xdsTypes {
		m.nacks.WithLabelValues(TypeLabel(typeURL))
		m.xdsChangeToSend.WithLabelValues(TypeLabel(typeURL))
		m.xdsSendToAck.WithLabelValues(TypeLabel(typeURL))
		for _, variant := range XDSVariants {
			m.xdsStreams.WithLabelValues(variant, TypeLabel(typeURL))
		}
	}
	return m
}

// translationTypes are the types Translate and Sync send, and xdsTypes
// those the xDS server serves: their series exist from the start.
var (
	translationTypes = []string{resourcev3.ClusterType, resourcev3.EndpointType}
	xdsTypes         = append(translationTypes[:len(translationTypes):len(translationTypes)], resourcev3.ListenerType)
)

// Registry is the registry every metric is in, for tests and for callers
// that add collectors of their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// UnaryServerInterceptor and StreamServerInterceptor count and time every
// call (grpc_server_started_total, grpc_server_handled_total,
// grpc_server_handling_seconds, grpc_server_msg_{received,sent}_total).
func (m *Metrics) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return m.grpc.UnaryServerInterceptor()
}

// StreamServerInterceptor is UnaryServerInterceptor's counterpart for streams.
func (m *Metrics) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return m.grpc.StreamServerInterceptor()
}

// InitializeGRPC creates the gRPC series of every method s serves, at zero,
// so they are scraped before the first call. Call it once every service is
// registered on s.
func (m *Metrics) InitializeGRPC(s reflection.ServiceInfoProvider) {
	if m == nil {
		return
	}
	m.grpc.InitializeMetrics(s)
}

// InitializeSessionObjects creates the series of
// tributary_sync_session_objects for the given kinds, at zero, so they are
// scraped before the first session. The kinds are the session's own (the
// server passes the names of its kind table): this package knows none.
func (m *Metrics) InitializeSessionObjects(kinds ...string) {
	if m == nil {
		return
	}
	for _, kind := range kinds {
		m.sessionObjects.WithLabelValues(kind)
	}
}

// SessionStarted counts a Sync session as active, until SessionEnded.
func (m *Metrics) SessionStarted() {
	if m == nil {
		return
	}
	m.sessionsActive.Inc()
}

// SessionEnded stops counting a Sync session that SessionStarted counted.
func (m *Metrics) SessionEnded() {
	if m == nil {
		return
	}
	m.sessionsActive.Dec()
}

// AddSessionObjects adds n (negative to subtract) objects of kind, one of
// those given to InitializeSessionObjects, to those the open sessions hold. A session that ends
// subtracts everything it added.
func (m *Metrics) AddSessionObjects(kind string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.sessionObjects.WithLabelValues(kind).Add(float64(n))
}

// ObserveTranslation records that a translation for rpc (RPCTranslate or
// RPCSync) took d.
func (m *Metrics) ObserveTranslation(rpc string, d time.Duration) {
	if m == nil {
		return
	}
	m.translationDuration.WithLabelValues(rpc).Observe(d.Seconds())
}

// ResourcesSent counts n resources of typeURL sent over rpc (RPCTranslate,
// RPCSync, or the name of another API, such as "xds").
func (m *Metrics) ResourcesSent(rpc, typeURL string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.resourcesSent.WithLabelValues(rpc, TypeLabel(typeURL)).Add(float64(n))
}

// DeltasCoalesced counts n batches whose answer was merged into a later
// batch's: a Sync answer that covers k batches coalesces k-1.
func (m *Metrics) DeltasCoalesced(n int) {
	if m == nil || n <= 0 {
		return
	}
	m.deltasCoalesced.Add(float64(n))
}

// BatchRejected counts one Sync batch refused as malformed.
func (m *Metrics) BatchRejected() {
	if m == nil {
		return
	}
	m.batchesRejected.Inc()
}

// RecordNACK counts one xDS response of typeURL that a client rejected
// (a DiscoveryRequest with error_detail set).
func (m *Metrics) RecordNACK(typeURL string) {
	if m == nil {
		return
	}
	m.nacks.WithLabelValues(TypeLabel(typeURL)).Inc()
}

// AddXDSStreams adds n (negative to subtract) to the xDS streams of
// variant (one of XDSVariants) open now that have asked for typeURL. A
// stream that closes subtracts what it added.
func (m *Metrics) AddXDSStreams(variant, typeURL string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.xdsStreams.WithLabelValues(variant, TypeLabel(typeURL)).Add(float64(n))
}

// ObserveXDSChangeToSend records that an xDS response of typeURL was sent
// d after the oldest change it carries was published.
func (m *Metrics) ObserveXDSChangeToSend(typeURL string, d time.Duration) {
	if m == nil {
		return
	}
	m.xdsChangeToSend.WithLabelValues(TypeLabel(typeURL)).Observe(d.Seconds())
}

// ObserveXDSSendToAck records that a client ACKed an xDS response of
// typeURL d after it was sent.
func (m *Metrics) ObserveXDSSendToAck(typeURL string, d time.Duration) {
	if m == nil {
		return
	}
	m.xdsSendToAck.WithLabelValues(TypeLabel(typeURL)).Observe(d.Seconds())
}

// SetBuildInfo makes tributary_build_info describe the running build:
// version and revision as the binary was stamped (see the version
// command), goVersion as runtime.Version() reports it. The series of an
// earlier call goes, so there is always at most one.
func (m *Metrics) SetBuildInfo(version, revision, goVersion string) {
	if m == nil {
		return
	}
	m.buildInfo.Reset()
	m.buildInfo.WithLabelValues(version, revision, goVersion).Set(1)
}

// SetCertificateExpiry records that the certificate listener (such as
// "grpc" or "xds") serves now expires at notAfter. Call it on every load of
// the certificate, the first and each reload: the series then follows the
// certificate that new handshakes get. A listener serving plaintext has no
// series.
func (m *Metrics) SetCertificateExpiry(listener string, notAfter time.Time) {
	if m == nil {
		return
	}
	m.certificateExpiry.WithLabelValues(listener).Set(float64(notAfter.Unix()))
}

// TypeLabel is the type label of a resource type URL: its message name,
// without the "type.googleapis.com/" prefix every type URL shares
// ("envoy.config.cluster.v3.Cluster").
func TypeLabel(typeURL string) string {
	if i := strings.LastIndexByte(typeURL, '/'); i >= 0 {
		return typeURL[i+1:]
	}
	return typeURL
}
