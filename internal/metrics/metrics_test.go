package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/server"
	"github.com/tributary-dev/tributary/internal/testproc"
)

// TestMain fails the package if a test leaves a server or stream behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	clusterType = "envoy.config.cluster.v3.Cluster"
	claType     = "envoy.config.endpoint.v3.ClusterLoadAssignment"
)

// serveTranslation serves a real gRPC server recording into m on a
// loopback port, and returns a client of it; both stop when the test ends.
// Extra dial options tune the client (a small flow-control window).
func serveTranslation(t *testing.T, m *metrics.Metrics, dialOpts ...grpc.DialOption) tributaryv1.TranslationServiceClient {
	t.Helper()
	s := server.NewGRPCServer(server.Options{Logger: slog.New(slog.DiscardHandler), Metrics: m})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dialOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		s.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return tributaryv1.NewTranslationServiceClient(conn)
}

// example is the request of examples/translate-request.json: one valid
// ExtensionService over two Services with one EndpointSlice each.
func example(t *testing.T) *tributaryv1.TranslateRequest {
	t.Helper()
	raw, err := os.ReadFile("../../examples/translate-request.json")
	if err != nil {
		t.Fatal(err)
	}
	req := &tributaryv1.TranslateRequest{}
	if err := protojson.Unmarshal(raw, req); err != nil {
		t.Fatal(err)
	}
	return req
}

// sample returns the value of the series of family name with exactly the
// given labels (name, value pairs): a counter's or gauge's value, or a
// histogram's sample count. It fails the test when there is no such series.
func sample(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !hasLabels(m, labels) {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}

func hasLabels(m *dto.Metric, labels []string) bool {
	if len(m.GetLabel())*2 != len(labels) {
		return false
	}
	for _, l := range m.GetLabel() {
		found := false
		for i := 0; i < len(labels); i += 2 {
			found = found || labels[i] == l.GetName() && labels[i+1] == l.GetValue()
		}
		if !found {
			return false
		}
	}
	return true
}

// expect checks several series at once; want maps a description
// ("name label=value ...") to the value.
func expect(t *testing.T, reg prometheus.Gatherer, when string, want map[string]float64) {
	t.Helper()
	for series, v := range want {
		fields := strings.Fields(series)
		var labels []string
		for _, kv := range fields[1:] {
			k, val, _ := strings.Cut(kv, "=")
			labels = append(labels, k, val)
		}
		if got := sample(t, reg, fields[0], labels...); got != v {
			t.Errorf("%s: %s = %v, want %v", when, series, got, v)
		}
	}
}

func TestTranslate(t *testing.T) {
	m := metrics.New()
	client := serveTranslation(t, m)
	reg := m.Registry()
	expect(t, reg, "before any call", map[string]float64{
		"tributary_translation_duration_seconds rpc=translate":                                                                      0,
		"grpc_server_handled_total grpc_type=unary grpc_service=tributary.v1.TranslationService grpc_method=Translate grpc_code=OK": 0,
	})

	if _, err := client.Translate(t.Context(), example(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Translate(t.Context(), &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{ConnectTimeout: "soon"}}); err == nil {
		t.Fatal("a malformed request was accepted")
	}
	expect(t, reg, "after a translation and a malformed request", map[string]float64{
		// The malformed request fails before translating.
		"tributary_translation_duration_seconds rpc=translate":                                                                                   1,
		"tributary_translation_duration_seconds rpc=sync":                                                                                        0,
		"tributary_resources_sent_total rpc=translate type=" + clusterType:                                                                       1,
		"tributary_resources_sent_total rpc=translate type=" + claType:                                                                           1,
		"grpc_server_started_total grpc_type=unary grpc_service=tributary.v1.TranslationService grpc_method=Translate":                           2,
		"grpc_server_handled_total grpc_type=unary grpc_service=tributary.v1.TranslationService grpc_method=Translate grpc_code=OK":              1,
		"grpc_server_handled_total grpc_type=unary grpc_service=tributary.v1.TranslationService grpc_method=Translate grpc_code=InvalidArgument": 1,
		"grpc_server_handling_seconds grpc_type=unary grpc_service=tributary.v1.TranslationService grpc_method=Translate":                        2,
	})
}

// syncStream opens a Sync session with include_json as given.
func syncStream(t *testing.T, client tributaryv1.TranslationServiceClient, includeJSON bool) grpc.BidiStreamingClient[tributaryv1.SyncRequest, tributaryv1.SyncResponse] {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	stream, err := client.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{IncludeJson: includeJSON}}}); err != nil {
		t.Fatal(err)
	}
	return stream
}

