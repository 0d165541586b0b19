package contour_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/client"
	"github.com/tributary-dev/tributary/client/contour"
)

// informerHandler is what both adapters offer the informers and their host.
type informerHandler interface {
	OnAdd(obj any, isInInitialList bool)
	OnUpdate(oldObj, newObj any)
	Flush(ctx context.Context) error
	Close()
}

// TestAdaptersSendALoneChangeAtOnce runs both adapters with a debounce of
// an hour against a real server. A change after a quiet period reaches the
// caches with no Flush (under a rule that made every change wait for the
// debounce, it would not arrive for an hour); the changes that follow it
// within the hour are held, and the next Flush sends them in one batch;
// Close does not wait for the automatic flush armed for them.
func TestAdaptersSendALoneChangeAtOnce(t *testing.T) {
	quiet := contour.WithSyncOptions(client.WithLogger(slog.New(slog.DiscardHandler)))
	adapters := map[string]func(t *testing.T, sink *caches) informerHandler{
		"Adapter": func(t *testing.T, sink *caches) informerHandler {
			return contour.NewAdapter(t.Context(), client.New(dial(t)), nil,
				contour.WithClusterSink(sink), contour.WithEndpointSink(sink), contour.WithStatusWriter(sink),
				contour.WithDebounce(time.Hour), quiet)
		},
		"ReplicatedAdapter": func(t *testing.T, sink *caches) informerHandler {
			replica := newGatedReplica(t)
			replica.start(nil)
			a, err := contour.NewReplicatedAdapter(t.Context(), nil,
				func(context.Context) ([]string, error) { return []string{replica.address}, nil },
				contour.WithClusterSink(sink), contour.WithEndpointSink(sink), contour.WithStatusWriter(sink),
				contour.WithDebounce(time.Hour), quiet, contour.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			return a
		},
	}
	for name, newAdapter := range adapters {
		t.Run(name, func(t *testing.T) {
			sink := newCaches()
			a := newAdapter(t, sink)
			defer a.Close()
			flush := func(when string) {
				t.Helper()
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				if err := a.Flush(ctx); err != nil {
					t.Fatalf("%s: Flush: %v", when, err)
				}
			}
			endpoints := func() int {
				return len(sink.state().clas[clusterName].GetEndpoints()[0].GetLbEndpoints())
			}

			es := extAuthz(1, 1, 0)
			es.Spec.Services = es.Spec.Services[:1]
			es.Spec.UpstreamValidation = nil
			es.Spec.Protocol = new("h2c")
			pods := []pod{{ip: "10.244.1.17", ready: true}}
			slice := func() any { return endpointSlice("authz-stable-7x2kq", "authz-stable", pods...) }
			a.OnAdd(es, true)
			a.OnAdd(authzService("authz-stable"), true)
			a.OnAdd(slice(), true)
			flush("initial list")
			if calls := sink.takeCalls(); len(calls) != 3 {
				t.Fatalf("initial list: calls %q, want a Cluster, a ClusterLoadAssignment and a status", calls)
			}

			old := slice()
			pods = append(pods, pod{ip: "10.244.1.18", ready: true})
			a.OnUpdate(old, slice())
			wantCalls := []string{"endpoints changed=[extension/auth/ext-authz] removed=[]", "status auth/ext-authz True"}
			if d := cmp.Diff(wantCalls, sink.awaitCalls(t, 2)); d != "" {
				t.Errorf("a lone EndpointSlice update, with no Flush (-want +got):\n%s", d)
			}
			if got := endpoints(); got != 2 {
				t.Errorf("a lone EndpointSlice update: %d endpoints, want 2", got)
			}

			for _, ip := range []string{"10.244.1.19", "10.244.1.20"} {
				old := slice()
				pods = append(pods, pod{ip: ip, ready: true})
				a.OnUpdate(old, slice())
			}
			flush("the updates after it")
			if d := cmp.Diff(wantCalls, sink.takeCalls()); d != "" {
				t.Errorf("the updates within the hour, sent by Flush (-want +got):\n%s", d)
			}
			if got := endpoints(); got != 4 {
				t.Errorf("the updates within the hour: %d endpoints, want 4", got)
			}
		})
	}
}
