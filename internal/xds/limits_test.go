package xds_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/internal/xds"
	"github.com/tributary-dev/tributary/internal/xdstest"
)

// refusedStream sends req on a new ADS stream and returns the status the
// stream ends with: a stream over a limit ends at its first request.
func refusedStream(t *testing.T, conn *grpc.ClientConn, req *discoveryv3.DiscoveryRequest) *status.Status {
	t.Helper()
	s, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(req); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	_, err = s.Recv()
	if err == nil {
		t.Fatalf("the stream was answered; want it refused")
	}
	return status.Convert(err)
}

func wantStatus(t *testing.T, got *status.Status, code codes.Code, message string) {
	t.Helper()
	if got.Code() != code || got.Message() != message {
		t.Errorf("got %v %q, want %v %q", got.Code(), got.Message(), code, message)
	}
}

// A stream over MaxStreams is refused; the open ones go on, and once one
// closes another may open.
func TestMaxStreams(t *testing.T) {
	p, conn := startServer(t, xds.Options{Limits: xds.Limits{MaxStreams: 2}})
	_, res := translated(2, 1)
	pub := mustOpen(t, p, "edge", xds.PublicationOptions{})
	pub.Apply(everything(res))

	ctx, cancel := context.WithCancel(t.Context())
	first := xdstest.NewDelta(t, conn)
	first.Subscribe(node("envoy-1"), resourcev3.ClusterType)
	second, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node("envoy-2"), TypeUrl: resourcev3.ClusterType}); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Recv(); err != nil {
		t.Fatal(err)
	}

	got := refusedStream(t, conn, &discoveryv3.DiscoveryRequest{Node: node("envoy-3"), TypeUrl: resourcev3.ClusterType})
	wantStatus(t, got, codes.ResourceExhausted, "the server has 2 xDS streams open, its limit (--xds-max-streams)")

	// The open streams are served as before.
	_, v2 := translated(3, 1)
	pub.Apply(everything(v2))
	if got := xdstest.DeltaNames(first.Recv()); len(got) != 1 {
		t.Errorf("after a change, the first stream got %v, want the one new Cluster", got)
	}

	cancel() // the second stream closes: a new one is admitted
	testproc.WaitFor(t, "the closed stream to be forgotten", func() bool { return len(p.Streams()) == 1 })
	third := xdstest.NewSotW(t, conn)
	if got := xdstest.SotWNames(t, third.Subscribe(node("envoy-3"), resourcev3.ClusterType)); !slices.Equal(got, names(v2.Clusters)) {
		t.Errorf("a stream opened after another closed got %v, want %v", got, names(v2.Clusters))
	}
}

// A stream that subscribes to more names than MaxNamesPerStream, at once
// (State of the World) or over several requests (Delta), ends; the names
// all streams hold together are bounded by MaxNames.
func TestMaxNames(t *testing.T) {
	p, conn := startServer(t, xds.Options{Limits: xds.Limits{MaxNamesPerStream: 3, MaxNames: 5}})
	mustOpen(t, p, "edge", xds.PublicationOptions{})
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("extension/ns/es-%d", i)
		}
		return out
	}

	got := refusedStream(t, conn, &discoveryv3.DiscoveryRequest{Node: node("sotw"), TypeUrl: resourcev3.EndpointType, ResourceNames: many(4)})
	wantStatus(t, got, codes.ResourceExhausted, "a stream subscribes to 4 names of "+resourcev3.EndpointType+", over the limit of 3 (--xds-max-names-per-stream)")

	delta, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	send := func(names []string) {
		if err := delta.Send(&discoveryv3.DeltaDiscoveryRequest{Node: node("delta"), TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: names}); err != nil {
			t.Fatal(err)
		}
	}
	send(many(2))
	if _, err := delta.Recv(); err != nil { // the names do not exist: their removal
		t.Fatal(err)
	}
	send(many(4)[2:] /* two more */)
	_, err = delta.Recv()
	wantStatus(t, status.Convert(err), codes.ResourceExhausted, "a stream subscribes to 4 names of "+resourcev3.EndpointType+", over the limit of 3 (--xds-max-names-per-stream)")

	// Three names on one stream; three more on another would make six.
	holder := xdstest.NewSotW(t, conn)
	holder.Send(&discoveryv3.DiscoveryRequest{Node: node("holder"), TypeUrl: resourcev3.EndpointType, ResourceNames: many(3)})
	holder.Recv()
	testproc.WaitFor(t, "the refused streams to be forgotten", func() bool { return len(p.Streams()) == 1 })
	got = refusedStream(t, conn, &discoveryv3.DiscoveryRequest{Node: node("sotw-2"), TypeUrl: resourcev3.EndpointType, ResourceNames: many(3)})
	wantStatus(t, got, codes.ResourceExhausted, "xDS streams would subscribe to 6 names together, over the limit of 5 (--xds-max-names)")
}

