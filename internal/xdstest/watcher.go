package xdstest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Mode is the ADS variant a Watcher speaks.
type Mode string

const (
	// SotW is State of the World (StreamAggregatedResources), what gRPC-Go's
	// xDS client and Envoy's default ADS configuration use.
	SotW Mode = "sotw"
	// Delta is incremental xDS (DeltaAggregatedResources), which Envoy uses
	// with api_type DELTA_GRPC. gRPC-Go v1.85 has no delta mode, so tests
	// speak it with a Watcher.
	Delta Mode = "delta"
)

// Watcher is a minimal ADS client: it subscribes to named resources of
// several types over one stream, ACKs every response whose resources all
// decode and pass ValidateAll (and NACKs any other, which ends it), and
// keeps the latest accepted resources. Its state changes only after the ACK
// is sent, so when a wait on it returns, the server has been told the
// resources were accepted. It is what an Envoy does on the wire, without
// the data plane.
type Watcher struct {
	mode Mode
	// keepEncoded keeps accepted resources as the Any they arrived in
	// (KeepEncoded); undecoded does too, without decoding them first
	// (Undecoded).
	keepEncoded, undecoded bool
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

// WatchOption changes how a Watcher keeps what it accepts.
type WatchOption func(*Watcher)

// KeepEncoded makes the Watcher keep each accepted resource as the
// *anypb.Any it arrived in rather than decoded; State.Resources then holds
// *anypb.Any values, which a check decodes with UnmarshalNew. The Watcher
// still decodes and validates every resource before it ACKs, as a client
// does: it only holds less. A ClusterLoadAssignment of 20 endpoints takes
// about 8 KiB decoded and 0.6 KiB encoded, which decides whether a
// benchmark's hundred watchers of 10,000 of them fit in memory.
func KeepEncoded() WatchOption { return func(w *Watcher) { w.keepEncoded = true } }

// Undecoded makes a Delta Watcher a load generator's client: it ACKs every
// response without decoding or validating its resources, and keeps each as
// the *anypb.Any it arrived in, named as the response names it. What a
// resource costs it is then about what gRPC's receive costs, where decoding
// and validating a ClusterLoadAssignment of 200 endpoints takes about
// 0.4 ms: a thousand watchers in one process could not follow 50 changes a
// second. State of the World has no such mode: its responses name their
// resources only inside them.
func Undecoded() WatchOption { return func(w *Watcher) { w.undecoded = true } }

// Watch opens an ADS stream of the given mode on conn as node and
// subscribes to subscriptions (type URL → names; no names is every
// resource of the type). The stream ends, and its goroutine with it, when
// the test ends or ctx does.
func Watch(ctx context.Context, tb testing.TB, conn grpc.ClientConnInterface, mode Mode, node *corev3.Node, subscriptions map[string][]string, opts ...WatchOption) *Watcher {
	tb.Helper()
	w := &Watcher{
		mode:          mode,
		subscriptions: subscriptions,
		resources:     map[string]map[string]proto.Message{},
		acked:         map[string]int{},
		versions:      map[string]string{},
		changed:       make(chan struct{}),
	}
	for _, opt := range opts {
		opt(w)
	}
	if w.undecoded && mode != Delta {
		tb.Fatalf("an undecoded %s watcher: only Delta responses name their resources", mode)
	}
	ctx, cancel := context.WithCancel(ctx)
	ads := discoveryv3.NewAggregatedDiscoveryServiceClient(conn)
	done := make(chan struct{})
	var err error
	switch mode {
	case SotW:
		var st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
		if st, err = ads.StreamAggregatedResources(ctx); err == nil {
			go func() { defer close(done); w.fail(w.runSotW(st, node)) }()
		}
	case Delta:
		var st discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient
		if st, err = ads.DeltaAggregatedResources(ctx); err == nil {
			go func() { defer close(done); w.fail(w.runDelta(st, node)) }()
		}
	default:
		err = fmt.Errorf("unknown mode %q", mode)
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

// Mode is the ADS variant w speaks.
func (w *Watcher) Mode() Mode { return w.mode }

// typeOrder is the order of the initial subscriptions: the order a client
// discovers them in.
var typeOrder = []string{resourcev3.ListenerType, resourcev3.ClusterType, resourcev3.EndpointType}

func (w *Watcher) subscribedTypes() []string {
	var out []string
	for _, t := range typeOrder {
		if _, ok := w.subscriptions[t]; ok {
			out = append(out, t)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(w.subscriptions)) {
		if !slices.Contains(typeOrder, t) {
			out = append(out, t)
		}
	}
	return out
}

func (w *Watcher) runSotW(st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient, node *corev3.Node) error {
	initial := initialRequests(w, node, func(node *corev3.Node, typeURL string, names []string) *discoveryv3.DiscoveryRequest {
		return &discoveryv3.DiscoveryRequest{Node: node, TypeUrl: typeURL, ResourceNames: names}
	})
	return exchange(st, initial, func(resp *discoveryv3.DiscoveryResponse) (*discoveryv3.DiscoveryRequest, func(), error) {
		typeURL := resp.GetTypeUrl()
		decoded, err := decodeAll(typeURL, resp.GetResources(), w.keepEncoded)
		ack := &discoveryv3.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: w.subscriptions[typeURL], ResponseNonce: resp.GetNonce(), VersionInfo: resp.GetVersionInfo()}
		if err != nil {
			ack.VersionInfo = w.lastVersion(typeURL)
			ack.ErrorDetail = &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: err.Error()}
			return ack, nil, fmt.Errorf("NACKed %s version %s: %w", typeURL, resp.GetVersionInfo(), err)
		}
		// State of the World sends Listeners and Clusters whole: a name
		// left out is gone. ClusterLoadAssignments are sent only when they
		// change.
		return ack, func() { w.update(typeURL, decoded, nil, typeURL != resourcev3.EndpointType, resp.GetVersionInfo()) }, nil
	})
}

func (w *Watcher) runDelta(st discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient, node *corev3.Node) error {
	initial := initialRequests(w, node, func(node *corev3.Node, typeURL string, names []string) *discoveryv3.DeltaDiscoveryRequest {
		return &discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: typeURL, ResourceNamesSubscribe: names}
	})
	return exchange(st, initial, func(resp *discoveryv3.DeltaDiscoveryResponse) (*discoveryv3.DeltaDiscoveryRequest, func(), error) {
		typeURL := resp.GetTypeUrl()
		var decoded map[string]proto.Message
		var err error
		if w.undecoded {
			decoded, err = named(typeURL, resp.GetResources())
		} else {
			anys := make([]*anypb.Any, len(resp.GetResources()))
			for i, r := range resp.GetResources() {
				anys[i] = r.GetResource()
			}
			decoded, err = decodeAll(typeURL, anys, w.keepEncoded)
		}
		ack := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: typeURL, ResponseNonce: resp.GetNonce()}
		if err != nil {
			ack.ErrorDetail = &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: err.Error()}
			return ack, nil, fmt.Errorf("NACKed %s version %s: %w", typeURL, resp.GetSystemVersionInfo(), err)
		}
		return ack, func() { w.update(typeURL, decoded, resp.GetRemovedResources(), false, resp.GetSystemVersionInfo()) }, nil
	})
}

