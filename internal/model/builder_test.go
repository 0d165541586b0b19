package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/workload"
)

// TestResolvedSlicesAnswerAsTheIndex: what the collector is told about any
// Service, remembered or not, in the namespace being built or another, in
// any order, is what the Index says; and a Build leaves nothing remembered.
func TestResolvedSlicesAnswerAsTheIndex(t *testing.T) {
	http := objectgen.Ports(objectgen.TCPPort("http", 8080))
	objs := source.Objects{
		Services: []source.Service{testService("a", servicePort("http", 80)), testService("b", servicePort("http", 80))},
		EndpointSlices: []source.EndpointSlice{
			objectgen.Slice("a-1", "a", "IPv4", http, objectgen.ReadyAt("10.0.0.1")),
			objectgen.Slice("b-1", "b", "IPv4", http, objectgen.ReadyAt("10.0.0.2")),
			objectgen.Slice("b-2", "b", "IPv4", http, objectgen.ReadyAt("10.0.0.3")),
			objectgen.Slice("c-1", "c", "IPv4", http, objectgen.ReadyAt("10.0.0.4")),
		},
	}
	idx := NewIndex(&objs)
	b := NewBuilder(idx, source.Settings{})
	b.resolved.namespace = testNamespace
	for _, svc := range []string{"b", "a", "b"} {
		name := source.NamespacedName{Namespace: testNamespace, Name: svc}
		if _, _, err := b.lookupService(name, idx.services[name], 80); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{testNamespace, "other"} {
		for _, svc := range []string{"a", "b", "c", "b", "a", "missing", "a"} {
			name := source.NamespacedName{Namespace: ns, Name: svc}
			if got, want := b.resolved.EndpointSlices(name), idx.EndpointSlices(name); !slices.Equal(got, want) {
				t.Errorf("slices of %s: %v, the Index has %v", name, sliceNames(got), sliceNames(want))
			}
		}
	}
	b.resolved.forget()

	es := &source.ExtensionService{Meta: source.Meta{Namespace: testNamespace, Name: "x"}, Spec: source.ExtensionServiceSpec{
		Protocol: xtStr("h2c"),
		Services: []source.ExtensionServiceTarget{{Name: "a", Port: 80}, {Name: "b", Port: 80}},
	}}
	if ec, st := buildOf(b, es, nil); ec == nil || len(ec.Localities) != 2 {
		t.Fatalf("Build gave %v, status %+v; want two localities", ec, st)
	}
	if b.resolved.namespace != "" || len(b.resolved.services) != 0 || slices.ContainsFunc(b.resolved.services[:cap(b.resolved.services)], func(e TargetService) bool { return e.Service != nil }) {
		t.Errorf("a Build left Services remembered: %+v", b.resolved)
	}
}

// TestIsDecimal holds isDecimal to comparing with strconv.Itoa.
func TestIsDecimal(t *testing.T) {
	names := []string{"", "0", "80", "080", "+80", "-1", "8o", "9000", "2147483647", "-2147483648", "http"}
	for _, n := range []int32{0, 1, 80, 9000, -1, 2147483647, -2147483648} {
		for _, name := range append(names, strconv.Itoa(int(n))) {
			if got, want := isDecimal(name, n), name == strconv.Itoa(int(n)); got != want {
				t.Errorf("isDecimal(%q, %d) = %v, want %v", name, n, got, want)
			}
		}
	}
}

// TestBuildWithFoundTargets: a Build given what Index.AppendTargetServices
// found for an ExtensionService's targets gives exactly what a Build that
// looks them up gives: on random objects, for their statuses and errors,
// and on the standard workload, whose every ExtensionService has
// endpoints.
func TestBuildWithFoundTargets(t *testing.T) {
	check := func(name string, objs *source.Objects, settings source.Settings) {
		t.Helper()
		idx := NewIndex(objs)
		looking, given := NewBuilder(idx, settings), NewBuilder(idx, settings)
		for i := range objs.ExtensionServices {
			es := &objs.ExtensionServices[i]
			wantEC, wantSt := buildOf(looking, es, nil)
			gotEC, gotSt := buildOf(given, es, idx.AppendTargetServices(nil, es))
			if diff := cmp.Diff(wantEC, gotEC); diff != "" {
				t.Fatalf("%s, %s: ExtensionCluster (-looked up +given):\n%s", name, es.Name, diff)
			}
			if diff := cmp.Diff(wantSt, gotSt); diff != "" {
				t.Fatalf("%s, %s: Status (-looked up +given):\n%s", name, es.Name, diff)
			}
		}
	}
	for seed := range uint64(300) {
		g := objectgen.New(objectgen.FromRand(rand.New(rand.NewPCG(seed, 0x666f756e64))), objectgen.Defaults())
		check(fmt.Sprintf("seed %d", seed), g.Objects(), g.Settings())
	}
	check("the standard workload", workload.Standard(50, 5), source.Settings{})
}
