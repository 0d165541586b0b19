package main

import (
	"strings"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/xds"
)

// fixed, and checks the table exactly.
func TestXDSStatusTable(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	st := xdsStatus{
		Streams: []xds.StreamStatus{
			{
				ID: "sotw-9", NodeID: "envoy-b", Group: "edge", Variant: xds.SotW, ConnectedSince: now.Add(-26*time.Hour - 3*time.Minute),
				Types: []xds.TypeStatus{
					{TypeURL: resourcev3.ClusterType, Wildcard: true, LastSent: "a1b2-7", LastAcked: "a1b2-7"},
					// A NACK of the latest version; the last good one serves.
					{TypeURL: resourcev3.EndpointType, Names: 120, Pending: 3, LastSent: "a1b2-9", LastAcked: "a1b2-8", LastNacked: "a1b2-9", NackDetail: "duplicate endpoint"},
				},
			},
			// Wildcard and names both, and a type no discovery service
			// name is given for.
			{
				ID: "delta-2", NodeID: "envoy-a", Group: "edge", Variant: xds.Delta, ConnectedSince: now.Add(-5*time.Minute - 3*time.Second),
				Types: []xds.TypeStatus{
					{TypeURL: resourcev3.ListenerType, Wildcard: true, Names: 2, LastSent: "4", LastAcked: "4"},
					{TypeURL: "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig", Names: 1},
				},
			},
			// A node id with a space and a terminal escape, and one too
			// long for a cell; a stream that has asked for nothing yet,
			// opened after the server's Date (whole seconds).
			{ID: "sotw-3", NodeID: "evil \x1b[2J", Group: strings.Repeat("g", 100), Variant: xds.SotW, ConnectedSince: now.Add(-42 * time.Second)},
			{ID: "sotw-4", NodeID: "late", Group: "edge", Variant: xds.SotW, ConnectedSince: now.Add(300 * time.Millisecond)},
		},
		Groups: []xds.GroupStatus{
			{Name: "edge", Published: true, Streams: 3, Types: []xds.GroupTypeStatus{
				{TypeURL: resourcev3.ClusterType, Resources: 10}, {TypeURL: resourcev3.EndpointType, Resources: 10}, {TypeURL: resourcev3.ListenerType, Resources: 10},
			}},
			{Name: "old", Streams: 0, Types: []xds.GroupTypeStatus{{TypeURL: resourcev3.EndpointType, Resources: 1}}},
		},
	}
	out, err := xdsStatusTable(st, now)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("g", 63) + "…"
	want := `NODE             GROUP                                                              VARIANT   TYPE                                        NAMES   SENT     ACKED    NACKED   PENDING   CONNECTED
envoy-a          edge                                                               delta     LDS                                         *+2     4        4        -        0         5m3s
envoy-a          edge                                                               delta     envoy.config.core.v3.TypedExtensionConfig   1       -        -        -        0         5m3s
envoy-b          edge                                                               sotw      CDS                                         *       a1b2-7   a1b2-7   -        0         1d2h
envoy-b          edge                                                               sotw      EDS                                         120     a1b2-9   a1b2-8   a1b2-9   3         1d2h
"evil \x1b[2J"   ` + long + `   sotw      -                                           -       -        -        -        -         42s
late             edge                                                               sotw      -                                           -       -        -        -        -         0s

GROUP   PUBLISHED   STREAMS   CDS   EDS   LDS
edge    yes         3         10    10    10
old     no          0         0     1     0
`
	if d := cmp.Diff(want, string(out)); d != "" {
		t.Errorf("table (-want +got):\n%s", d)
	}

	out, err = xdsStatusTable(xdsStatus{}, now)
	if want := "No xDS stream is open.\n\nNo node group is served.\n"; err != nil || string(out) != want {
		t.Errorf("empty status: %q, %v; want %q", out, err, want)
	}
}

func TestFormatAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                    "0s",
		999 * time.Millisecond:          "0s",
		59 * time.Second:                "59s",
		time.Minute:                     "1m0s",
		59*time.Minute + 59*time.Second: "59m59s",
		time.Hour + 30*time.Second:      "1h0m",
		23*time.Hour + 59*time.Minute:   "23h59m",
		24 * time.Hour:                  "1d0h",
		400*24*time.Hour + 5*time.Hour:  "400d5h",
	} {
		if got := formatAge(d); got != want {
			t.Errorf("formatAge(%v) = %q, want %q", d, got, want)
		}
	}
}
