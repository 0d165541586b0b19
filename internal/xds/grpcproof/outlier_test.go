package grpcproof

import (
	"testing"

	"github.com/tributary-dev/tributary/internal/source"
)

// TestOutlierDetectionEjectsFailingBackend is the end-to-end proof of
// outlierDetection with gRPC-Go's own xDS client, which implements the
// failure-percentage and success-rate detectors (not the consecutive
// ones): three Services weighted 50/30/20, one backend each. The 50 one
// starts failing every call; it must be ejected, taking no calls at all,
// and the other two must share the traffic in proportion to their
// weights, 60/40.
func TestOutlierDetectionEjectsFailingBackend(t *testing.T) {
	targets := []lbTarget{
		{service: "half", weight: 50, backends: []*lbBackend{startBackend(t, "half-1", 0)}},
		{service: "third", weight: 30, backends: []*lbBackend{startBackend(t, "third-1", 0)}},
		{service: "fifth", weight: 20, backends: []*lbBackend{startBackend(t, "fifth-1", 0)}},
	}
	// Through annotations, as a Contour user would write them. Three
	// hosts with 20 calls each per interval are enough to judge, and the
	// ejection lasts the whole test. At most half the hosts may be
	// ejected: enough for the one that fails.
	objs := lbObjects(targets, source.Meta{Annotations: map[string]string{
		"tributary.dev/outlier-detection-failure-percentage-threshold":      "50",
		"tributary.dev/outlier-detection-failure-percentage-minimum-hosts":  "3",
		"tributary.dev/outlier-detection-failure-percentage-request-volume": "20",
		"tributary.dev/outlier-detection-interval":                          "500ms",
		"tributary.dev/outlier-detection-base-ejection-time":                "5m",
		"tributary.dev/outlier-detection-max-ejection-percent":              "50",
	}}, source.ExtensionServiceSpec{})
	startLoad(t, objs)
	backends := backendsOf(targets)
	all := namesOf(backends)
	half := targets[0].backends[0]

	// Every backend healthy: 50/30/20.
	waitFor(t, "every backend serving", backends, probeCalls, convergeWithin, func(c map[string]int64) bool {
		return c["half-1"] > 0 && c["third-1"] > 0 && c["fifth-1"] > 0
	})
	counts := measure(t, backends, measureCalls, measureWithin)
	t.Logf("healthy: %s", formatCounts(counts))
	checkShare(t, counts, all, []string{"half-1"}, 0.50, measureTolerance)
	checkShare(t, counts, all, []string{"third-1"}, 0.30, measureTolerance)

	// half-1 fails every call from now on: once an interval has judged
	// it, it takes none.
	half.failing.Store(true)
	waitFor(t, "half-1 ejected", backends, probeCalls, convergeWithin, func(c map[string]int64) bool {
		return c["half-1"] == 0
	})
	counts = measure(t, backends, measureCalls, measureWithin)
	t.Logf("half-1 ejected: %s", formatCounts(counts))
	if n := counts["half-1"]; n != 0 {
		t.Errorf("the ejected backend served %d calls (%s)", n, formatCounts(counts))
	}
	checkShare(t, counts, all, []string{"third-1"}, 0.60, measureTolerance)
}
