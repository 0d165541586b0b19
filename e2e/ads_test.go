package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// adsMode is the ADS variant an adsWatcher speaks.
type adsMode string

const (
	// stateOfTheWorld is StreamAggregatedResources, what gRPC-Go's xDS
	// client and Envoy's default ADS configuration use.
	stateOfTheWorld adsMode = "sotw"
	// delta is DeltaAggregatedResources (incremental xDS), which Envoy
	// uses with api_type DELTA_GRPC. gRPC-Go v1.85 has no delta mode, so
	// the tests speak it with this watcher.
	delta adsMode = "delta"
)

// adsWatcher is a minimal ADS client: it subscribes to named resources of
// several types over one stream, ACKs every response it can decode (and
// NACKs the others), and keeps the latest resources. Its state is updated
// only after the ACK is sent, so when a wait on it returns, the server has
// been told the resources were accepted. It is what an Envoy does on the
// wire, without the data plane.
type adsWatcher struct {
	mode adsMode
	// subscriptions maps each type URL to the names subscribed to.
	subscriptions map[string][]string

	mu sync.Mutex
	// resources maps type URL → name → resource, for accepted responses.
	resources map[string]map[string]proto.Message
	// acked counts ACKs sent, by type URL.
	acked map[string]int
	// versions holds the last accepted version by type URL.
	versions map[string]string
	// received counts the resources received in accepted responses.
	received int
	// at is when the state last changed: just after an ACK was sent.
	at time.Time
	// changed is closed and replaced at each change.
	changed chan struct{}
	// err is why the stream ended; nil while it runs.
	err error
}

// watchADS opens an ADS stream of the given mode on conn as node and
// subscribes to subscriptions (type URL → names). The stream ends with the
// test (or when ctx ends).
func watchADS(ctx context.Context, tb testing.TB, conn *grpc.ClientConn, mode adsMode, node *corev3.Node, subscriptions map[string][]string) *adsWatcher {
	tb.Helper()
	w := &adsWatcher{
		mode:          mode,
		subscriptions: subscriptions,
		resources:     map[string]map[string]proto.Message{},
		acked:         map[string]int{},
		versions:      map[string]string{},
		changed:       make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(ctx)
	ads := discoveryv3.NewAggregatedDiscoveryServiceClient(conn)
	done := make(chan struct{})
	var err error
	switch mode {
	case stateOfTheWorld:
		var st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
		if st, err = ads.StreamAggregatedResources(ctx); err == nil {
			go func() { defer close(done); w.fail(w.runSotW(st, node)) }()
		}
	case delta:
		var st discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
		if st, err = ads.DeltaAggregatedResources(ctx); err == nil {
			go func() { defer close(done); w.fail(w.runDelta(st, node)) }()
		}
	}
	if err != nil {
		cancel()
		tb.Fatalf("opening %s ADS stream: %v", mode, err)
	}
	tb.Cleanup(func() {
		cancel()
		<-done
	})
	return w
}

// typeOrder is the order of the initial subscriptions: the order a client
// discovers them in.
var typeOrder = []string{resourcev3.ListenerType, resourcev3.ClusterType, resourcev3.EndpointType}

func (w *adsWatcher) subscribedTypes() []string {
	var out []string
	for _, t := range typeOrder {
		if _, ok := w.subscriptions[t]; ok {
			out = append(out, t)
		}
	}
	return out
}

func (w *adsWatcher) runSotW(st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient, node *corev3.Node) error {
	for i, typeURL := range w.subscribedTypes() {
		req := &discoveryv3.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: w.subscriptions[typeURL]}
		if i == 0 {
			req.Node = node
		}
		if err := st.Send(req); err != nil {
			return err
		}
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			return err
		}
		decoded, decodeErr := decodeAll(resp.GetTypeUrl(), resp.GetResources())
		ack := &discoveryv3.DiscoveryRequest{
			TypeUrl:       resp.GetTypeUrl(),
			ResourceNames: w.subscriptions[resp.GetTypeUrl()],
			ResponseNonce: resp.GetNonce(),
			VersionInfo:   resp.GetVersionInfo(),
		}
		if decodeErr != nil {
			ack.VersionInfo = w.lastVersion(resp.GetTypeUrl())
			ack.ErrorDetail = &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: decodeErr.Error()}
		}
		if err := st.Send(ack); err != nil {
			return err
		}
		if decodeErr != nil {
			return fmt.Errorf("NACKed %s version %s: %w", resp.GetTypeUrl(), resp.GetVersionInfo(), decodeErr)
		}
		// Listeners and Clusters are sent whole in State of the World: a
		// name left out is gone. ClusterLoadAssignments are sent only when
		// they change.
		w.update(resp.GetTypeUrl(), decoded, nil, resp.GetTypeUrl() != resourcev3.EndpointType, resp.GetVersionInfo())
	}
}

