package xds_test

import (
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/workload"
	"github.com/tributary-dev/tributary/internal/xds"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// recorder is the Metrics and the NACK sink of a test.
type recorder struct {
	mu      sync.Mutex
	nacks   []xds.Nack
	refused []string
	// nacked is signalled on every NACK handed to a Publication.
	nacked chan xds.Nack
}

func newRecorder() *recorder { return &recorder{nacked: make(chan xds.Nack, 16)} }

func (r *recorder) Nack(n xds.Nack) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nacks = append(r.nacks, n)
}

func (r *recorder) Refused(group, typeURL, name string, _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refused = append(r.refused, group+" "+typeURL+" "+name)
}

func (r *recorder) Sent(string, int)                   {}
func (r *recorder) Streams(xds.Variant, string, int)   {}
func (r *recorder) ChangeToSend(string, time.Duration) {}
func (r *recorder) SendToAck(string, time.Duration)    {}

func (r *recorder) refusedSoFar() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.refused)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startServer serves a Publisher on a loopback port until the test ends,
// and returns it with a connection to it.
func startServer(t testing.TB, opts xds.Options) (*xds.Publisher, *grpc.ClientConn) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	p := xds.NewPublisher(opts)
	s := grpc.NewServer(xds.ServerCodec())
	p.Register(s)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20))) // a first response of 10,000 resources
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() {
		conn.Close()
		p.Shutdown()
		s.Stop()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return p, conn
}

// translated returns the resources of the standard workload's first n
// ExtensionServices with m endpoints per Service, and the objects.
func translated(n, m int) (*source.Objects, *translate.Result) {
	objs := workload.Standard(n, m)
	return objs, translate.Translate(objs, source.Settings{})
}

// everything is the Changes that publish all of res.
func everything(res *translate.Result) translate.Changes {
	return translate.Changes{Clusters: res.Clusters, ClusterLoadAssignments: res.ClusterLoadAssignments}
}

// changes is what changed from before to after.
func changes(before, after *translate.Result) translate.Changes {
	var c translate.Changes
	c.Clusters, c.RemovedClusters = diff(before.Clusters, after.Clusters)
	c.ClusterLoadAssignments, c.RemovedClusterLoadAssignments = diff(before.ClusterLoadAssignments, after.ClusterLoadAssignments)
	return c
}

func diff(before, after []translate.Resource) (changed []translate.Resource, removed []string) {
	old := map[string]string{}
	for _, r := range before {
		old[r.Name] = r.Version
	}
	for _, r := range after {
		if v, ok := old[r.Name]; !ok || v != r.Version {
			changed = append(changed, r)
		}
		delete(old, r.Name)
	}
	for name := range old {
		removed = append(removed, name)
	}
	slices.Sort(removed)
	return changed, removed
}

func names(rs []translate.Resource) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Name
	}
	return out
}

// node is the xDS node of a client in group "edge".
func node(id string) *corev3.Node {
	return &corev3.Node{Id: id, Cluster: "edge"}
}

// unpack decodes a.
func unpack[M proto.Message](t *testing.T, a *anypb.Any, m M) M {
	t.Helper()
	if err := a.UnmarshalTo(m); err != nil {
		t.Fatalf("UnmarshalTo: %v", err)
	}
	return m
}