func sendBatch(t *testing.T, stream grpc.BidiStreamingClient[tributaryv1.SyncRequest, tributaryv1.SyncResponse], b *tributaryv1.SyncBatch) {
	t.Helper()
	if err := stream.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: b}}); err != nil {
		t.Fatal(err)
	}
}

func recv(t *testing.T, stream grpc.BidiStreamingClient[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) *tributaryv1.SyncResponse {
	t.Helper()
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// finish half-closes stream and waits for the server to end it with OK.
func finish(t *testing.T, stream grpc.BidiStreamingClient[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) {
	t.Helper()
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if resp, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after half-close: %v, %v; want the end of the stream", resp, err)
	}
}

// malformed is a batch the server rejects: a delete of no kind.
func malformed(id uint64) *tributaryv1.SyncBatch {
	return &tributaryv1.SyncBatch{Id: id, Deletes: []*tributaryv1.ObjectReference{{Namespace: "auth", Name: "x"}}}
}

func TestSyncSession(t *testing.T) {
	m := metrics.New()
	client := serveTranslation(t, m)
	reg := m.Registry()
	objects := func(es, svc, slices float64) map[string]float64 {
		return map[string]float64{
			"tributary_sync_session_objects kind=ExtensionService":         es,
			"tributary_sync_session_objects kind=Service":                  svc,
			"tributary_sync_session_objects kind=EndpointSlice":            slices,
			"tributary_sync_session_objects kind=Secret":                   0,
			"tributary_sync_session_objects kind=TLSCertificateDelegation": 0,
		}
	}
	expect(t, reg, "before the session", map[string]float64{"tributary_sync_sessions_active": 0})
	expect(t, reg, "before the session", objects(0, 0, 0))

	stream := syncStream(t, client, false)
	sendBatch(t, stream, &tributaryv1.SyncBatch{Id: 1, Upserts: example(t).GetObjects()})
	if d := recv(t, stream).GetDelta(); d.GetBatchId() != 1 || len(d.GetClusters()) != 1 {
		t.Fatalf("first answer: %v", d)
	}
	// The gauges are set before the answer is sent, the resources sent are
	// counted once it is.
	waitFor(t, func() bool {
		return sample(t, reg, "tributary_resources_sent_total", "rpc", "sync", "type", claType) == 1
	})
	expect(t, reg, "after the full state", map[string]float64{
		"tributary_sync_sessions_active":                              1,
		"tributary_translation_duration_seconds rpc=sync":             1,
		"tributary_resources_sent_total rpc=sync type=" + clusterType: 1,
		"tributary_resources_sent_total rpc=sync type=" + claType:     1,
		"tributary_sync_batches_rejected_total":                       0,
	})
	expect(t, reg, "after the full state", objects(1, 2, 2))

	// Dropping the canary's slice changes the ClusterLoadAssignment only;
	// upserting the stable Service again changes no count.
	req := example(t)
	var stable *tributaryv1.KubernetesObject
	for _, o := range req.GetObjects() {
		if o.GetService().GetMetadata().GetName() == "authz-stable" {
			stable = o
		}
	}
	sendBatch(t, stream, &tributaryv1.SyncBatch{Id: 2, Upserts: []*tributaryv1.KubernetesObject{stable}, Deletes: []*tributaryv1.ObjectReference{
		{Kind: tributaryv1.ObjectKind_OBJECT_KIND_ENDPOINT_SLICE, Namespace: "auth", Name: canarySlice(t, req)},
		{Kind: tributaryv1.ObjectKind_OBJECT_KIND_SECRET, Namespace: "auth", Name: "never-sent"},
	}})
	if d := recv(t, stream).GetDelta(); d.GetBatchId() != 2 || len(d.GetClusters()) != 0 || len(d.GetClusterLoadAssignments()) != 1 {
		t.Fatalf("second answer: %v", d)
	}
	sendBatch(t, stream, malformed(3))
	if r := recv(t, stream).GetRejected(); r.GetBatchId() != 3 {
		t.Fatalf("third answer: %v", r)
	}
	expect(t, reg, "after a change and a rejection", map[string]float64{
		"tributary_sync_sessions_active":                              1,
		"tributary_translation_duration_seconds rpc=sync":             2,
		"tributary_resources_sent_total rpc=sync type=" + clusterType: 1,
		"tributary_resources_sent_total rpc=sync type=" + claType:     2,
		"tributary_sync_batches_rejected_total":                       1,
		// Every batch was read before the next was sent.
		"tributary_deltas_coalesced_total": 0,
	})
	expect(t, reg, "after a change and a rejection", objects(1, 2, 1))

	finish(t, stream)
	// The handler has returned before the client sees the end of the stream.
	expect(t, reg, "after the session", map[string]float64{
		"tributary_sync_sessions_active": 0,
		"grpc_server_handled_total grpc_type=bidi_stream grpc_service=tributary.v1.TranslationService grpc_method=Sync grpc_code=OK": 1,
		// The start and three batches in, three answers out.
		"grpc_server_msg_received_total grpc_type=bidi_stream grpc_service=tributary.v1.TranslationService grpc_method=Sync": 4,
		"grpc_server_msg_sent_total grpc_type=bidi_stream grpc_service=tributary.v1.TranslationService grpc_method=Sync":     3,
	})
	expect(t, reg, "after the session", objects(0, 0, 0))
}

// canarySlice is the name of the canary Service's EndpointSlice in req.
func canarySlice(t *testing.T, req *tributaryv1.TranslateRequest) string {
	t.Helper()
	for _, o := range req.GetObjects() {
		if s := o.GetEndpointSlice(); s.GetMetadata().GetLabels()["kubernetes.io/service-name"] == "authz-canary" {
			return s.GetMetadata().GetName()
		}
	}
	t.Fatal("the example has no canary EndpointSlice")
	return ""
}

// TestSyncCoalescesForSlowReader has a client write several batches
// while it reads nothing: the server's first answer is larger than the
// client's flow-control window, so its sender stays blocked on it, and the
// batches applied meanwhile are answered together. Which batches the first
// answer covers depends on scheduling; the count of merged batches is
// exact for either.
func TestSyncCoalescesForSlowReader(t *testing.T) {
	m := metrics.New()
	// A fixed 64 KiB window (it turns off BDP estimation, which would widen
	// it).
	client := serveTranslation(t, m, grpc.WithInitialWindowSize(64<<10), grpc.WithInitialConnWindowSize(64<<10),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	reg := m.Registry()

	// About 1 MiB of ClusterLoadAssignment: 20,000 endpoints in the stable
	// Service's slice.
	req := example(t)
	for _, o := range req.GetObjects() {
		if s := o.GetEndpointSlice(); s.GetMetadata().GetLabels()["kubernetes.io/service-name"] == "authz-stable" {
			for i := range 20000 {
				s.Endpoints = append(s.Endpoints, &tributaryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 100+i/65536, i/256%256, i%256)}})
			}
		}
	}
	stream := syncStream(t, client, false)
	sendBatch(t, stream, &tributaryv1.SyncBatch{Id: 1, Upserts: req.GetObjects()})
	// Batches 2 to 6 each add a Service no ExtensionService targets: each
	// is acknowledged with an empty delta, or merged into a later one.
	const batches = 6
	for id := uint64(2); id <= batches; id++ {
		sendBatch(t, stream, &tributaryv1.SyncBatch{Id: id, Upserts: []*tributaryv1.KubernetesObject{{Kind: &tributaryv1.KubernetesObject_Service{Service: &tributaryv1.Service{
			Metadata: &tributaryv1.ObjectMeta{Namespace: "auth", Name: fmt.Sprintf("unused-%d", id)},
		}}}}})
	}
	// The receiver handles batches in order, so once it has rejected this
	// one, every earlier batch is in the outbox.
	sendBatch(t, stream, malformed(batches+1))
	waitFor(t, func() bool { return sample(t, reg, "tributary_sync_batches_rejected_total") == 1 })

	// gRPC lets one message past its write quota, so the first answer
	// (batch 1, and maybe more) leaves at once and the second one holds
	// the sender until the client reads; by then every batch is applied,
	// so at most one more delta answers the rest: five batches in at most
	// two deltas.
	var deltas []*tributaryv1.SyncDelta
	for len(deltas) == 0 || deltas[len(deltas)-1].GetBatchId() != batches {
		deltas = append(deltas, recv(t, stream).GetDelta())
	}
	if len(deltas) > 3 {
		t.Fatalf("%d deltas for %d batches; want at most 3", len(deltas), batches)
	}
	if cla := deltas[0].GetClusterLoadAssignments(); len(cla) != 1 || len(cla[0].GetResource().GetValue()) < 256<<10 {
		t.Fatalf("the first answer has no ClusterLoadAssignment large enough to fill the window: %d", len(cla))
	}
	if r := recv(t, stream).GetRejected(); r.GetBatchId() != batches+1 {
		t.Fatalf("after the deltas: %v; want the rejection", r)
	}
	finish(t, stream)
	expect(t, reg, "after the session", map[string]float64{
		// Every batch not answered by a delta of its own was merged.
		"tributary_deltas_coalesced_total":                        float64(batches - len(deltas)),
		"tributary_translation_duration_seconds rpc=sync":         batches,
		"tributary_resources_sent_total rpc=sync type=" + claType: 1,
		"tributary_sync_sessions_active":                          0,
		"tributary_sync_session_objects kind=Service":             0,
	})
}

