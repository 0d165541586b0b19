package model

import (
	"slices"
	"strconv"
	"testing"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
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
		if _, _, err := b.lookupService(source.NamespacedName{Namespace: testNamespace, Name: svc}, 80); err != nil {
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
	if ec, st := b.Build(es); ec == nil || len(ec.Localities) != 2 {
		t.Fatalf("Build gave %v, status %+v; want two localities", ec, st)
	}
	if b.resolved.namespace != "" || len(b.resolved.services) != 0 || slices.ContainsFunc(b.resolved.services[:cap(b.resolved.services)], func(e serviceEntry) bool { return e.service != nil }) {
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