// A node whose id or cluster is over MaxNodeLength is refused, and neither
// the error nor the log repeats it; neither does the error for a type that
// is not served.
func TestMaxNodeLengthAndUnknownTypes(t *testing.T) {
	var log testproc.Buffer
	_, conn := startServer(t, xds.Options{Limits: xds.Limits{MaxNodeLength: 64}, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	defer func() {
		for line := range strings.SplitSeq(log.String(), "\n") {
			if len(line) > 2048 {
				t.Errorf("a log line of %d bytes: %.300s...", len(line), line)
			}
		}
	}()
	long := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name string
		req  *discoveryv3.DiscoveryRequest
		code codes.Code
		want string
	}{
		{"node.id", &discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: long}, TypeUrl: resourcev3.ClusterType},
			codes.InvalidArgument, "node.id is 1048576 bytes, over the limit of 64 (--xds-max-node-length)"},
		{"node.cluster", &discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: "a", Cluster: long}, TypeUrl: resourcev3.ClusterType},
			codes.InvalidArgument, "node.cluster is 1048576 bytes, over the limit of 64 (--xds-max-node-length)"},
		{"type", &discoveryv3.DiscoveryRequest{Node: node("a"), TypeUrl: "type.googleapis.com/" + long},
			codes.InvalidArgument, `type "type.googleapis.com/` + strings.Repeat("x", 128-len("type.googleapis.com/")) + `… (1048596 bytes)" is not served`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantStatus(t, refusedStream(t, conn, tc.req), tc.code, tc.want)
		})
	}
}

// A group's state goes once nothing is published to it and its last stream
// closes: clients with ever new node ids leave nothing behind.
func TestGroupsAreForgotten(t *testing.T) {
	p, conn := startServer(t, xds.Options{})
	_, res := translated(1, 1)
	mustOpen(t, p, "edge", xds.PublicationOptions{}).Apply(everything(res))
	for i := range 20 {
		ctx, cancel := context.WithCancel(t.Context())
		s, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).DeltaAggregatedResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("client-%d", i)
		if err := s.Send(&discoveryv3.DeltaDiscoveryRequest{Node: &corev3.Node{Id: id}, TypeUrl: resourcev3.EndpointType, ResourceNamesSubscribe: []string{"x"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	testproc.WaitFor(t, "the streams to be forgotten", func() bool { return len(p.Streams()) == 0 })
	var groups []string
	for _, g := range p.Groups(false) {
		groups = append(groups, g.Name)
	}
	if !slices.Equal(groups, []string{"edge"}) {
		t.Errorf("groups %v, want only the published one", groups)
	}
}

// A node that is too large, metadata included, ends its stream; so does a
// State-of-the-World request that repeats a name (the limits count
// distinct names, and the request is kept).
func TestNodeSizeAndRepeatedNames(t *testing.T) {
	_, conn := startServer(t, xds.Options{})
	meta, err := structpb.NewStruct(map[string]any{"blob": strings.Repeat("m", 70_000)})
	if err != nil {
		t.Fatal(err)
	}
	got := refusedStream(t, conn, &discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: "a", Metadata: meta}, TypeUrl: resourcev3.ClusterType})
	wantStatus(t, got, codes.InvalidArgument, "node is 70025 bytes, over the limit of 65536")

	got = refusedStream(t, conn, &discoveryv3.DiscoveryRequest{Node: node("a"), TypeUrl: resourcev3.EndpointType, ResourceNames: []string{"x", "y", "x"}})
	wantStatus(t, got, codes.InvalidArgument, "a State-of-the-World request names a resource more than once")
}
