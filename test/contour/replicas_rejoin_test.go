package contour_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/tributary-dev/tributary/client"
	"github.com/tributary-dev/tributary/client/contour"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/server"
	"github.com/tributary-dev/tributary/internal/testproc"
)

// gatedReplica is a Tributary replica on a fixed loopback address that can
// be stopped and started again, like a pod restarting in place: each start
// gets a new, empty server. Its Sync answers pass through a gate that can
// hold them back, so a test can catch a reconnected session before its new
// stream has answered.
type gatedReplica struct {
	t       *testing.T
	address string
	// Set by start, cleared by stop.
	front, back *grpc.Server
	backConn    *grpc.ClientConn
	served      chan struct{}
	// opened receives when a Sync stream opens.
	opened chan struct{}
}

func newGatedReplica(t *testing.T) *gatedReplica {
	r := &gatedReplica{t: t, address: "127.0.0.1:0", opened: make(chan struct{}, 100)}
	t.Cleanup(r.stop)
	return r
}

// start serves a new empty Tributary; with hold non-nil its Sync answers
// wait until hold is closed.
func (r *gatedReplica) start(hold <-chan struct{}) {
	r.t.Helper()
	lis, err := net.Listen("tcp", r.address)
	if err != nil {
		r.t.Fatal(err)
	}
	if r.address != lis.Addr().String() {
		r.address = lis.Addr().String() // only on the first start
	}
	r.back = server.NewGRPCServer(server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	backLis := bufconn.Listen(1 << 20)
	r.backConn, err = grpc.NewClient("passthrough:///backend",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return backLis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		r.t.Fatal(err)
	}
	r.front = grpc.NewServer()
	tributaryv1.RegisterTranslationServiceServer(r.front, &gate{backend: tributaryv1.NewTranslationServiceClient(r.backConn), hold: hold, opened: r.opened})
	r.served = make(chan struct{})
	front, back := r.front, r.back
	go func() {
		defer close(r.served)
		var wg sync.WaitGroup
		wg.Go(func() { _ = back.Serve(backLis) })
		_ = front.Serve(lis)
		wg.Wait()
	}()
}

// stop ends the replica and every connection to it.
func (r *gatedReplica) stop() {
	if r.front == nil {
		return
	}
	r.front.Stop()
	r.back.Stop()
	<-r.served
	r.backConn.Close()
	r.front, r.back = nil, nil
}

// gate relays Sync streams to a backend, holding the answers back until
// hold is closed.
type gate struct {
	tributaryv1.UnimplementedTranslationServiceServer
	backend tributaryv1.TranslationServiceClient
	hold    <-chan struct{}
	opened  chan<- struct{}
}

func (g *gate) Sync(down grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) error {
	up, err := g.backend.Sync(down.Context())
	if err != nil {
		return err
	}
	select {
	case g.opened <- struct{}{}:
	default:
	}
	go func() {
		for {
			req, err := down.Recv()
			if err != nil {
				_ = up.CloseSend()
				return
			}
			if up.Send(req) != nil {
				return
			}
		}
	}()
	for {
		resp, err := up.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if g.hold != nil {
			select {
			case <-g.hold:
			case <-down.Context().Done():
				return down.Context().Err()
			}
		}
		if err := down.Send(resp); err != nil {
			return err
		}
	}
}

// TestReplicatedAdapterRejoinsUpToDate: a replica that was down while
// changes were made and has just reconnected still shows its old output
// until its new stream answers. When the primary fails at that moment, the
// caches must not be moved to that old output (which would undo changes
// they already have); they wait, and get the current output once the
// replica has answered.
func TestReplicatedAdapterRejoinsUpToDate(t *testing.T) {
	one, two := newGatedReplica(t), newGatedReplica(t)
	one.start(nil)
	two.start(nil)
	addrs := []string{one.address, two.address}
	logs := &testproc.Buffer{}
	defer func() {
		if t.Failed() {
			t.Logf("adapter log:\n%s", logs)
		}
	}()
	logger := slog.New(slog.NewTextHandler(logs, nil))
	sink := newCaches()
	a, err := contour.NewReplicatedAdapter(t.Context(), nil,
		func(context.Context) ([]string, error) { return slices.Clone(addrs), nil },
		contour.WithClusterSink(sink), contour.WithEndpointSink(sink), contour.WithStatusWriter(sink),
		contour.WithDebounce(-1),
		contour.WithSyncOptions(client.WithLogger(logger), client.WithBackoff(10*time.Millisecond, 50*time.Millisecond)),
		contour.WithResolveInterval(10*time.Millisecond),
		contour.WithLogger(logger),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	flush := func(name string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		if err := a.Flush(ctx); err != nil {
			t.Fatalf("%s: Flush: %v", name, err)
		}
	}

	es := extAuthz(1, 80, 20)
	es.Spec.UpstreamValidation = nil
	canary := endpointSlice("authz-canary-p4n8d", "authz-canary", pod{ip: "10.244.2.30", ready: true})
	for _, obj := range []any{es, authzService("authz-stable"), authzService("authz-canary"), canary,
		endpointSlice("authz-stable-7x2kq", "authz-stable", pod{ip: "10.244.1.17", ready: true})} {
		a.OnAdd(obj, true)
	}
	flush("initial list")
	if calls := sink.takeCalls(); len(calls) != 3 {
		t.Fatalf("initial list: calls %q, want a Cluster, a ClusterLoadAssignment and a status", calls)
	}
	primary, lagging := one, two
	if a.Primary() == two.address {
		primary, lagging = two, one
	}

	// The other replica goes down and misses a change.
	lagging.stop()
	a.OnUpdate(canary, endpointSlice("authz-canary-p4n8d", "authz-canary", pod{ip: "10.244.2.30", ready: true}, pod{ip: "10.244.1.31", ready: true}))
	flush("canary scaled up")
	if d := cmp.Diff([]string{"endpoints changed=[extension/auth/ext-authz] removed=[]", "status auth/ext-authz True"}, sink.takeCalls()); d != "" {
		t.Errorf("canary scaled up: calls (-want +got):\n%s", d)
	}

	// It comes back, its session reconnects, and its answers are held;
	// then the primary fails.
	hold := make(chan struct{})
	for len(lagging.opened) > 0 {
		<-lagging.opened
	}
	lagging.start(hold)
	select {
	case <-lagging.opened:
	case <-time.After(30 * time.Second):
		t.Fatal("the session did not reconnect within 30s")
	}
	primary.stop()
	awaitReplicaState(t, a, lagging.address, connectivity.Ready)
	awaitReplicaState(t, a, primary.address, connectivity.Idle, connectivity.Connecting, connectivity.TransientFailure)
	// Nothing can answer while the answers are held, so this Flush must
	// run out of time; it checks the primary first.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	err = a.Flush(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Flush with no current replica: %v, want the deadline's error", err)
	}
	if got := a.Primary(); got != "" {
		t.Errorf("primary %q while its session has not answered since it reconnected, want none", got)
	}
	if calls := sink.takeCalls(); len(calls) != 0 {
		t.Errorf("calls after the failover to a replica that had not answered: %q", calls)
	}

	// A change is made; the held answers are let through: the caches get
	// exactly that change.
	reweighted := extAuthz(2, 50, 50)
	reweighted.Spec.UpstreamValidation = nil
	a.OnUpdate(es, reweighted)
	close(hold)
	flush("weights 50/50")
	if d := cmp.Diff([]string{
		"endpoints changed=[extension/auth/ext-authz] removed=[]",
		"status auth/ext-authz True",
	}, sink.takeCalls()); d != "" {
		t.Errorf("weights 50/50: calls (-want +got):\n%s", d)
	}
	if got := a.Primary(); got != lagging.address {
		t.Errorf("primary %q, want the replica that came back, %s", got, lagging.address)
	}
	cla := sink.state().clas[clusterName]
	var got []string
	for _, l := range cla.GetEndpoints() {
		got = append(got, fmt.Sprintf("%s weight %d, %d endpoints", l.GetLocality().GetSubZone(), l.GetLoadBalancingWeight().GetValue(), len(l.GetLbEndpoints())))
	}
	if d := cmp.Diff([]string{"auth/authz-stable/9001 weight 50, 1 endpoints", "auth/authz-canary/9001 weight 50, 2 endpoints"}, got); d != "" {
		t.Errorf("ClusterLoadAssignment in the caches (-want +got):\n%s", d)
	}
}

// awaitReplicaState waits until the adapter reports the connection to the
// replica at addr in one of states.
func awaitReplicaState(t *testing.T, a *contour.ReplicatedAdapter, addr string, states ...connectivity.State) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, r := range a.Replicas() {
			if r.Address == addr && slices.Contains(states, r.State) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not in %v within 30s: %+v", addr, states, a.Replicas())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReplicatedAdapterNothingToSync: with no object at all a session
// opens no stream, yet its replica must be reachable and current, so the
// first Flush returns.
func TestReplicatedAdapterNothingToSync(t *testing.T) {
	r := newGatedReplica(t)
	r.start(nil)
	addr := r.address
	a, err := contour.NewReplicatedAdapter(t.Context(), nil,
		func(context.Context) ([]string, error) { return []string{addr}, nil },
		contour.WithDebounce(-1),
		contour.WithResolveInterval(10*time.Millisecond),
		contour.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := a.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if got := a.Replicas(); len(got) != 1 || !got[0].Primary || !got[0].Current || got[0].State != connectivity.Ready {
		t.Errorf("replicas %+v, want the one, Ready, current and primary", got)
	}
}
