package xds_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/workload"
	"github.com/tributary-dev/tributary/internal/xds"
)

// TestCacheAgainstModel drives a Publisher and State-of-the-World and Delta
// ADS clients with random sequences of publishing, withdrawing,
// subscribing, unsubscribing, ACKs, NACKs, reconnects and clients that stop
// reading for a while, and checks after every step that every reading
// client comes to hold what a model of the protocol says it must:
//   - every ClusterLoadAssignment it subscribes to, in its published
//     version, unless it rejected that very version (a NACKed version is
//     never sent again to the stream that rejected it);
//   - over Delta, nothing that is no longer published (unless it rejected
//     the removal);
//
// and, on every response, that the server never sends a stream a version it
// holds or rejected already.
func TestCacheAgainstModel(t *testing.T) {
	variants := claVariants(t, 6, 3)
	seeds := 16
	if testing.Short() {
		seeds = 2
	}
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runModel(t, uint64(seed), variants, 300)
		})
	}
}

// claVariants returns, for each of n ExtensionServices of the standard
// workload, k versions of its ClusterLoadAssignment (its first endpoint
// moved elsewhere in each), by name.
func claVariants(t *testing.T, n, k int) map[string][]translate.Resource {
	t.Helper()
	out := map[string][]translate.Resource{}
	for v := range k {
		objs := workload.Standard(n, 1)
		for i := range n {
			if v > 0 {
				moveEndpoint(objs, 2*i, fmt.Sprintf("10.201.%d.%d", v, i))
			}
		}
		for _, r := range translate.Translate(objs, source.Settings{}).ClusterLoadAssignments {
			out[r.Name] = append(out[r.Name], r)
		}
	}
	for name, vs := range out {
		if len(vs) != k || vs[0].Version == vs[1].Version {
			t.Fatalf("test setup: %s has versions %v", name, vs)
		}
	}
	return out
}

// newModelClients connects the model's four clients (two of each
// protocol) to p, each subscribed to random names of the universe of
// variants' names, and returns that universe.
func newModelClients(t *testing.T, p *xds.Publisher, conn *grpc.ClientConn, variants map[string][]translate.Resource, rng *rand.Rand) (universe []string, clients []*modelClient) {
	universe = slices.Sorted(maps.Keys(variants))
	versions := map[string]string{}
	for _, vs := range variants {
		for _, r := range vs {
			versions[string(r.Body)] = r.Version
		}
	}
	clients = []*modelClient{
		newModelClient(t, p, conn, xds.SotW, "sotw-a", versions, universe),
		newModelClient(t, p, conn, xds.SotW, "sotw-b", versions, universe),
		newModelClient(t, p, conn, xds.Delta, "delta-a", versions, universe),
		newModelClient(t, p, conn, xds.Delta, "delta-b", versions, universe),
	}
	for _, c := range clients {
		c.subscribe(pick(rng, universe), rng.IntN(4) == 0)
	}
	return universe, clients
}

func runModel(t *testing.T, seed uint64, variants map[string][]translate.Resource, steps int) {
	rng := rand.New(rand.NewPCG(seed, 0x7269627574617279))
	p, conn := startServer(t, xds.Options{})
	pub := mustOpen(t, p, "edge", xds.PublicationOptions{})
	universe, clients := newModelClients(t, p, conn, variants, rng)
	published := map[string]translate.Resource{}
	for step := range steps {
		did := randomStep(rng, pub, conn, clients, variants, universe, published)
		for _, c := range clients {
			if c.slowFor > 0 {
				c.slowFor--
				continue
			}
			c.settle(rng, published, fmt.Sprintf("step %d (%s)", step, did))
		}
	}
}

// randomStep takes one random step of a model run: publishing and
// withdrawing (published follows), a client changing its subscription,
// reconnecting, stopping to read for a while or changing its NACK rate;
// it says what it did.
func randomStep(rng *rand.Rand, pub *xds.Publication, conn *grpc.ClientConn, clients []*modelClient, variants map[string][]translate.Resource, universe []string, published map[string]translate.Resource) string {
	switch n := rng.IntN(10); {
	case n < 4: // publish or withdraw a few
		var ch translate.Changes
		for _, name := range pick(rng, universe) {
			if rng.IntN(4) == 0 {
				if _, ok := published[name]; ok {
					delete(published, name)
					ch.RemovedClusterLoadAssignments = append(ch.RemovedClusterLoadAssignments, name)
				}
				continue
			}
			r := variants[name][rng.IntN(len(variants[name]))]
			published[name] = r
			ch.ClusterLoadAssignments = append(ch.ClusterLoadAssignments, r)
		}
		pub.Apply(ch)
		return fmt.Sprintf("publish %d, withdraw %v", len(ch.ClusterLoadAssignments), ch.RemovedClusterLoadAssignments)
	case n < 6:
		c := clients[rng.IntN(len(clients))]
		c.subscribe(pick(rng, universe), rng.IntN(4) == 0)
		return c.name + " subscribes to " + c.describe()
	case n < 7:
		c := clients[rng.IntN(len(clients))]
		c.reconnect(conn)
		return c.name + " reconnects"
	case n < 8:
		c := clients[rng.IntN(len(clients))]
		c.slowFor = 1 + rng.IntN(4)
		return c.name + " stops reading"
	default:
		c := clients[rng.IntN(len(clients))]
		c.nackRate = []float64{0, 0.3, 1}[rng.IntN(3)]
		return fmt.Sprintf("%s NACKs with probability %v", c.name, c.nackRate)
	}
}

