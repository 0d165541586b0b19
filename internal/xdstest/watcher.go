package xdstest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
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
