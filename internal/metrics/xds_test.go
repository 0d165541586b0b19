package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/tributary-dev/tributary/internal/metrics"
)

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