// initialRequests builds the initial subscriptions, one request per type;
// only the first names the node, as a client does.
func initialRequests[Req any](w *Watcher, node *corev3.Node, build func(node *corev3.Node, typeURL string, names []string) *Req) []*Req {
	var out []*Req
	for _, typeURL := range w.subscribedTypes() {
		out = append(out, build(node, typeURL, w.subscriptions[typeURL]))
		node = nil
	}
	return out
}

// exchange runs the client's side of an ADS stream of either variant: it
// sends initial, then answers each response with the ACK or NACK that
// answer builds. After an ACK is sent it calls accept, so the state changes
// only once the server has been told; after a NACK it returns refusal.
func exchange[Req, Resp any](st grpc.BidiStreamingClient[Req, Resp], initial []*Req, answer func(*Resp) (ack *Req, accept func(), refusal error)) error {
	for _, req := range initial {
		if err := st.Send(req); err != nil {
			return err
		}
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			return err
		}
		ack, accept, refusal := answer(resp)
		if err := st.Send(ack); err != nil {
			return err
		}
		if refusal != nil {
			return refusal
		}
		accept()
	}
}

// decodeAll unpacks resources of typeURL, keyed by name, and validates
// them as a client would. With keepEncoded it returns the Anys themselves,
// once decoded and validated.
func decodeAll(typeURL string, resources []*anypb.Any, keepEncoded bool) (map[string]proto.Message, error) {
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
		name := cachev3.GetResourceName(m)
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s %q twice in one response", typeURL, name)
		}
		out[name] = m
		if keepEncoded {
			out[name] = a
		}
	}
	return out, nil
}