// waitFor polls until cond holds; the test's deadline bounds it.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-t.Context().Done():
			t.Fatal("gave up waiting")
		case <-time.After(time.Millisecond):
		}
	}
}

// TestHandler scrapes /metrics over real HTTP after a real call, and
// checks the probes.
func TestHandler(t *testing.T) {
	m := metrics.New()
	client := serveTranslation(t, m)
	if _, err := client.Translate(t.Context(), example(t)); err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	base := "http://" + lis.Addr().String()

	code, body := testproc.Get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`grpc_server_handled_total{grpc_code="OK",grpc_method="Translate",grpc_service="tributary.v1.TranslationService",grpc_type="unary"} 1`,
		// Every method's series exists before its first call.
		`grpc_server_handled_total{grpc_code="OK",grpc_method="Sync",grpc_service="tributary.v1.TranslationService",grpc_type="bidi_stream"} 0`,
		`tributary_resources_sent_total{rpc="translate",type="envoy.config.cluster.v3.Cluster"} 1`,
		`tributary_translation_duration_seconds_count{rpc="translate"} 1`,
		"tributary_sync_sessions_active 0",
		"tributary_xds_nacks_total",
		"go_goroutines ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	for _, step := range []struct {
		ready    bool
		readyz   int
		readyMsg string
	}{
		{false, http.StatusServiceUnavailable, "not ready\n"}, // New starts not ready
		{true, http.StatusOK, "ready\n"},
		{false, http.StatusServiceUnavailable, "not ready\n"}, // draining
	} {
		m.SetReady(step.ready)
		if code, body := testproc.Get(t, base+"/readyz"); code != step.readyz || body != step.readyMsg {
			t.Errorf("ready %v: /readyz = %d %q, want %d %q", step.ready, code, body, step.readyz, step.readyMsg)
		}
		if code, body := testproc.Get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
			t.Errorf("ready %v: /healthz = %d %q, want 200 \"ok\\n\"", step.ready, code, body)
		}
	}
	if code, _ := testproc.Get(t, base+"/other"); code != http.StatusNotFound {
		t.Errorf("/other: %d, want 404", code)
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *metrics.Metrics
	m.SessionStarted()
	m.SessionEnded()
	m.AddSessionObjects("Service", 1)
	m.ObserveTranslation(metrics.RPCSync, time.Second)
	m.ResourcesSent(metrics.RPCSync, "type.googleapis.com/envoy.config.cluster.v3.Cluster", 1)
	m.DeltasCoalesced(1)
	m.BatchRejected()
	m.RecordNACK("type.googleapis.com/envoy.config.cluster.v3.Cluster")
	m.AddXDSStreams("sotw", "type.googleapis.com/envoy.config.cluster.v3.Cluster", 1)
	m.ObserveXDSChangeToSend("type.googleapis.com/envoy.config.cluster.v3.Cluster", time.Millisecond)
	m.ObserveXDSSendToAck("type.googleapis.com/envoy.config.cluster.v3.Cluster", time.Millisecond)
	m.SetReady(true)
	if m.Ready() {
		t.Error("a nil Metrics is ready")
	}
}

