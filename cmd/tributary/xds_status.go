package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/spf13/cobra"

	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/xds"
)

// defaultStatusAddress is where `kubectl port-forward deploy/tributary
// 9090` and a server run with --metrics-address 127.0.0.1:9090 answer.
const defaultStatusAddress = "127.0.0.1:9090"

// maxXDSStatusBytes bounds how much of /debug/xds the command reads. The
// status without versions takes about 1 KiB per stream, so a server at its
// default limit of 4096 streams answers about 4 MiB: 64 MiB leaves room
// for far larger servers and still stops a runaway answer (another
// program on the port, a proxy in between) before it fills the memory.
const maxXDSStatusBytes = 64 << 20

func newXDSCommand(std stdio) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "xds",
		Short: "Inspect the xDS side of a running server",
		Args:  subcommandArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newXDSStatusCommand(std))
	return cmd
}

// xdsStatusFlags are the flags of `tributary xds status`.
type xdsStatusFlags struct {
	address, format string
	timeout         time.Duration
}

func newXDSStatusCommand(std stdio) *cobra.Command {
	f := &xdsStatusFlags{}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the xDS clients of a running server and what they were sent",
		Long: `Ask a running server's metrics listener for /debug/xds and print it: a
table with one row per stream and resource type, then the node groups; or,
with -o json, the JSON the server answered.`,
		Example: `  # A server run with --metrics-address 127.0.0.1:9090
  tributary xds status

  # A server in a cluster
  kubectl -n tributary port-forward deploy/tributary 9090 &
  tributary xds status -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runXDSStatus(cmd.Context(), f, std) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.address, "metrics-address", defaultStatusAddress,
		"`host:port` of the server's metrics listener (its --metrics-address; through kubectl port-forward, the local end)")
	fs.StringVarP(&f.format, "output", "o", "table", "output `format`: table or json")
	completeWords(cmd, "output", "table", "json")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "how long to wait for the server's answer")
	return cmd
}

// runXDSStatus asks a running server's metrics listener for /debug/xds
// and prints it: as a table with one row per stream and type, as
// istioctl proxy-status does for Istio, followed by the node groups; or as
// the JSON the server answered, indented.
func runXDSStatus(ctx context.Context, f *xdsStatusFlags, std stdio) error {
	if f.format != "table" && f.format != "json" {
		return usageErrorf("invalid --output %q: want table or json", f.format)
	}
	if _, _, err := net.SplitHostPort(f.address); err != nil {
		return usageErrorf("invalid --metrics-address %q: want host:port", f.address)
	}
	if f.timeout <= 0 {
		return usageErrorf("--timeout must be positive, not %s", f.timeout)
	}

	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	status, serverTime, err := fetchXDSStatus(ctx, "http://"+f.address+"/debug/xds", maxXDSStatusBytes)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w (waited --timeout %s)", err, f.timeout)
	}
	if err != nil {
		return err
	}
	var out []byte
	if f.format == "json" {
		out, err = indentedJSON(status)
	} else {
		out, err = xdsStatusTable(status, serverTime)
	}
	if err != nil {
		return err
	}
	_, err = std.out.Write(out)
	return err
}

// fetchXDSStatus gets the xDS status from statusURL, reading at most limit
// bytes of it. It also returns the server's time (its Date header, else
// this machine's), which the ages in the table count from, so a clock
// elsewhere that is off does not skew them.
func fetchXDSStatus(ctx context.Context, statusURL string, limit int64) (xdsStatus, time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, statusURL, nil)
	if err != nil {
		return xdsStatus{}, time.Time{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// The url.Error repeats the method and URL around the cause.
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return xdsStatus{}, time.Time{}, fmt.Errorf("no answer from %s: %w", statusURL, err)
		}
		return xdsStatus{}, time.Time{}, fmt.Errorf("cannot reach %s: %w (is tributary serve running with --metrics-address there?)", statusURL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return xdsStatus{}, time.Time{}, fmt.Errorf("reading the answer of %s: %w", statusURL, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return xdsStatus{}, time.Time{}, fmt.Errorf("%s answered %s: that server does not serve xDS (it needs --xds-address) or predates /debug/xds", statusURL, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return xdsStatus{}, time.Time{}, fmt.Errorf("%s answered %s: %s", statusURL, resp.Status, displayCell(firstLine(body), 200))
	case int64(len(body)) > limit:
		return xdsStatus{}, time.Time{}, fmt.Errorf("the answer of %s is over %d bytes, more than an xDS status takes: is another program listening there?", statusURL, limit)
	}
	// Pointers tell a missing list from an empty one: any JSON object
	// would otherwise read as a server with no streams.
	var answer struct {
		Streams *[]xds.StreamStatus `json:"streams"`
		Groups  *[]xds.GroupStatus  `json:"groups"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return xdsStatus{}, time.Time{}, fmt.Errorf("%s did not answer with JSON (is another program listening there?): %w", statusURL, err)
	}
	if answer.Streams == nil || answer.Groups == nil {
		return xdsStatus{}, time.Time{}, fmt.Errorf(`%s answered JSON without "streams" and "groups": is another program listening there?`, statusURL)
	}
	serverTime, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		serverTime = time.Now()
	}
	return xdsStatus{Streams: *answer.Streams, Groups: *answer.Groups}.withEmptyLists(), serverTime, nil
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}

