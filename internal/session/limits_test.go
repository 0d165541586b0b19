package session_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/testctx"
	"github.com/tributary-dev/tributary/internal/translate"
)

// TestApplyRejectsOutputOverLimit is the Sync amplification at a
// small scale: 100 ExtensionServices validate against one CA Secret, and a
// batch that grows the Secret would make the session's output larger than
// one answer may be. The batch fails before anything is rebuilt, naming
// the Secret, and changes nothing: the output stays what it was, and the
// session goes on with the next batch.
func TestApplyRejectsOutputOverLimit(t *testing.T) {
	const limit = 1 << 20
	limits := translate.Limits{MaxOutputBytes: limit}
	h := newHarness(t, source.Settings{})
	objs := source.Objects{
		Services:       []source.Service{service("ns", "svc")},
		EndpointSlices: []source.EndpointSlice{endpointSlice("ns", "svc-a", "svc", "10.0.0.1")},
		Secrets:        []source.Secret{caSecret("ns", "ca", genCA)},
	}
	for i := range 100 {
		objs.ExtensionServices = append(objs.ExtensionServices, validatedExtensionService("ns", fmt.Sprintf("ext-%03d", i), "svc", "ca"))
	}
	h.objects.apply(&session.Batch{Upserts: objs})
	if _, err := h.session.Apply(t.Context(), &session.Batch{Upserts: objs}, limits); err != nil {
		t.Fatalf("loading: %v", err)
	}
	before := h.session.State()

	grown := caSecret("ns", "ca", bytes.Repeat(genCA, 200))
	h.rebuilt = nil
	d, err := h.session.Apply(t.Context(), &session.Batch{Upserts: source.Objects{Secrets: []source.Secret{grown}}}, limits)
	after := objs
	after.Secrets = []source.Secret{grown}
	want := fmt.Sprintf(`the output would be about %s, over the 1 MiB limit: Secret "ns/ca" (%s) is inlined into 100 Clusters`,
		translate.FormatBytes(estimateOf(&after, source.Settings{})), translate.FormatBytes(int64(len(grown.CACrt))))
	if _, ok := errors.AsType[*translate.TooLargeError](err); !ok || err.Error() != want || !d.Empty() {
		t.Fatalf("growing the Secret: got %+v, %v; want no changes and a *TooLargeError saying\n%s", d, err, want)
	}
	if h.rebuilt != nil {
		t.Errorf("rebuilt %v before refusing", h.rebuilt)
	}
	if diff := cmp.Diff(before, h.session.State(), deltaOptions); diff != "" {
		t.Errorf("State after the rejected batch (-before +after):\n%s", diff)
	}

	// The session goes on: an endpoint that moves changes every CLA, and
	// nothing else (as many endpoints are ready, so no status changes).
	all := make([]string, 100)
	for i := range all {
		all[i] = fmt.Sprintf("ns/ext-%03d", i)
	}
	h.check(session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{endpointSlice("ns", "svc-a", "svc", "10.0.0.2")}}},
		expected{clas: all}, namesOf(objs.ExtensionServices)...)
}

func namesOf(es []source.ExtensionService) []source.NamespacedName {
	names := make([]source.NamespacedName, len(es))
	for i := range es {
		names[i] = es[i].NamespacedName()
	}
	return names
}

// estimateOf is the sum of the Estimates of objs's ExtensionServices.
func estimateOf(objs *source.Objects, settings source.Settings) int64 {
	e := translate.NewEstimator(model.NewIndex(objs), settings)
	var n int64
	for i := range objs.ExtensionServices {
		n += e.Estimate(&objs.ExtensionServices[i]).Bytes
	}
	return n
}

// TestApplyCancelledInParallel: a batch large enough to be rebuilt over
// every CPU, cancelled, changes nothing; applied again, it gives the
// complete output.
func TestApplyCancelledInParallel(t *testing.T) {
	objs := source.Objects{
		Services:       []source.Service{service("ns", "svc")},
		EndpointSlices: []source.EndpointSlice{endpointSlice("ns", "svc-a", "svc", "10.0.0.1")},
	}
	for i := range 300 {
		objs.ExtensionServices = append(objs.ExtensionServices, extensionService("ns", fmt.Sprintf("ext-%03d", i), "svc"))
	}
	h := newHarness(t, source.Settings{})
	for _, looks := range []int64{1, 2, 100} {
		d, err := h.session.Apply(testctx.NewCancelAfter(t, looks), &session.Batch{Upserts: objs}, defaultLimits)
		if !errors.Is(err, context.Canceled) || !d.Empty() {
			t.Fatalf("cancelled at look %d: got %+v, %v; want no changes and context.Canceled", looks, d, err)
		}
		if n := h.session.Objects(source.KindExtensionService); n != 0 {
			t.Fatalf("cancelled at look %d: the session holds %d ExtensionServices", looks, n)
		}
	}
	all := namesOf(objs.ExtensionServices)
	names := make([]string, len(all))
	for i, n := range all {
		names[i] = n.String()
	}
	h.check(session.Batch{Upserts: objs}, expected{clusters: names, clas: names, statuses: names}, all...)
}

