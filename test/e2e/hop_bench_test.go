package e2e

import (
	"fmt"
	"testing"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// BenchmarkProcessRoundTrip measures what the latency benchmarks' process
// hops cost by themselves: one unary gRPC call from this process to an
// authzbackend on loopback (a request and an answer, each one hop between
// two processes, with next to no work between them), after a quiet period
// of each length. A lone change reaches an xDS client after a quiet
// period: through Contour, over one such hop (Contour to the client);
// through the adapter, over two (host to `tributary serve`, then to the
// client). How much a hop costs after a quiet period, against back to
// back, is what separates the two paths once each side's own work is
// done.
//
// It reports the median and 99th percentile of the round trip as
// round-trip-p50-ns and round-trip-p99-ns. Give it iterations explicitly
// (-benchtime 200x): each waits its quiet period besides the call.
func BenchmarkProcessRoundTrip(b *testing.B) {
	backend := startBackend(b, "round-trip")
	conn, err := grpc.NewClient(backend.String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	client := authv3.NewAuthorizationClient(conn)
	// check fails tb, the benchmark whose goroutine calls it.
	check := func(tb testing.TB) {
		if _, err := client.Check(tb.Context(), &authv3.CheckRequest{}); err != nil {
			tb.Fatal(err)
		}
	}
	check(b) // connected before any clock runs

	for _, quiet := range []time.Duration{0, time.Millisecond, 20 * time.Millisecond, kubeBenchQuiet} {
		b.Run(fmt.Sprintf("quiet=%v", quiet), func(b *testing.B) {
			var roundTrips []time.Duration
			for b.Loop() {
				b.StopTimer()
				time.Sleep(quiet)
				b.StartTimer()
				start := time.Now()
				check(b)
				roundTrips = append(roundTrips, time.Since(start))
			}
			b.StopTimer()
			reportPercentiles(b, "round-trip", roundTrips)
		})
	}
}