// named keys a Delta response's resources by the names it gives them,
// undecoded, checking only their type.
func named(typeURL string, resources []*discoveryv3.Resource) (map[string]proto.Message, error) {
	out := make(map[string]proto.Message, len(resources))
	for _, r := range resources {
		if t := r.GetResource().GetTypeUrl(); t != typeURL {
			return nil, fmt.Errorf("a %s in a %s response", t, typeURL)
		}
		if _, dup := out[r.GetName()]; dup {
			return nil, fmt.Errorf("%s %q twice in one response", typeURL, r.GetName())
		}
		out[r.GetName()] = r.GetResource()
	}
	return out, nil
}

// lastVersion is the last version accepted for typeURL: what a SotW NACK
// reports as still in use.
func (w *Watcher) lastVersion(typeURL string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.versions[typeURL]
}

func (w *Watcher) update(typeURL string, changed map[string]proto.Message, removed []string, replace bool, version string) {
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

func (w *Watcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(err, context.Canceled) {
		err = fmt.Errorf("%s ADS stream closed: %w", w.mode, err)
	}
	w.err = err
	close(w.changed)
	w.changed = make(chan struct{})
}

// Received returns how many resources the watcher has received in the
// responses it accepted, the repeats of unchanged ones included.
func (w *Watcher) Received() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.received
}

// State is a watcher's accepted resources at one moment.
type State struct {
	// Resources maps type URL → name → resource.
	Resources map[string]map[string]proto.Message
	// Acked counts the ACKs sent, by type URL.
	Acked map[string]int
	// At is when this state was reached, just after its last ACK was sent.
	At time.Time
}

// Get returns the resource of typeURL named name, or nil.
func (s State) Get(typeURL, name string) proto.Message { return s.Resources[typeURL][name] }

// State returns a copy of the current state, and why the stream ended
// (nil while it runs).
func (w *Watcher) State() (State, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.snapshot(), w.err
}

// snapshot copies the state: the watcher goes on changing its own maps.
// Called with w.mu held.
func (w *Watcher) snapshot() State {
	s := State{Resources: make(map[string]map[string]proto.Message, len(w.resources)), Acked: maps.Clone(w.acked), At: w.at}
	for t, m := range w.resources {
		s.Resources[t] = maps.Clone(m)
	}
	return s
}

// WaitFor waits until ready holds for the watcher's state, and returns a
// copy of that state. It fails the test at timeout or when the stream
// ends. ready sees the live state under the watcher's lock: it must not
// keep it or block.
func (w *Watcher) WaitFor(tb testing.TB, what string, timeout time.Duration, ready func(State) bool) State {
	tb.Helper()
	s, err := w.Await(timeout, ready, true)
	if err != nil {
		tb.Fatalf("%s ADS watcher, waiting for %s: %v", w.mode, what, err)
	}
	return s
}

// Await is WaitFor without the test: it returns an error at timeout or
// when the stream has ended. Without snapshot, the state it returns holds
// only the time it was reached, for callers that cannot afford to copy a
// large state.
func (w *Watcher) Await(timeout time.Duration, ready func(State) bool, snapshot bool) (State, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		w.mu.Lock()
		live := State{Resources: w.resources, Acked: w.acked, At: w.at}
		ok := ready(live)
		s := State{At: w.at}
		if snapshot && (ok || w.err != nil) {
			s = w.snapshot()
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
			held := w.describe()
			w.mu.Unlock()
			return s, fmt.Errorf("not reached within %v; holding %s", timeout, held)
		}
	}
}

// describe summarises the state for a failure message. Called with w.mu
// held.
func (w *Watcher) describe() string {
	out := ""
	for _, t := range slices.Sorted(maps.Keys(w.resources)) {
		out += fmt.Sprintf("[%s: %d resources, %d ACKs] ", t, len(w.resources[t]), w.acked[t])
	}
	return out
}