// xdsStatusTable renders s as two tables: the streams, one row per stream
// and type it asked for, sorted by node, group and stream; then the node
// groups. Ages count from now, the server's time.
func xdsStatusTable(s xdsStatus, now time.Time) ([]byte, error) {
	var rows strings.Builder
	if len(s.Streams) == 0 {
		rows.WriteString("No xDS stream is open.\n")
	} else {
		rows.WriteString("NODE\tGROUP\tVARIANT\tTYPE\tNAMES\tSENT\tACKED\tNACKED\tPENDING\tCONNECTED\n")
		streams := slices.Clone(s.Streams)
		slices.SortStableFunc(streams, func(a, b xds.StreamStatus) int {
			if c := strings.Compare(a.NodeID, b.NodeID); c != 0 {
				return c
			}
			if c := strings.Compare(a.Group, b.Group); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
		for _, st := range streams {
			stream := []string{displayCell(st.NodeID, maxNodeCell), displayCell(st.Group, maxNodeCell), displayCell(string(st.Variant), maxNodeCell)}
			age := formatAge(now.Sub(st.ConnectedSince))
			if len(st.Types) == 0 {
				// Open, but it has asked for nothing yet.
				writeRow(&rows, append(stream, "-", "-", "-", "-", "-", "-", age))
			}
			for _, t := range st.Types {
				writeRow(&rows, append(stream, shortType(t.TypeURL), namesCell(t), versionCell(t.LastSent), versionCell(t.LastAcked),
					versionCell(t.LastNacked), strconv.Itoa(t.Pending), age))
			}
		}
	}
	// A line without tabs ends a block of aligned columns: the groups are
	// aligned on their own.
	rows.WriteString("\n")
	if len(s.Groups) == 0 {
		rows.WriteString("No node group is served.\n")
	} else {
		rows.WriteString("GROUP\tPUBLISHED\tSTREAMS\tCDS\tEDS\tLDS\n")
		for _, g := range s.Groups {
			published := "no"
			if g.Published {
				published = "yes"
			}
			resources := map[string]int{}
			for _, t := range g.Types {
				resources[t.TypeURL] = t.Resources
			}
			writeRow(&rows, []string{displayCell(g.Name, maxNodeCell), published, strconv.Itoa(g.Streams),
				strconv.Itoa(resources[resourcev3.ClusterType]), strconv.Itoa(resources[resourcev3.EndpointType]), strconv.Itoa(resources[resourcev3.ListenerType])})
		}
	}
	var out bytes.Buffer
	tw := tabwriter.NewWriter(&out, 0, 8, 3, ' ', 0)
	if _, err := io.WriteString(tw, rows.String()); err != nil {
		return nil, err
	}
	if err := tw.Flush(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func writeRow(b *strings.Builder, cells []string) {
	b.WriteString(strings.Join(cells, "\t"))
	b.WriteString("\n")
}

// maxNodeCell bounds a node id or group in the table, which the server
// already cuts to --xds-max-node-length (1 KiB by default): a table row is
// read on a terminal. -o json has them whole.
const maxNodeCell = 64

// displayCell makes a string that a client chose safe for one table cell:
// quoted (escaping tabs, newlines and terminal control sequences) unless
// it is plain printable text without spaces, and cut to at most limit
// characters, ending in "…" when it was cut.
func displayCell(s string, limit int) string {
	plain := s != "" && utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
		return r == ' ' || r == '"' || !strconv.IsPrint(r)
	})
	if !plain {
		s = strconv.Quote(s)
	}
	if utf8.RuneCountInString(s) > limit {
		runes := []rune(s)
		s = string(runes[:limit-1]) + "…"
	}
	return s
}

// discoveryServices names the xDS types by their discovery services, for
// the status table and /debug/xds/resource.
var discoveryServices = []struct{ short, typeURL string }{
	{"CDS", resourcev3.ClusterType},
	{"EDS", resourcev3.EndpointType},
	{"LDS", resourcev3.ListenerType},
	{"RDS", resourcev3.RouteType},
	{"SDS", resourcev3.SecretType},
}

// shortType names the types the server serves as their discovery service
// does (CDS, EDS, LDS); any other by its message name.
func shortType(typeURL string) string {
	for _, d := range discoveryServices {
		if d.typeURL == typeURL {
			return d.short
		}
	}
	return displayCell(metrics.TypeLabel(typeURL), maxNodeCell)
}

// namesCell is what a stream asked for: "*" for every resource (wildcard),
// the count of names it named, or both ("*+2").
func namesCell(t xds.TypeStatus) string {
	switch {
	case t.Wildcard && t.Names == 0:
		return "*"
	case t.Wildcard:
		return "*+" + strconv.Itoa(t.Names)
	}
	return strconv.Itoa(t.Names)
}

func versionCell(v string) string {
	if v == "" {
		return "-"
	}
	return displayCell(v, maxNodeCell)
}

// formatAge gives an age in its two largest units, as kubectl does: "42s",
// "5m3s", "3h20m", "4d2h". A negative age (the server's clock read before
// the stream opened, in whole seconds) is "0s".
func formatAge(d time.Duration) string {
	d = max(d, 0).Truncate(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}
