package contour_test

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"go.uber.org/goleak"
	"google.golang.org/grpc"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/grpctest"
	"github.com/tributary-dev/tributary/internal/server"
	"github.com/tributary-dev/tributary/internal/testproc"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		testproc.RemoveBuilds()
		os.Exit(code)
	}))
}

// dial serves a real TranslationService over an in-memory listener until
// the test ends.
func dial(t testing.TB) *grpc.ClientConn {
	t.Helper()
	return grpctest.Bufconn(t, server.NewGRPCServer(server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
}

// caches stands in for Contour's cluster cache, EDS cache and status
// writer: it keeps what it was given and logs every call.
type caches struct {
	mu       sync.Mutex
	clusters map[string]*clusterv3.Cluster
	clas     map[string]*endpointv3.ClusterLoadAssignment
	statuses map[string]*tributaryv1.ExtensionServiceStatus
	calls    []string
	called   chan struct{}
}

func newCaches() *caches {
	return &caches{
		clusters: map[string]*clusterv3.Cluster{},
		clas:     map[string]*endpointv3.ClusterLoadAssignment{},
		statuses: map[string]*tributaryv1.ExtensionServiceStatus{},
		called:   make(chan struct{}, 1),
	}
}

func (c *caches) log(format string, args ...any) {
	c.calls = append(c.calls, fmt.Sprintf(format, args...))
	select {
	case c.called <- struct{}{}:
	default:
	}
}

func (c *caches) UpdateClusters(changed []*clusterv3.Cluster, removed []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var names []string
	for _, cl := range changed {
		c.clusters[cl.GetName()] = cl
		names = append(names, cl.GetName())
	}
	for _, name := range removed {
		delete(c.clusters, name)
	}
	c.log("clusters changed=%v removed=%v", names, removed)
}

func (c *caches) UpdateClusterLoadAssignments(changed []*endpointv3.ClusterLoadAssignment, removed []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var names []string
	for _, cla := range changed {
		c.clas[cla.GetClusterName()] = cla
		names = append(names, cla.GetClusterName())
	}
	for _, name := range removed {
		delete(c.clas, name)
	}
	c.log("endpoints changed=%v removed=%v", names, removed)
}

func (c *caches) WriteStatus(namespace, name string, st *tributaryv1.ExtensionServiceStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.statuses[namespace+"/"+name] = st
	c.log("status %s/%s %s", namespace, name, st.GetConditions()[0].GetStatus())
}

func (c *caches) RemoveStatus(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.statuses, namespace+"/"+name)
	c.log("status %s/%s removed", namespace, name)
}

// takeCalls returns the calls since the last take.
func (c *caches) takeCalls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

// awaitCalls waits until n calls have been made since the last take, and
// takes them; for changes no Flush waits for.
func (c *caches) awaitCalls(t *testing.T, n int) []string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		c.mu.Lock()
		if len(c.calls) >= n {
			out := c.calls
			c.calls = nil
			c.mu.Unlock()
			return out
		}
		c.mu.Unlock()
		select {
		case <-c.called:
		case <-timeout:
			t.Fatalf("%d calls within 30s, want %d", len(c.takeCalls()), n)
		}
	}
}

// deletedFinalStateUnknown has the shape of client-go's
// cache.DeletedFinalStateUnknown, the tombstone an informer hands OnDelete
// when it missed the deletion itself.
type deletedFinalStateUnknown struct {
	Key string
	Obj any
}

func (c *caches) state() state {
	c.mu.Lock()
	defer c.mu.Unlock()
	return state{clusters: clone(c.clusters), clas: clone(c.clas), statuses: clone(c.statuses)}
}