func (w *adsWatcher) runDelta(st discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient, node *corev3.Node) error {
	for i, typeURL := range w.subscribedTypes() {
		req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: typeURL, ResourceNamesSubscribe: w.subscriptions[typeURL]}
		if i == 0 {
			req.Node = node
		}
		if err := st.Send(req); err != nil {
			return err
		}
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			return err
		}
		anys := make([]*anypb.Any, len(resp.GetResources()))
		for i, r := range resp.GetResources() {
			anys[i] = r.GetResource()
		}
		decoded, decodeErr := decodeAll(resp.GetTypeUrl(), anys)
		ack := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce()}
		if decodeErr != nil {
			ack.ErrorDetail = &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: decodeErr.Error()}
		}
		if err := st.Send(ack); err != nil {
			return err
		}
		if decodeErr != nil {
			return fmt.Errorf("NACKed %s version %s: %w", resp.GetTypeUrl(), resp.GetSystemVersionInfo(), decodeErr)
		}
		w.update(resp.GetTypeUrl(), decoded, resp.GetRemovedResources(), false, resp.GetSystemVersionInfo())
	}
}

// decodeAll unpacks resources of typeURL, keyed by name, and validates
// them as a client would.
func decodeAll(typeURL string, resources []*anypb.Any) (map[string]proto.Message, error) {
	out := make(map[string]proto.Message, len(resources))
	for _, a := range resources {
		if a.GetTypeUrl() != typeURL {
			return nil, fmt.Errorf("a %s in a %s response", a.GetTypeUrl(), typeURL)
		}
		m, err := a.UnmarshalNew()
		if err != nil {
			return nil, err
		}
		if v, ok := m.(interface{ ValidateAll() error }); ok {
			if err := v.ValidateAll(); err != nil {
				return nil, err
			}
		}
		name := resourceName(m)
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s %q twice in one response", typeURL, name)
		}
		out[name] = m
	}
	return out, nil
}

// resourceName is the name xDS knows a resource by.
func resourceName(m proto.Message) string {
	switch r := m.(type) {
	case *listenerv3.Listener:
		return r.GetName()
	case *clusterv3.Cluster:
		return r.GetName()
	case *endpointv3.ClusterLoadAssignment:
		return r.GetClusterName()
	}
	return ""
}

// lastVersion is the last version accepted for typeURL: what a SotW NACK
// reports as still in use.
func (w *adsWatcher) lastVersion(typeURL string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.versions[typeURL]
}

func (w *adsWatcher) update(typeURL string, changed map[string]proto.Message, removed []string, replace bool, version string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	have := w.resources[typeURL]
	if have == nil || replace {
		have = map[string]proto.Message{}
		w.resources[typeURL] = have
	}
	maps.Copy(have, changed)
	w.received += len(changed)
	for _, name := range removed {
		delete(have, name)
	}
	w.acked[typeURL]++
	w.versions[typeURL] = version
	w.at = time.Now()
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *adsWatcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(err, context.Canceled) {
		err = fmt.Errorf("%s ADS stream closed: %w", w.mode, err)
	}
	w.err = err
	close(w.changed)
	w.changed = make(chan struct{})
}

// resourcesReceived returns how many resources the watcher has received
// in the responses it accepted, the repeats of unchanged ones included.
func (w *adsWatcher) resourcesReceived() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.received
}

// adsState is a watcher's accepted resources at one moment.
type adsState struct {
	resources map[string]map[string]proto.Message
	acked     map[string]int
	// at is when this state was reached, just after its last ACK was sent.
	at time.Time
}

func (s adsState) get(typeURL, name string) proto.Message { return s.resources[typeURL][name] }

// waitFor waits until ready holds for the watcher's state, and returns
// that state. It fails the test at timeout or when the stream ends.
func (w *adsWatcher) waitFor(tb testing.TB, what string, timeout time.Duration, ready func(adsState) bool) adsState {
	tb.Helper()
	s, err := w.await(timeout, ready, true)
	if err != nil {
		tb.Fatalf("%s ADS watcher, waiting for %s: %v", w.mode, what, err)
	}
	return s
}

// await is waitFor without the test: it returns an error at timeout or
// when the stream has ended. Without snapshot, the state it returns holds
// only the time it was reached: copying a large state is left to callers
// that need it.
func (w *adsWatcher) await(timeout time.Duration, ready func(adsState) bool, snapshot bool) (adsState, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		w.mu.Lock()
		s := adsState{resources: w.resources, acked: w.acked, at: w.at}
		ok := ready(s)
		if !snapshot {
			s.resources, s.acked = nil, nil
		}
		if snapshot && (ok || w.err != nil) {
			// A copy: the watcher goes on changing its own maps.
			s.resources = make(map[string]map[string]proto.Message, len(w.resources))
			for t, m := range w.resources {
				s.resources[t] = maps.Clone(m)
			}
			s.acked = maps.Clone(w.acked)
		}
		changed, err := w.changed, w.err
		w.mu.Unlock()
		if ok {
			return s, nil
		}
		if err != nil {
			return s, err
		}
		select {
		case <-changed:
		case <-timer.C:
			w.mu.Lock()
			held := describe(w.resources, w.acked)
			w.mu.Unlock()
			return s, fmt.Errorf("not reached within %v; holding %s", timeout, held)
		}
	}
}

// describe summarises a watcher's state for a failure message. Called with
// the watcher's lock held.
func describe(resources map[string]map[string]proto.Message, acked map[string]int) string {
	out := ""
	for _, t := range slices.Sorted(maps.Keys(resources)) {
		out += fmt.Sprintf("[%s: %d resources, %d ACKs] ", t, len(resources[t]), acked[t])
	}
	return out
}
