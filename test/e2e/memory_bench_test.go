package e2e

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/workload"
)

// The size of BenchmarkPublishedSessionMemory's session: the issue's
// N=10000, M=100, two million endpoints.
const (
	memoryExtensionServices = 10000
	memoryEndpoints         = 100
)

// BenchmarkPublishedSessionMemory measures what a Sync session costs the
// server per endpoint, and how much publishing it over xDS adds: two
// tributary serve processes in turn load the standard workload of 10,000
// ExtensionServices with 100 endpoints per Service (two million endpoints)
// through one Sync session, the first without an xDS node group and the
// second publishing to one (no xDS client is connected). For each it
// reports the growth of the server's Go heap in use (session- and
// published-heap-bytes/endpoint) and of its resident memory (-rss-), from
// before the session opened to once it is loaded, and publishing-adds-%,
// the heap's growth with publishing over that without, less 100.
//
// The first server then sees every EndpointSlice change once, an endpoint
// appended to each as the EndpointSlice controller appends them, and
// reports its growth from before the session opened again
// (changed-session-heap-bytes/endpoint): a session whose slices have all
// changed holds each one's parsed endpoints in its slice cache, which a
// freshly loaded session has not filled. That is a session's whole
// footprint: the input it holds, its output's versions and the cache.
//
// Nothing outside the server can make it collect its garbage, so it runs
// with GOGC=10: the heap in use then exceeds the live heap by at most a
// tenth, where with the default it could be anything up to double. The
// resident sizes are those of that setting, smaller than in production.
func BenchmarkPublishedSessionMemory(b *testing.B) {
	endpoints := float64(2 * memoryExtensionServices * memoryEndpoints)
	var session, changed, published loadedMemory
	for b.Loop() {
		loaded, afterChanges := loadedSessionMemory(b, "")
		session.add(loaded)
		changed.add(afterChanges)
		loaded, _ = loadedSessionMemory(b, benchNodeGroup)
		published.add(loaded)
	}
	b.StopTimer()
	b.ReportMetric(session.heap/float64(b.N)/endpoints, "session-heap-bytes/endpoint")
	b.ReportMetric(changed.heap/float64(b.N)/endpoints, "changed-session-heap-bytes/endpoint")
	b.ReportMetric(published.heap/float64(b.N)/endpoints, "published-heap-bytes/endpoint")
	b.ReportMetric(session.rss/float64(b.N)/endpoints, "session-rss-bytes/endpoint")
	b.ReportMetric(published.rss/float64(b.N)/endpoints, "published-rss-bytes/endpoint")
	b.ReportMetric(100*published.heap/session.heap-100, "publishing-adds-%")
}

// loadedMemory is a server's growth in memory from loading a session, in
// bytes, summed over runs.
type loadedMemory struct{ heap, rss float64 }

func (m *loadedMemory) add(o loadedMemory) {
	m.heap += o.heap
	m.rss += o.rss
}

// loadedSessionMemory starts a server, loads the workload into a Sync
// session that publishes to nodeGroup (nothing when empty), and returns
// how much the server grew; then, without publishing, it changes every
// EndpointSlice once (see BenchmarkPublishedSessionMemory) and returns the
// growth again as changed. The server and the session end before it
// returns, so that the next run starts from a quiet machine and this
// process keeps nothing of them.
func loadedSessionMemory(b *testing.B, nodeGroup string) (loaded, changed loadedMemory) {
	b.Helper()
	srv := startTributaryWithMetrics(b, "GOGC=10")
	defer srv.process.Stop(5 * time.Second)
	rss, heap := srv.memory(b)
	growth := func() loadedMemory {
		nowRSS, nowHeap := srv.memory(b)
		return loadedMemory{heap: float64(nowHeap) - float64(heap), rss: float64(nowRSS) - float64(rss)}
	}

	conn := dialSync(b, srv.grpcAddress)
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A session of its own rather than openSync's, which the test's
	// cleanup would keep (and its two million endpoints with it) until
	// the benchmark ends.
	s := client.New(conn).Sync(ctx, &tributaryv1.Settings{}, client.WithXDSPublishing(nodeGroup, false),
		client.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	defer s.Close()
	objs := loadWorkload(b, s, memoryExtensionServices, memoryEndpoints)
	loaded = growth()
	if nodeGroup == "" {
		changeEverySlice(b, s, objs.endpointSlices)
		changed = growth()
	}
	s.Close() // before the server stops, so the session logs no broken stream
	return loaded, changed
}

// changeEverySlice upserts every one of slices again with one more ready
// endpoint at its end, at an address no slice had, 50 slices a batch: a
// session translates a batch that touches a hundred ExtensionServices or
// more on every CPU, without its slice cache (the way it loaded), and a
// smaller one, as changes usually come, with it.
func changeEverySlice(b *testing.B, s *client.SyncSession, slices []*tributaryv1.KubernetesObject) {
	b.Helper()
	const perBatch = 50
	next := uint32(2 * memoryExtensionServices * memoryEndpoints)
	for lo := 0; lo < len(slices); lo += perBatch {
		for _, o := range slices[lo:min(lo+perBatch, len(slices))] {
			changed := proto.CloneOf(o)
			slice := changed.GetEndpointSlice()
			ready, terminating := true, false
			slice.Endpoints = append(slice.Endpoints, &tributaryv1.Endpoint{
				Addresses:  []string{workload.PodAddress(next).String()},
				Conditions: &tributaryv1.EndpointConditions{Ready: &ready, Serving: &ready, Terminating: &terminating},
			})
			next++
			s.Upsert(changed)
		}
		flush(b, s)
	}
}
