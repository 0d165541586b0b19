package grpcproof

import (
	"testing"
	"time"

	"github.com/tributary-dev/tributary/internal/source"
)

// Bounds of the load balancing proofs. The Service a call goes to is a
// weighted random pick, so a share measured over measureCalls calls has a
// standard deviation of at most √(0.25/n), 1.1 points at 2000; ±5 points
// is 4.5 σ or more, a false failure every 100,000 checks or so, and still
// far from the share a lost weight would give (an 80/20 split becoming
// 50/50, a 30/20 split becoming 50/50). The split inside a Service is not
// random at all under client-side weighted round robin (a weighted
// schedule), so its bound only has to tell weighted from unweighted.
const (
	measureCalls     = 2000
	measureTolerance = 0.05
	probeCalls       = 200
	// convergeWithin bounds the wait for a change to show at the
	// backends: gRPC's xDS client must connect, and weights or ejections
	// take an update period or an interval to apply.
	convergeWithin = 15 * time.Second
	// measureWithin bounds one measurement; the caller serves thousands
	// of calls a second even under -race and GOMAXPROCS=1.
	measureWithin = 15 * time.Second
)

// TestClientSideWeightedRoundRobinKeepsServiceWeights is the end-to-end
// proof of strategy ClientSideWeightedRoundRobin with gRPC-Go's own xDS
// client: two Services weighted 80/20, each with two backends reporting
// ORCA load per call, one at a quarter of the other's utilization (so
// with four times its weight). The Services must keep 80/20, while inside
// each Service the less-utilised backend takes most of the calls; under
// plain round robin, or had wrr_locality not kept the Service weights,
// one of the two would fail.
func TestClientSideWeightedRoundRobinKeepsServiceWeights(t *testing.T) {
	// Utilization 0.2 and 0.8 at the same reported rate: weights 500 and
	// 125, so the light backend should get 80% of its Service's calls.
	targets := []lbTarget{
		{service: "big", weight: 80, backends: []*lbBackend{startBackend(t, "big-light", 0.2), startBackend(t, "big-heavy", 0.8)}},
		{service: "small", weight: 20, backends: []*lbBackend{startBackend(t, "small-light", 0.2), startBackend(t, "small-heavy", 0.8)}},
	}
	strategy := "ClientSideWeightedRoundRobin"
	// A short blackout and update period make weights apply within a
	// second instead of the defaults' ten; the blackout half through
	// spec.options, the update period through an annotation.
	objs := lbObjects(targets,
		source.Meta{Annotations: map[string]string{"tributary.dev/client-side-weighted-round-robin-weight-update-period": "100ms"}},
		source.ExtensionServiceSpec{
			LoadBalancerPolicy: &source.LoadBalancerPolicy{Strategy: strategy},
			Options: &source.ExtensionOptions{ClientSideWeightedRoundRobin: &source.ClientSideWeightedRoundRobin{
				BlackoutPeriod: new("200ms"),
			}},
		})
	startLoad(t, objs)
	backends := backendsOf(targets)
	all := namesOf(backends)

	// Weights apply once every backend has reported for a blackout period
	// and the schedule has been recomputed.
	waitFor(t, "weights from ORCA reports", backends, 4*probeCalls, convergeWithin, func(c map[string]int64) bool {
		return c["big-light"] > 2*c["big-heavy"] && c["small-light"] > 2*c["small-heavy"]
	})
	counts := measure(t, backends, 2*measureCalls, measureWithin)
	t.Logf("measured: %s", formatCounts(counts))

	checkShare(t, counts, all, []string{"big-light", "big-heavy"}, 0.80, measureTolerance)
	for _, service := range []string{"big", "small"} {
		light, heavy := counts[service+"-light"], counts[service+"-heavy"]
		// 4:1 expected; 2:1 is far from both that and round robin's 1:1.
		if heavy == 0 || light < 2*heavy {
			t.Errorf("service %s: light backend %d calls, heavy %d: want more than twice as many on the light one", service, light, heavy)
		}
	}
}
