package contour_test

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/google/go-cmp/cmp"
	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/testing/protocmp"
	discovery_v1 "k8s.io/api/discovery/v1"
	meta_v1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tributary-dev/tributary/client"
	"github.com/tributary-dev/tributary/client/contour"
	"github.com/tributary-dev/tributary/internal/grpctest"
	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/server"
)

// tombstone is a tombstone of a kind the adapter cannot guess, for
// contour.WithTombstoneUnwrapper.
type tombstone struct{ last runtime.Object }

// TestAdapterFlushesByItself: once the first Flush is done, changes reach
// the caches with no Flush, a refused change is reported to the flush error handler,
// and a tombstone hook is used for deletions.
func TestAdapterFlushesByItself(t *testing.T) {
	conn := dial(t)
	sink := newCaches()
	flushErrs := make(chan error, 10)
	a := contour.NewAdapter(t.Context(), client.New(conn), &contour.Config{ConnectTimeout: "1s"},
		contour.WithClusterSink(sink), contour.WithEndpointSink(sink), contour.WithStatusWriter(sink),
		contour.WithDebounce(time.Millisecond),
		contour.WithFlushErrorHandler(func(err error) { flushErrs <- err }),
		contour.WithTombstoneUnwrapper(func(obj any) (any, bool) {
			ts, ok := obj.(*tombstone)
			if !ok {
				return nil, false
			}
			return ts.last, true
		}),
		contour.WithSyncOptions(client.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))),
	)
	defer a.Close()

	es := extAuthz(1, 1, 0)
	es.Spec.Services = es.Spec.Services[:1]
	es.Spec.UpstreamValidation = nil
	es.Spec.Protocol = new("h2c")
	slice := endpointSlice("authz-stable-7x2kq", "authz-stable", pod{ip: "10.244.1.17", ready: true})
	a.OnAdd(es, true)
	a.OnAdd(authzService("authz-stable"), true)
	a.OnAdd(slice, true)
	if err := a.Flush(t.Context()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if calls := sink.takeCalls(); len(calls) != 3 {
		t.Fatalf("first Flush made calls %q, want a Cluster, a ClusterLoadAssignment and a status", calls)
	}
	if got := sink.state().clusters[clusterName].GetConnectTimeout().AsDuration(); got != time.Second {
		t.Errorf("connect timeout %v, want the configured 1s", got)
	}

	a.OnUpdate(slice, endpointSlice("authz-stable-7x2kq", "authz-stable", pod{ip: "10.244.1.17", ready: true}, pod{ip: "10.244.1.18", ready: true}))
	// One more ready endpoint: the ClusterLoadAssignment, and the status's
	// availability.
	if d := cmp.Diff([]string{"endpoints changed=[extension/auth/ext-authz] removed=[]", "status auth/ext-authz True"}, sink.awaitCalls(t, 2)); d != "" {
		t.Errorf("after an EndpointSlice update (-want +got):\n%s", d)
	}
	if got := len(sink.state().clas[clusterName].GetEndpoints()[0].GetLbEndpoints()); got != 2 {
		t.Errorf("%d endpoints, want 2", got)
	}

	a.OnAdd(&contour_v1alpha1.ExtensionService{ObjectMeta: meta_v1.ObjectMeta{Namespace: "auth"}}, false)
	select {
	case err := <-flushErrs:
		var rejected *client.BatchRejectedError
		if !errors.As(err, &rejected) || !strings.Contains(rejected.Message, "metadata.name is required") {
			t.Errorf("the flush error handler got %v, want a rejected batch naming metadata.name", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no flush error within 30s")
	}

	a.OnDelete(&tombstone{last: es})
	if d := cmp.Diff([]string{
		"clusters changed=[] removed=[extension/auth/ext-authz]",
		"endpoints changed=[] removed=[extension/auth/ext-authz]",
		"status auth/ext-authz removed",
	}, sink.awaitCalls(t, 3)); d != "" {
		t.Errorf("after the ExtensionService's tombstone (-want +got):\n%s", d)
	}
}

// TestAdapterSendsOnlyNamedObjects: of the cluster's Services,
// EndpointSlices and Secrets, the server's session holds only those an
// ExtensionService names or has named, until they are deleted. An
// EndpointSlice without a service-name label, which the server would
// ignore, never reaches it.
func TestAdapterSendsOnlyNamedObjects(t *testing.T) {
	m := metrics.New()
	conn := grpctest.Bufconn(t, server.NewGRPCServer(server.Options{Logger: slog.New(slog.DiscardHandler), Metrics: m}))
	sink := newCaches()
	a := flushedByHand(t, conn, sink)
	step := func(when string, want map[string]float64) {
		t.Helper()
		if err := a.Flush(t.Context()); err != nil {
			t.Fatalf("%s: Flush: %v", when, err)
		}
		if d := cmp.Diff(want, sessionObjects(t, m)); d != "" {
			t.Errorf("%s: objects the server holds (-want +got):\n%s", when, d)
		}
	}
	held := func(es, services, slices, secrets float64) map[string]float64 {
		return map[string]float64{"ExtensionService": es, "Service": services, "EndpointSlice": slices, "Secret": secrets, "TLSCertificateDelegation": 0}
	}

	es := extAuthz(1, 1, 0)
	es.Spec.Services = es.Spec.Services[:1] // authz-stable
	unlabelled := endpointSlice("manual", "")
	delete(unlabelled.Labels, discovery_v1.LabelServiceName)
	webTLS := caSecret(newCA(t, "web"))
	webTLS.Name = "web-tls"
	for _, obj := range []runtime.Object{
		es,
		authzService("authz-stable"), authzService("web"),
		endpointSlice("authz-stable-1", "authz-stable", pod{ip: "10.244.1.17", ready: true}),
		endpointSlice("web-1", "web", pod{ip: "10.244.2.9", ready: true}),
		unlabelled,
		caSecret(newCA(t, "authz")), webTLS,
	} {
		a.OnAdd(obj, true)
	}
	step("initial list", held(1, 1, 1, 1))

	both := extAuthz(2, 1, 0)
	both.Spec.Services = []contour_v1alpha1.ExtensionServiceTarget{{Name: "authz-stable", Port: 9001, Weight: 3}, {Name: "web", Port: 9001, Weight: 1}}
	a.OnUpdate(es, both)
	step("web named too", held(1, 2, 2, 1))
	want := wantCLA(locality{"authz-stable", 3, []string{"10.244.1.17"}}, locality{"web", 1, []string{"10.244.2.9"}})
	if d := cmp.Diff(want, sink.state().clas[clusterName], protocmp.Transform()); d != "" {
		t.Errorf("ClusterLoadAssignment with web named (-want +got):\n%s", d)
	}

	webOnly := extAuthz(3, 1, 0)
	webOnly.Spec.Services = []contour_v1alpha1.ExtensionServiceTarget{{Name: "web", Port: 9001}}
	webOnly.Spec.UpstreamValidation = nil
	webOnly.Spec.Protocol = new("h2c")
	a.OnUpdate(both, webOnly)
	step("only web named, and no CA", held(1, 2, 2, 1))

	a.OnDelete(webOnly)
	step("ExtensionService deleted", held(0, 2, 2, 1))

	a.OnDelete(authzService("authz-stable"))
	a.OnDelete(endpointSlice("authz-stable-1", "authz-stable"))
	a.OnDelete(webTLS)
	step("a Service once named, its slice, and a Secret never named deleted", held(0, 1, 1, 1))
}

// sessionObjects reads tributary_sync_session_objects by kind.
func sessionObjects(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "tributary_sync_session_objects" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "kind" {
					out[l.GetValue()] = s.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

// TestAdapterAfterRejectedBatch: when the batch that retargets an
// ExtensionService is refused (here for a Service the server finds
// malformed), the session keeps the ExtensionService as it was, and the
// Services it still targets go on getting their endpoint changes; once the
// Service is repaired and the ExtensionService changes again, the objects
// the refused batch carried are sent again.
func TestAdapterAfterRejectedBatch(t *testing.T) {
	conn := dial(t)
	sink := newCaches()
	a := flushedByHand(t, conn, sink)
	h2c := func(generation int64, target string) *contour_v1alpha1.ExtensionService {
		es := extAuthz(generation, 1, 0)
		es.Spec.Services = []contour_v1alpha1.ExtensionServiceTarget{{Name: target, Port: 9001}}
		es.Spec.UpstreamValidation = nil
		es.Spec.Protocol = new("h2c")
		return es
	}
	endpoints := func(when, service string, ips ...string) {
		t.Helper()
		if d := cmp.Diff(wantCLA(locality{service, 1, ips}), sink.state().clas[clusterName], protocmp.Transform()); d != "" {
			t.Errorf("%s: ClusterLoadAssignment (-want +got):\n%s", when, d)
		}
	}

	stable := endpointSlice("authz-stable-1", "authz-stable", pod{ip: "10.244.1.17", ready: true})
	broken := authzService("web")
	broken.Spec.Ports[0].Port = 0
	for _, obj := range []runtime.Object{
		h2c(1, "authz-stable"), authzService("authz-stable"), stable,
		broken, endpointSlice("web-1", "web", pod{ip: "10.244.2.9", ready: true}),
	} {
		a.OnAdd(obj, true)
	}
	if err := a.Flush(t.Context()); err != nil {
		t.Fatalf("initial list: %v", err)
	}
	endpoints("initial list", "authz-stable", "10.244.1.17")

	a.OnUpdate(h2c(1, "authz-stable"), h2c(2, "web"))
	var rejected *client.BatchRejectedError
	if err := a.Flush(t.Context()); !errors.As(err, &rejected) || !strings.Contains(rejected.Message, "spec.ports[0].port") {
		t.Fatalf("retarget to the malformed Service: %v, want a rejected batch naming spec.ports[0].port", err)
	}

	moved := endpointSlice("authz-stable-1", "authz-stable", pod{ip: "10.244.1.18", ready: true})
	a.OnUpdate(stable, moved)
	if err := a.Flush(t.Context()); err != nil {
		t.Fatalf("endpoint change after the rejection: %v", err)
	}
	endpoints("endpoint change after the rejection", "authz-stable", "10.244.1.18")

	a.OnUpdate(broken, authzService("web"))
	a.OnUpdate(h2c(2, "web"), h2c(3, "web"))
	if err := a.Flush(t.Context()); err != nil {
		t.Fatalf("retarget again after the repair: %v", err)
	}
	endpoints("retarget again after the repair", "web", "10.244.2.9")
}

// flushedByHand returns an Adapter with default settings over conn that
// sends only on Flush, delivering to sink (when not nil), and closed when
// the test ends.
func flushedByHand(tb testing.TB, conn *grpc.ClientConn, sink *caches) *contour.Adapter {
	opts := []contour.AdapterOption{
		contour.WithDebounce(-1),
		contour.WithSyncOptions(client.WithLogger(slog.New(slog.DiscardHandler))),
	}
	if sink != nil {
		opts = append(opts, contour.WithClusterSink(sink), contour.WithEndpointSink(sink), contour.WithStatusWriter(sink))
	}
	a := contour.NewAdapter(tb.Context(), client.New(conn), nil, opts...)
	tb.Cleanup(a.Close)
	return a
}