// pick returns a random subset of names.
func pick(rng *rand.Rand, names []string) []string {
	var out []string
	for _, n := range names {
		if rng.IntN(2) == 0 {
			out = append(out, n)
		}
	}
	return out
}

// TestCacheAgainstModelStaleRequest replays, step by step, the crossing
// that a random run met once in CI: a State-of-the-World client that has
// accepted nothing changes its subscription while a response is on its
// way. Its request carries no version, which would ask for everything anew,
// but also the previous nonce, so the server ignores it: what the client
// rejected stays rejected, and the server owes it nothing.
func TestCacheAgainstModelStaleRequest(t *testing.T) {
	variants := claVariants(t, 2, 2)
	p, conn := startServer(t, xds.Options{})
	pub := mustOpen(t, p, "edge", xds.PublicationOptions{})
	universe := slices.Sorted(maps.Keys(variants))
	a, b := universe[0], universe[1]
	versions := map[string]string{}
	for _, vs := range variants {
		for _, r := range vs {
			versions[string(r.Body)] = r.Version
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	c := newModelClient(t, p, conn, xds.SotW, "sotw", versions, universe)
	c.nackRate = 1
	c.subscribe([]string{a, b}, false)

	published := map[string]translate.Resource{a: variants[a][0], b: variants[b][0]}
	pub.Apply(translate.Changes{ClusterLoadAssignments: []translate.Resource{variants[a][0], variants[b][0]}})
	c.settle(rng, published, "both published")

	published[a] = variants[a][1]
	pub.Apply(translate.Changes{ClusterLoadAssignments: []translate.Resource{variants[a][1]}})
	for len(c.responses) == 0 { // the response is on its way, unread
		time.Sleep(time.Millisecond)
	}
	c.subscribe([]string{b}, false)
	c.settle(rng, published, "unsubscribing from "+a+" while its change is on its way")
}

// TestCacheAgainstModelRestart runs the model's clients against a server,
// then against one that has just started with a grace period (a restart,
// or a new replica), to which they reconnect holding what the first one
// sent them. While the new server holds their group back, random steps
// change their subscriptions, NACK rates and streams, and none of them is
// sent anything. Then comes either the group's first publication, a random
// full state, after which no Delta client is told of the removal of
// anything it publishes, or the end of the hold; after either, every
// client comes to hold what the model says, as in TestCacheAgainstModel,
// and random steps follow.
func TestCacheAgainstModelRestart(t *testing.T) {
	variants := claVariants(t, 6, 3)
	seeds := 8
	if testing.Short() {
		seeds = 2
	}
	for seed := range seeds {
		for _, release := range []string{"publication", "end of hold"} {
			t.Run(fmt.Sprintf("seed=%d/%s", seed, release), func(t *testing.T) {
				runRestartModel(t, uint64(seed), variants, release == "publication")
			})
		}
	}
}

func runRestartModel(t *testing.T, seed uint64, variants map[string][]translate.Resource, publish bool) {
	rng := rand.New(rand.NewPCG(seed, 0x686f6c64))
	before, conn := startServer(t, xds.Options{})
	pub := mustOpen(t, before, "edge", xds.PublicationOptions{})
	universe, clients := newModelClients(t, before, conn, variants, rng)
	published := map[string]translate.Resource{}
	settleAll := func(when string) {
		for _, c := range clients {
			c.slowFor = 0
			c.settle(rng, published, when)
		}
	}
	for step := range 40 {
		did := randomStep(rng, pub, conn, clients, variants, universe, published)
		settleAll(fmt.Sprintf("before the restart, step %d (%s)", step, did))
	}

	p, conn := startServer(t, xds.Options{WithdrawGrace: time.Hour})
	for _, c := range clients {
		c.p, c.quiet = p, true
		c.reconnect(conn)
	}
	for step := range 10 {
		c := clients[rng.IntN(len(clients))]
		switch rng.IntN(3) {
		case 0:
			c.subscribe(pick(rng, universe), rng.IntN(4) == 0)
		case 1:
			c.reconnect(conn)
		default:
			c.nackRate = []float64{0, 0.3, 1}[rng.IntN(3)]
		}
		for _, c := range clients {
			c.expectNothing(fmt.Sprintf("step %d of the hold", step))
		}
	}

	clear(published)
	pub = mustOpen(t, p, "edge", xds.PublicationOptions{})
	when := "the end of the hold"
	if publish {
		var first translate.Changes
		for _, name := range pick(rng, universe) {
			r := variants[name][rng.IntN(len(variants[name]))]
			published[name] = r
			first.ClusterLoadAssignments = append(first.ClusterLoadAssignments, r)
		}
		for _, c := range clients {
			c.quiet, c.kept = false, published
		}
		pub.Apply(first)
		when = fmt.Sprintf("the first publication (%d)", len(first.ClusterLoadAssignments))
	} else {
		for _, c := range clients {
			c.quiet = false
		}
		xds.EndHold(p)
	}
	settleAll(when)
	for _, c := range clients {
		c.kept = nil
	}
	for step := range 60 {
		did := randomStep(rng, pub, conn, clients, variants, universe, published)
		for _, c := range clients {
			if c.slowFor > 0 {
				c.slowFor--
				continue
			}
			c.settle(rng, published, fmt.Sprintf("%s, step %d (%s)", when, step, did))
		}
	}
}