func TestRecordNACK(t *testing.T) {
	m := metrics.New()
	m.RecordNACK("type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment")
	m.RecordNACK("type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment")
	m.RecordNACK("type.googleapis.com/envoy.config.listener.v3.Listener")
	expect(t, m.Registry(), "after three NACKs", map[string]float64{
		"tributary_xds_nacks_total type=" + claType:                        2,
		"tributary_xds_nacks_total type=envoy.config.listener.v3.Listener": 1,
	})
}

// exposition is the Prometheus text exposition of family name, as /metrics
// serves it, holding only the series with all of the given labels (name,
// value pairs; none keeps every series).
func exposition(t *testing.T, reg prometheus.Gatherer, name string, labels ...string) string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		var kept []*dto.Metric
		for _, m := range f.GetMetric() {
			if hasAllLabels(m, labels) {
				kept = append(kept, m)
			}
		}
		f.Metric = kept
		var b strings.Builder
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatalf("%s%v: %v", name, labels, err)
		}
		return b.String()
	}
	t.Fatalf("no family %s", name)
	return ""
}

// hasAllLabels is hasLabels for a subset of m's labels.
func hasAllLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			found = found || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
		}
		if !found {
			return false
		}
	}
	return true
}

func TestXDSStreams(t *testing.T) {
	m := metrics.New()
	const (
		cds = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
		eds = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	)
	// Two SotW streams ask for Clusters, a Delta one for
	// ClusterLoadAssignments; then one SotW stream closes.
	m.AddXDSStreams("sotw", cds, 1)
	m.AddXDSStreams("sotw", cds, 1)
	m.AddXDSStreams("delta", eds, 1)
	m.AddXDSStreams("sotw", cds, -1)
	// Every variant and type is there from the start, at zero.
	want := `# HELP tributary_xds_streams xDS streams open now, by protocol variant (sotw, delta) and each resource type they have asked for; a stream asking for several types counts once per type.
# TYPE tributary_xds_streams gauge
tributary_xds_streams{type="envoy.config.cluster.v3.Cluster",variant="delta"} 0
tributary_xds_streams{type="envoy.config.cluster.v3.Cluster",variant="sotw"} 1
tributary_xds_streams{type="envoy.config.endpoint.v3.ClusterLoadAssignment",variant="delta"} 1
tributary_xds_streams{type="envoy.config.endpoint.v3.ClusterLoadAssignment",variant="sotw"} 0
tributary_xds_streams{type="envoy.config.listener.v3.Listener",variant="delta"} 0
tributary_xds_streams{type="envoy.config.listener.v3.Listener",variant="sotw"} 0
`
	if got := exposition(t, m.Registry(), "tributary_xds_streams"); got != want {
		t.Errorf("exposition:\n%s\nwant:\n%s", got, want)
	}
}

