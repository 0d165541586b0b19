package metrics_test

import (
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/server"
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

// example is the request of examples/grpc/translate-request.json: one valid
// ExtensionService over two Services with one EndpointSlice each.
func example(t *testing.T) *tributaryv1.TranslateRequest {
	t.Helper()
	raw, err := os.ReadFile("../../examples/grpc/translate-request.json")
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
