package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/internal/xdstest"
)

// authzName is the name of the Cluster and ClusterLoadAssignment that
// authzObjects publish.
const authzName = "extension/ns/authz"

// statusWait bounds how long a test waits for /debug/xds to show what the
// clients did: the server handles an ACK after the client sent it.
const statusWait = 10 * time.Second

// TestXDSStatus connects a State-of-the-World and a Delta client to a
// serve whose Sync session publishes to their group, each subscribing to
// every Cluster and to the one ClusterLoadAssignment by name, and checks
// what `tributary xds status` prints in JSON and as a table, what
// /debug/xds?versions=1 and /metrics say, and what is left once the
// clients leave. Times and ages, which no test can know, are masked;
// versions are the ones the clients were sent.
func TestXDSStatus(t *testing.T) {
	s := startServe(t, "--xds-address", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0", "--xds-withdraw-grace", "1h")
	before := time.Now()
	publishAuthz(t, s.grpcAddress, "edge")

	xdsConn, err := grpc.NewClient(s.xdsAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = xdsConn.Close() }()
	// Raw clients rather than Watchers, so the test knows every version
	// the server sent.
	sotw := xdstest.NewSotW(t, xdsConn)
	sotwCDS := sotw.Subscribe(&corev3.Node{Id: "envoy-1", Cluster: "edge"}, resourcev3.ClusterType)
	sotwEDS := sotw.Subscribe(nil, resourcev3.EndpointType, authzName)
	delta := xdstest.NewDelta(t, xdsConn)
	deltaCDS := delta.Subscribe(&corev3.Node{Id: "grpc-app", Cluster: "edge"}, resourcev3.ClusterType)
	deltaEDS := delta.Subscribe(nil, resourcev3.EndpointType, authzName)
	for _, v := range []string{sotwCDS.GetVersionInfo(), sotwEDS.GetVersionInfo(), deltaCDS.GetSystemVersionInfo(), deltaEDS.GetSystemVersionInfo()} {
		if v == "" {
			t.Fatalf("a response without a version: SotW CDS %q, EDS %q, Delta CDS %q, EDS %q",
				sotwCDS.GetVersionInfo(), sotwEDS.GetVersionInfo(), deltaCDS.GetSystemVersionInfo(), deltaEDS.GetSystemVersionInfo())
		}
	}
	metricsBase := "http://" + s.metricsAddress
	awaitStatus(t, metricsBase+"/debug/xds", "both streams' ACKs of both types", func(st xdsStatus) bool {
		if len(st.Streams) != 2 {
			return false
		}
		for _, stream := range st.Streams {
			if len(stream.Types) != 2 {
				return false
			}
			for _, typ := range stream.Types {
				if typ.LastAcked == "" || typ.LastAcked != typ.LastSent {
					return false
				}
			}
		}
		return true
	})
	after := time.Now()

	// -o json: the server's status, indented.
	got := runCmd(t, "", "xds", "status", "--metrics-address", s.metricsAddress, "-o", "json")
	if got.code != 0 || got.stderr != "" {
		t.Fatalf("xds status -o json: exit %d, stderr:\n%s", got.code, got.stderr)
	}
	var decoded xdsStatus
	if err := json.Unmarshal([]byte(got.stdout), &decoded); err != nil {
		t.Fatalf("xds status -o json printed no JSON: %v\n%s", err, got.stdout)
	}
	checkStatusTimes(t, decoded, before, after)
	version := func(v string) string { j, _ := json.Marshal(v); return string(j) }
	want := strings.NewReplacer(
		"<sotw-cds>", version(sotwCDS.GetVersionInfo()), "<sotw-eds>", version(sotwEDS.GetVersionInfo()),
		"<delta-cds>", version(deltaCDS.GetSystemVersionInfo()), "<delta-eds>", version(deltaEDS.GetSystemVersionInfo()),
	).Replace(`{
  "streams": [
    {
      "id": "<id>",
      "nodeId": "grpc-app",
      "group": "edge",
      "variant": "delta",
      "connectedSince": "<time>",
      "types": [
        {
          "typeUrl": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
          "wildcard": true,
          "names": 0,
          "pending": 0,
          "lastSent": <delta-cds>,
          "lastAcked": <delta-cds>,
          "sentAt": "<time>",
          "ackedAt": "<time>"
        },
        {
          "typeUrl": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
          "wildcard": false,
          "names": 1,
          "pending": 0,
          "lastSent": <delta-eds>,
          "lastAcked": <delta-eds>,
          "sentAt": "<time>",
          "ackedAt": "<time>"
        }
      ]
    },
    {
      "id": "<id>",
      "nodeId": "envoy-1",
      "group": "edge",
      "variant": "sotw",
      "connectedSince": "<time>",
      "types": [
        {
          "typeUrl": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
          "wildcard": true,
          "names": 0,
          "pending": 0,
          "lastSent": <sotw-cds>,
          "lastAcked": <sotw-cds>,
          "sentAt": "<time>",
          "ackedAt": "<time>"
        },
        {
          "typeUrl": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
          "wildcard": false,
          "names": 1,
          "pending": 0,
          "lastSent": <sotw-eds>,
          "lastAcked": <sotw-eds>,
          "sentAt": "<time>",
          "ackedAt": "<time>"
        }
      ]
    }
  ],
  "groups": [
    {
      "name": "edge",
      "published": true,
      "streams": 2,
      "types": [
        {
          "typeUrl": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
          "resources": 1
        },
        {
          "typeUrl": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
          "resources": 1
        }
      ]
    }
  ]
}
`)
	if d := cmp.Diff(want, maskStatusJSON(got.stdout)); d != "" {
		t.Errorf("xds status -o json (-want +got, times and ids masked):\n%s", d)
	}
	if ids := []string{decoded.Streams[0].ID, decoded.Streams[1].ID}; ids[0] == ids[1] || ids[0] == "" {
		t.Errorf("stream ids %q: want two different ones", ids)
	}

	// The table, the default: one row per stream and type, sorted by node.
	got = runCmd(t, "", "xds", "status", "--metrics-address", s.metricsAddress)
	if got.code != 0 || got.stderr != "" {
		t.Fatalf("xds status: exit %d, stderr:\n%s", got.code, got.stderr)
	}
	streamsTable, groupsTable, _ := strings.Cut(got.stdout, "\n\n")
	checkTable(t, streamsTable, [][]string{
		{"NODE", "GROUP", "VARIANT", "TYPE", "NAMES", "SENT", "ACKED", "NACKED", "PENDING", "CONNECTED"},
		{"envoy-1", "edge", "sotw", "CDS", "*", sotwCDS.GetVersionInfo(), sotwCDS.GetVersionInfo(), "-", "0", "<age>"},
		{"envoy-1", "edge", "sotw", "EDS", "1", sotwEDS.GetVersionInfo(), sotwEDS.GetVersionInfo(), "-", "0", "<age>"},
		{"grpc-app", "edge", "delta", "CDS", "*", deltaCDS.GetSystemVersionInfo(), deltaCDS.GetSystemVersionInfo(), "-", "0", "<age>"},
		{"grpc-app", "edge", "delta", "EDS", "1", deltaEDS.GetSystemVersionInfo(), deltaEDS.GetSystemVersionInfo(), "-", "0", "<age>"},
	})
	if want := "GROUP   PUBLISHED   STREAMS   CDS   EDS   LDS\nedge    yes         2         1     1     0\n"; groupsTable != want {
		t.Errorf("xds status, groups:\n%s\nwant:\n%s", groupsTable, want)
	}

	// ?versions=1 adds each resource's version: the one the Delta client
	// was sent. Without it there are none.
	code, body := testproc.Get(t, metricsBase+"/debug/xds?versions=1")
	var withVersions xdsStatus
	if err := json.Unmarshal([]byte(body), &withVersions); code != http.StatusOK || err != nil || len(withVersions.Groups) != 1 {
		t.Fatalf("/debug/xds?versions=1: %d %v\n%s", code, err, body)
	}
	gotVersions := map[string]map[string]string{}
	for _, typ := range withVersions.Groups[0].Types {
		gotVersions[typ.TypeURL] = typ.Versions
	}
	wantVersions := map[string]map[string]string{
		resourcev3.ClusterType:  {authzName: deltaCDS.GetResources()[0].GetVersion()},
		resourcev3.EndpointType: {authzName: deltaEDS.GetResources()[0].GetVersion()},
	}
	if d := cmp.Diff(wantVersions, gotVersions); d != "" {
		t.Errorf("/debug/xds?versions=1, versions by type (-want +got):\n%s", d)
	}
	if code, body := testproc.Get(t, metricsBase+"/debug/xds"); code != http.StatusOK || strings.Contains(body, `"versions"`) {
		t.Errorf("/debug/xds: %d, with versions without ?versions=1:\n%s", code, body)
	}
	if code, body := testproc.Get(t, metricsBase+"/debug/xds?versions=some"); code != http.StatusBadRequest || body != "versions must be 1 or 0 (true or false)\n" {
		t.Errorf("/debug/xds?versions=some: %d %q, want 400", code, body)
	}

	// The metrics count the same streams, responses and ACKs.
	awaitMetrics(t, metricsBase+"/metrics",
		`tributary_xds_streams{type="envoy.config.cluster.v3.Cluster",variant="delta"} 1`,
		`tributary_xds_streams{type="envoy.config.cluster.v3.Cluster",variant="sotw"} 1`,
		`tributary_xds_streams{type="envoy.config.endpoint.v3.ClusterLoadAssignment",variant="delta"} 1`,
		`tributary_xds_streams{type="envoy.config.endpoint.v3.ClusterLoadAssignment",variant="sotw"} 1`,
		`tributary_xds_streams{type="envoy.config.listener.v3.Listener",variant="delta"} 0`,
		`tributary_xds_streams{type="envoy.config.listener.v3.Listener",variant="sotw"} 0`,
		`tributary_xds_change_to_send_seconds_count{type="envoy.config.cluster.v3.Cluster"} 2`,
		`tributary_xds_change_to_send_seconds_count{type="envoy.config.endpoint.v3.ClusterLoadAssignment"} 2`,
		`tributary_xds_change_to_send_seconds_count{type="envoy.config.listener.v3.Listener"} 0`,
		`tributary_xds_send_to_ack_seconds_count{type="envoy.config.cluster.v3.Cluster"} 2`,
		`tributary_xds_send_to_ack_seconds_count{type="envoy.config.endpoint.v3.ClusterLoadAssignment"} 2`,
		`tributary_xds_send_to_ack_seconds_count{type="envoy.config.listener.v3.Listener"} 0`,
	)

	// The clients leave: the group stays published, without streams.
	_ = xdsConn.Close()
	awaitStatus(t, metricsBase+"/debug/xds", "no streams", func(st xdsStatus) bool { return len(st.Streams) == 0 })
	got = runCmd(t, "", "xds", "status", "--metrics-address", s.metricsAddress)
	if want := "No xDS stream is open.\n\nGROUP   PUBLISHED   STREAMS   CDS   EDS   LDS\nedge    yes         0         1     1     0\n"; got.code != 0 || got.stdout != want {
		t.Errorf("xds status after the clients left: exit %d, stdout:\n%s\nstderr:\n%s\nwant:\n%s", got.code, got.stdout, got.stderr, want)
	}
	awaitMetrics(t, metricsBase+"/metrics",
		`tributary_xds_streams{type="envoy.config.cluster.v3.Cluster",variant="delta"} 0`,
		`tributary_xds_streams{type="envoy.config.cluster.v3.Cluster",variant="sotw"} 0`,
		`tributary_xds_streams{type="envoy.config.endpoint.v3.ClusterLoadAssignment",variant="delta"} 0`,
		`tributary_xds_streams{type="envoy.config.endpoint.v3.ClusterLoadAssignment",variant="sotw"} 0`,
	)
}

// awaitStatus polls url (a /debug/xds) until its status satisfies ready,
// for at most statusWait.
func awaitStatus(t *testing.T, url, what string, ready func(xdsStatus) bool) {
	t.Helper()
	deadline := time.Now().Add(statusWait)
	for {
		code, body := testproc.Get(t, url)
		var st xdsStatus
		err := json.Unmarshal([]byte(body), &st)
		if code == http.StatusOK && err == nil && ready(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not show %s within %v; it answered %d:\n%s", url, what, statusWait, code, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// awaitMetrics polls url (a /metrics) until it holds every one of lines,
// for at most statusWait: the Publisher counts a response once it is sent.
func awaitMetrics(t *testing.T, url string, lines ...string) {
	t.Helper()
	deadline := time.Now().Add(statusWait)
	for {
		_, body := testproc.Get(t, url)
		have := strings.Split(body, "\n")
		var missing []string
		for _, l := range lines {
			if !slices.Contains(have, l) {
				missing = append(missing, l)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s lacks, after %v:\n%s", url, statusWait, strings.Join(missing, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// jsonTime matches a time as encoding/json writes it (RFC 3339, with
// nanoseconds when there are any).
var jsonTime = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)"`)

var streamID = regexp.MustCompile(`"id": "[^"]*"`)

// maskStatusJSON masks what a test cannot know of a status: times and
// stream ids.
func maskStatusJSON(s string) string {
	return streamID.ReplaceAllString(jsonTime.ReplaceAllString(s, `"<time>"`), `"id": "<id>"`)
}

// checkStatusTimes checks the times the masks hide: every stream opened,
// and was sent and ACKed each type, between before and after, and its
// ACKs came after what they acknowledge.
func checkStatusTimes(t *testing.T, st xdsStatus, before, after time.Time) {
	t.Helper()
	within := func(what string, at time.Time) {
		if at.Before(before) || at.After(after) {
			t.Errorf("%s at %v, not between %v and %v", what, at, before, after)
		}
	}
	for _, stream := range st.Streams {
		within(stream.NodeID+" connected", stream.ConnectedSince)
		for _, typ := range stream.Types {
			within(stream.NodeID+" "+typ.TypeURL+" sent", typ.SentAt)
			within(stream.NodeID+" "+typ.TypeURL+" acked", typ.AckedAt)
			if typ.AckedAt.Before(typ.SentAt) || typ.SentAt.Before(stream.ConnectedSince) {
				t.Errorf("%s %s: connected %v, sent %v, acked %v: out of order", stream.NodeID, typ.TypeURL, stream.ConnectedSince, typ.SentAt, typ.AckedAt)
			}
		}
	}
}

// checkTable checks an aligned table exactly but for its last column,
// which is masked: want holds each line's cells, every cell must start
// where its column's header does, and the last cell of every row but the
// header is an age in seconds.
func checkTable(t *testing.T, table string, want [][]string) {
	t.Helper()
	age := regexp.MustCompile(`^\d+s$`)
	var got [][]string
	var headerStarts []int
	for i, line := range strings.Split(strings.TrimSuffix(table, "\n"), "\n") {
		cells, starts := cellsOf(line)
		if i == 0 {
			headerStarts = starts
		} else if !slices.Equal(starts, headerStarts) {
			t.Errorf("line %d is not aligned with the header (cells at %v, header at %v):\n%s", i, starts, headerStarts, table)
		}
		if i > 0 && len(cells) > 0 && age.MatchString(cells[len(cells)-1]) {
			cells[len(cells)-1] = "<age>"
		}
		got = append(got, cells)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("table (-want +got, ages masked):\n%s\n%s", d, table)
	}
}

// cellsOf splits a table line at runs of spaces, returning each cell and
// the column it starts at.
func cellsOf(line string) (cells []string, starts []int) {
	for i := 0; i < len(line); {
		if line[i] == ' ' {
			i++
			continue
		}
		end := strings.Index(line[i:], "  ")
		if end < 0 {
			end = len(line) - i
		}
		cells, starts = append(cells, line[i:i+end]), append(starts, i)
		i += end
	}
	return cells, starts
}

// TestXDSStatusTable renders a status of every kind of row, with times