// TestApplyEstimatesAGrownLargeTargetAgain: the estimator remembers a
// target of 1,024 endpoints or more; a batch that grows that target must
// be estimated against what it holds now, not what was remembered, so a
// batch that makes the output too large is refused, naming the endpoints
// the target now has.
func TestApplyEstimatesAGrownLargeTargetAgain(t *testing.T) {
	const limit = 64 << 10
	limits := translate.Limits{MaxOutputBytes: limit}
	h := newHarness(t, source.Settings{})
	objs := source.Objects{
		ExtensionServices: []source.ExtensionService{extensionService("ns", "ext", "svc")},
		Services:          []source.Service{service("ns", "svc")},
		EndpointSlices:    []source.EndpointSlice{endpointSlice("ns", "svc-a", "svc", addresses(0, 1024)...)},
	}
	if _, err := h.session.Apply(t.Context(), &session.Batch{Upserts: objs}, limits); err != nil {
		t.Fatalf("loading 1,024 endpoints: %v", err)
	}
	before := h.session.State()

	grown := endpointSlice("ns", "svc-b", "svc", addresses(1024, 4096)...)
	d, err := h.session.Apply(t.Context(), &session.Batch{Upserts: source.Objects{EndpointSlices: []source.EndpointSlice{grown}}}, limits)
	after := objs
	after.EndpointSlices = append(after.EndpointSlices, grown)
	est := translate.NewEstimator(model.NewIndex(&after), source.Settings{}).Estimate(&after.ExtensionServices[0])
	want := fmt.Sprintf(`the output would be about %s, over the 64 KiB limit: ExtensionService "ns/ext" has up to 5,120 endpoints (%s)`,
		translate.FormatBytes(est.Bytes), translate.FormatBytes(est.EndpointBytes))
	if _, ok := errors.AsType[*translate.TooLargeError](err); !ok || err.Error() != want || !d.Empty() {
		t.Fatalf("growing the target: got %d changed ClusterLoadAssignments, %v; want no changes and a *TooLargeError saying\n%s", len(d.ClusterLoadAssignments), err, want)
	}
	if diff := cmp.Diff(before, h.session.State(), deltaOptions); diff != "" {
		t.Errorf("State after the rejected batch (-before +after):\n%s", diff)
	}
}

// addresses are n distinct IPv4 addresses from the from-th of 10.0.0.0/8.
func addresses(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		a := from + i
		out[i] = fmt.Sprintf("10.%d.%d.%d", a>>16&255, a>>8&255, a&255)
	}
	return out
}

// TestApplyDecidesNearTheLimitWithPreciseEstimates: a session whose Quick
// bounds are over the limit but whose precise Estimates fit is accepted,
// including when the extension that makes it large is not in the batch
// (its Quick bound, kept from an earlier Apply, is made precise then); one
// endpoint more than the limit allows is refused with the precise bound.
func TestApplyDecidesNearTheLimitWithPreciseEstimates(t *testing.T) {
	h := newHarness(t, source.Settings{})
	objs := source.Objects{
		ExtensionServices: []source.ExtensionService{extensionService("ns", "ext-a", "svc-a"), extensionService("ns", "ext-b", "svc-b")},
		Services:          []source.Service{service("ns", "svc-a"), service("ns", "svc-b")},
		EndpointSlices: []source.EndpointSlice{
			endpointSlice("ns", "svc-a-1", "svc-a", addresses(0, 2000)...),
			endpointSlice("ns", "svc-b-1", "svc-b", addresses(2000, 10)...),
		},
	}
	if _, err := h.session.Apply(t.Context(), &session.Batch{Upserts: objs}, defaultLimits); err != nil {
		t.Fatalf("loading: %v", err)
	}

	grown := objs
	grown.EndpointSlices = []source.EndpointSlice{objs.EndpointSlices[0], endpointSlice("ns", "svc-b-1", "svc-b", addresses(2000, 11)...)}
	precise := estimateOf(&grown, source.Settings{})
	if quick := quickOf(&grown); quick <= precise {
		t.Fatalf("Quick %d, Estimate %d: the test needs Quick over the limit", quick, precise)
	}
	limits := translate.Limits{MaxOutputBytes: precise}
	if _, err := h.session.Apply(t.Context(), &session.Batch{Upserts: source.Objects{EndpointSlices: grown.EndpointSlices[1:]}}, limits); err != nil {
		t.Fatalf("growing svc-b to the limit: %v", err)
	}

	over := grown
	over.EndpointSlices = []source.EndpointSlice{objs.EndpointSlices[0], endpointSlice("ns", "svc-b-1", "svc-b", addresses(2000, 12)...)}
	est := translate.NewEstimator(model.NewIndex(&over), source.Settings{}).Estimate(&over.ExtensionServices[0])
	want := fmt.Sprintf(`the output would be about %s, over the %s limit: ExtensionService "ns/ext-a" has up to 2,000 endpoints (%s)`,
		translate.FormatBytes(estimateOf(&over, source.Settings{})), translate.FormatLimit(precise), translate.FormatBytes(est.EndpointBytes))
	d, err := h.session.Apply(t.Context(), &session.Batch{Upserts: source.Objects{EndpointSlices: over.EndpointSlices[1:]}}, limits)
	if _, ok := errors.AsType[*translate.TooLargeError](err); !ok || err.Error() != want || !d.Empty() {
		t.Fatalf("one endpoint over the limit: got %+v, %v; want no changes and a *TooLargeError saying\n%s", d, err, want)
	}
}

// quickOf is the sum of the Quick bounds of objs's ExtensionServices.
func quickOf(objs *source.Objects) int64 {
	e := translate.NewEstimator(model.NewIndex(objs), source.Settings{})
	var n int64
	for i := range objs.ExtensionServices {
		n += e.Quick(&objs.ExtensionServices[i])
	}
	return n
}
