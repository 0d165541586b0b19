// Package grpcproof checks, in process, that gRPC's own xDS client accepts
// what a Publisher serves: the translated Cluster (with its EDS over ADS),
// the weighted ClusterLoadAssignment and the proxyless Listener. It is a
// package of its own because gRPC's xDS client is process-wide state, read
// from its bootstrap once.
package grpcproof

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	_ "google.golang.org/grpc/xds" // the xds:/// resolver and the xDS balancers

	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/workload"
	"github.com/tributary-dev/tributary/internal/xds"
)

// nackRecorder fails the test on any NACK or refused resource.
type nackRecorder struct {
	mu     sync.Mutex
	events []string
}

func (r *nackRecorder) Nack(n xds.Nack) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("NACK of %s %v: %s", n.TypeURL, n.ResourceNames, n.ErrorDetail))
}

func (r *nackRecorder) Refused(_, typeURL, name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("refused %s %s: %v", typeURL, name, err))
}

func (r *nackRecorder) Sent(string, int)                   {}
func (r *nackRecorder) Streams(xds.Variant, string, int)   {}
func (r *nackRecorder) ChangeToSend(string, time.Duration) {}
func (r *nackRecorder) SendToAck(string, time.Duration)    {}

// callerTargetEnv names the target TestCaller dials; TestCaller does
// nothing without it.
const callerTargetEnv = "GRPCPROOF_TARGET"

// TestCaller makes health checks through the xDS target callerTargetEnv
// names, as the caller process of TestGRPCClientAcceptsPublishedResources.
func TestCaller(t *testing.T) {
	target := os.Getenv(callerTargetEnv)
	if target == "" {
		t.Skip("run by TestGRPCClientAcceptsPublishedResources")
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for range 20 {
		resp, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatalf("Check through %s: %v", target, err)
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Fatalf("Check: %v", resp.GetStatus())
		}
	}
}

// serve serves s on a loopback port until the test ends.
func serve(t *testing.T, s *grpc.Server) net.Addr {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr()
}

// backend is a gRPC server answering health checks with SERVING.
func backend(t *testing.T) int {
	t.Helper()
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer())
	return serve(t, s).(*net.TCPAddr).Port
}

// objects is one h2c ExtensionService splitting 80/20 between two Services,
// each with one endpoint on loopback at the given port.
func objects(ports [2]int) *source.Objects {
	h2c := "h2c"
	objs := &source.Objects{ExtensionServices: []source.ExtensionService{{
		Meta: source.Meta{Namespace: "ns", Name: "authz", Generation: 1},
		Spec: source.ExtensionServiceSpec{Protocol: &h2c},
	}}}
	tcp, portName := "TCP", "grpc"
	for i, weight := range []uint32{80, 20} {
		svc := []string{"primary", "canary"}[i]
		port := int32(ports[i])
		objs.ExtensionServices[0].Spec.Services = append(objs.ExtensionServices[0].Spec.Services,
			source.ExtensionServiceTarget{Name: svc, Port: port, Weight: weight})
		objs.Services = append(objs.Services, source.Service{
			Meta: source.Meta{Namespace: "ns", Name: svc}, Type: "ClusterIP",
			Ports: []source.ServicePort{{Name: portName, Port: port, TargetPort: strconv.Itoa(ports[i]), Protocol: tcp}},
		})
		objs.EndpointSlices = append(objs.EndpointSlices, source.EndpointSlice{
			Meta:        source.Meta{Namespace: "ns", Name: svc + "-1"},
			Service:     svc,
			AddressType: "IPv4",
			Ports:       []source.EndpointPort{{Name: &portName, Port: &port, Protocol: &tcp}},
			Endpoints:   source.MakeEndpoints(workload.ReadyEndpoint("127.0.0.1")),
		})
	}
	return objs
}

// TestGRPCClientAcceptsPublishedResources dials xds:///<cluster name> with
// gRPC's xDS client against a Publisher, and makes calls that reach the
// backends: every resource was accepted, and none was NACKed.
func TestGRPCClientAcceptsPublishedResources(t *testing.T) {
	rec := &nackRecorder{}
	p := xds.NewPublisher(xds.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: rec})
	t.Cleanup(p.Shutdown)
	xdsServer := grpc.NewServer()
	p.Register(xdsServer)
	xdsAddr := serve(t, xdsServer)

	res := translate.Translate(objects([2]int{backend(t), backend(t)}), source.Settings{})
	if len(res.Clusters) != 1 {
		t.Fatalf("translation: %+v", res.Statuses)
	}
	pub, err := p.Open("proxyless", xds.PublicationOptions{Listeners: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	pub.Apply(translate.Changes{Clusters: res.Clusters, ClusterLoadAssignments: res.ClusterLoadAssignments})

	// gRPC reads its bootstrap from the environment when its package
	// initialises, so the caller is this test binary run again, as
	// TestCaller, with the bootstrap naming this Publisher.
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestCaller$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(),
		"GRPC_XDS_BOOTSTRAP=",
		"GRPC_XDS_BOOTSTRAP_CONFIG="+fmt.Sprintf(`{
			"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
			"node": {"id": "caller-1", "cluster": "proxyless"}
		}`, xdsAddr.String()),
		callerTargetEnv+"=xds:///"+res.Clusters[0].Name,
	)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestCaller") {
		t.Errorf("the caller failed (%v):\n%s", err, out)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.events) > 0 {
		t.Errorf("xDS events: %v", rec.events)
	}
}
