package main

import (
	"encoding/json"
	"log/slog"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	// The types a Cluster carries in Any fields (protocol options, TLS,
	// load-balancing policies): protojson prints an Any only when its type
	// is linked in.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/client_side_weighted_round_robin/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/load_balancing_policies/wrr_locality/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// clusterSink stands in for Contour's cluster cache (contour.ClusterSink):
// Contour would merge the Clusters into the CDS snapshot it serves Envoy;
// the host prints them, so a test sees exactly what Contour's cache would
// have been handed, and when.
type clusterSink struct {
	out *lines
}

// clusterLine is the {"clusters":...} line.
type clusterLine struct {
	Clusters clusterChange `json:"clusters"`
}

type clusterChange struct {
	Changed map[string]json.RawMessage `json:"changed"`
	Removed []string                   `json:"removed"`
}

// UpdateClusters prints one line per call. The adapter calls it from the
// goroutine that delivers its session's output, in order, so the lines are
// in the order the changes happened.
func (s clusterSink) UpdateClusters(changed []*clusterv3.Cluster, removed []string) {
	line := clusterLine{Clusters: clusterChange{Changed: map[string]json.RawMessage{}, Removed: removed}}
	if line.Clusters.Removed == nil {
		line.Clusters.Removed = []string{}
	}
	for _, c := range changed {
		// protojson, not encoding/json: only it spells a Cluster as Envoy
		// and the xDS tools do (durations as "5s", enums by name, Any
		// with @type). encoding/json compacts the embedded text, so the
		// line stays one line whatever spacing protojson chooses.
		b, err := protojson.Marshal(c)
		if err != nil {
			slog.Error("contourhost: cannot encode a Cluster", "cluster", c.GetName(), "error", err)
			continue
		}
		line.Clusters.Changed[c.GetName()] = b
	}
	s.out.print(line)
}