// TestXDSLatencies records durations whose seconds are exact binary
// fractions, so that the sums print exactly: 1.953125ms (1/512 s, in the
// 2ms bucket), 250ms, and 2s, on a bucket boundary (le is inclusive).
func TestXDSLatencies(t *testing.T) {
	m := metrics.New()
	const lds = "type.googleapis.com/envoy.config.listener.v3.Listener"
	for _, d := range []time.Duration{1953125 * time.Nanosecond, 250 * time.Millisecond, 2 * time.Second} {
		m.ObserveXDSChangeToSend(lds, d)
	}
	m.ObserveXDSSendToAck(lds, 250*time.Millisecond)

	wantChangeToSend := `# HELP tributary_xds_change_to_send_seconds Time from a change being published by a Sync session to the xDS response carrying it being sent, per response, by resource type (the oldest change a response carries).
# TYPE tributary_xds_change_to_send_seconds histogram
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.0001"} 0
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.0002"} 0
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.0005"} 0
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.001"} 0
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.002"} 1
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.005"} 1
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.01"} 1
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.02"} 1
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.05"} 1
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.1"} 1
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.2"} 1
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.5"} 2
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="1"} 2
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="2"} 3
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="5"} 3
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="10"} 3
tributary_xds_change_to_send_seconds_bucket{type="envoy.config.listener.v3.Listener",le="+Inf"} 3
tributary_xds_change_to_send_seconds_sum{type="envoy.config.listener.v3.Listener"} 2.251953125
tributary_xds_change_to_send_seconds_count{type="envoy.config.listener.v3.Listener"} 3
`
	if got := exposition(t, m.Registry(), "tributary_xds_change_to_send_seconds", "type", "envoy.config.listener.v3.Listener"); got != wantChangeToSend {
		t.Errorf("exposition:\n%s\nwant:\n%s", got, wantChangeToSend)
	}
	wantSendToAck := `# HELP tributary_xds_send_to_ack_seconds Time from an xDS response being sent to the client accepting it (ACK), by resource type.
# TYPE tributary_xds_send_to_ack_seconds histogram
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.0001"} 0
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.0002"} 0
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.0005"} 0
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.001"} 0
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.002"} 0
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.005"} 0
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.01"} 0
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.02"} 0
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.05"} 0
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.1"} 0
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.2"} 0
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="0.5"} 1
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="1"} 1
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="2"} 1
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="5"} 1
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="10"} 1
tributary_xds_send_to_ack_seconds_bucket{type="envoy.config.listener.v3.Listener",le="+Inf"} 1
tributary_xds_send_to_ack_seconds_sum{type="envoy.config.listener.v3.Listener"} 0.25
tributary_xds_send_to_ack_seconds_count{type="envoy.config.listener.v3.Listener"} 1
`
	if got := exposition(t, m.Registry(), "tributary_xds_send_to_ack_seconds", "type", "envoy.config.listener.v3.Listener"); got != wantSendToAck {
		t.Errorf("exposition:\n%s\nwant:\n%s", got, wantSendToAck)
	}
	// The other types' series exist from the start, with nothing in them.
	expect(t, m.Registry(), "after Listener latencies only", map[string]float64{
		"tributary_xds_change_to_send_seconds type=" + clusterType: 0,
		"tributary_xds_change_to_send_seconds type=" + claType:     0,
		"tributary_xds_send_to_ack_seconds type=" + clusterType:    0,
		"tributary_xds_send_to_ack_seconds type=" + claType:        0,
	})
}

// TestHandlerExtraRoutes serves a route of another package beside the
// metrics, over real HTTP: it answers on its pattern only, and the
// built-in endpoints are unchanged.
func TestHandlerExtraRoutes(t *testing.T) {
	m := metrics.New()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	debug := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "debug "+r.URL.RawQuery+"\n")
	})
	srv := &http.Server{Handler: m.Handler(metrics.Route{Pattern: "GET /debug/thing", Handler: debug}), ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	base := "http://" + lis.Addr().String()

	for _, tc := range []struct {
		path     string
		wantCode int
		wantBody string
	}{
		{"/debug/thing?x=1", http.StatusOK, "debug x=1\n"},
		{"/debug/thing/more", http.StatusNotFound, "404 page not found\n"},
		{"/debug/other", http.StatusNotFound, "404 page not found\n"},
		{"/healthz", http.StatusOK, "ok\n"},
	} {
		if code, body := testproc.Get(t, base+tc.path); code != tc.wantCode || body != tc.wantBody {
			t.Errorf("%s: %d %q, want %d %q", tc.path, code, body, tc.wantCode, tc.wantBody)
		}
	}
}
