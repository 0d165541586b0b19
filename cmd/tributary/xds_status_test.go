package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
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

	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/internal/xds"
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

// TestXDSStatusErrors: every way of not getting a status says why, exits
// 1, and prints nothing on stdout; usage errors exit 2.
func TestXDSStatusErrors(t *testing.T) {
	// A port nothing listens on: one the kernel gave and took back.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := lis.Addr().String()
	_ = lis.Close()
	// Another program on the port: a real HTTP server that is not
	// Tributary's.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("answer") {
		case "object":
			_, _ = fmt.Fprintln(w, `{"status": "ok"}`)
		default:
			_, _ = fmt.Fprintln(w, "<html>hello</html>")
		}
	}))
	defer other.Close()
	otherAddress := strings.TrimPrefix(other.URL, "http://")
	// A server that never answers.
	silent := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer silent.Close()
	silentAddress := strings.TrimPrefix(silent.URL, "http://")
	// A Tributary without xDS: no /debug/xds.
	noXDS := startServe(t, "--metrics-address", "127.0.0.1:0")

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"unreachable", []string{"--metrics-address", closed}, 1,
			"tributary xds status: cannot reach http://" + closed + "/debug/xds: dial tcp " + closed + ": connect: connection refused (is tributary serve running with --metrics-address there?)\n"},
		{"not JSON", []string{"--metrics-address", otherAddress}, 1,
			"tributary xds status: http://" + otherAddress + "/debug/xds did not answer with JSON (is another program listening there?): invalid character '<' looking for beginning of value\n"},
		{"a URL for an address", []string{"--metrics-address", other.URL}, 2,
			"tributary xds status: invalid --metrics-address \"" + other.URL + "\": want host:port\n"},
		{"no xDS", []string{"--metrics-address", noXDS.metricsAddress}, 1,
			"tributary xds status: http://" + noXDS.metricsAddress + "/debug/xds answered 404 Not Found: that server does not serve xDS (it needs --xds-address) or predates /debug/xds\n"},
		{"no answer", []string{"--metrics-address", silentAddress, "--timeout", "100ms"}, 1,
			"tributary xds status: no answer from http://" + silentAddress + "/debug/xds: context deadline exceeded (waited --timeout 100ms)\n"},
		{"output format", []string{"-o", "yaml"}, 2, "tributary xds status: invalid -o \"yaml\": want table or json\n"},
		{"timeout", []string{"--timeout", "0s"}, 2, "tributary xds status: --timeout must be positive, not 0s\n"},
		// The usage follows.
		{"argument", []string{"extra"}, 2, "unexpected argument \"extra\"\nUsage: " + xdsStatusSynopsis + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := runCmd(t, "", append([]string{"xds", "status"}, tc.args...)...)
			stderr := got.stderr
			if tc.name == "argument" {
				stderr = stderr[:min(len(stderr), len(tc.wantStderr))]
			}
			if got.code != tc.wantCode || got.stdout != "" || stderr != tc.wantStderr {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit %d, stderr:\n%s", got.code, got.stdout, got.stderr, tc.wantCode, tc.wantStderr)
			}
		})
	}

	// The command's own limit and a JSON answer that is not a status are
	// checked on the fetch, with the limit lowered.
	_, _, err = fetchXDSStatus(t.Context(), other.URL+"/debug/xds", 10)
	if want := "the answer of " + other.URL + "/debug/xds is over 10 bytes, more than an xDS status takes: is another program listening there?"; err == nil || err.Error() != want {
		t.Errorf("an answer over the limit: %v; want %s", err, want)
	}
	_, _, err = fetchXDSStatus(t.Context(), other.URL+"/debug/xds?answer=object", maxXDSStatusBytes)
	if want := other.URL + `/debug/xds?answer=object answered JSON without "streams" and "groups": is another program listening there?`; err == nil || err.Error() != want {
		t.Errorf("JSON that is not a status: %v; want %s", err, want)
	}
}

// TestXDSUsage: `tributary xds` and its help.
func TestXDSUsage(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{[]string{"xds"}, 2, "", xdsUsage},
		{[]string{"xds", "help"}, 0, xdsUsage, ""},
		{[]string{"xds", "frobnicate"}, 2, "", "tributary xds: unknown command \"frobnicate\"\n\n" + xdsUsage},
	} {
		got := runCmd(t, "", tc.args...)
		if got.code != tc.wantCode || got.stdout != tc.wantStdout || got.stderr != tc.wantStderr {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr %q", tc.args, got.code, got.stdout, got.stderr, tc.wantCode, tc.wantStdout, tc.wantStderr)
		}
	}
	got := runCmd(t, "", "xds", "status", "-h")
	if got.code != 0 || !strings.HasPrefix(got.stderr, "Usage: "+xdsStatusSynopsis+"\n") {
		t.Errorf("xds status -h: exit %d, stderr:\n%s", got.code, got.stderr)
	}
	if got := runCmd(t, "", "help"); !strings.Contains(got.stdout, "\n  tributary xds status [flags]") {
		t.Errorf("tributary help does not list xds status:\n%s", got.stdout)
	}
}

// TestXDSVariantLabels: the metrics' variant labels are package xds's
// variants, which the metrics package cannot import.
func TestXDSVariantLabels(t *testing.T) {
	if want := []string{string(xds.SotW), string(xds.Delta)}; !slices.Equal(metrics.XDSVariants, want) {
		t.Errorf("metrics.XDSVariants = %q, want %q", metrics.XDSVariants, want)
	}
}
