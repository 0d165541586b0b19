package workload_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/workload"
)

// Standard gives the same objects every time, every pod its own address,
// and ExtensionServices that are all valid with 2·m endpoints each.
func TestStandard(t *testing.T) {
	const n, m = 120, 7
	objs := workload.Standard(n, m)
	if diff := cmp.Diff(objs, workload.Standard(n, m)); diff != "" {
		t.Fatalf("two calls differ (-first +second):\n%s", diff)
	}
	if len(objs.ExtensionServices) != n || len(objs.Services) != 2*n || len(objs.EndpointSlices) != 2*n {
		t.Fatalf("got %d ExtensionServices, %d Services, %d EndpointSlices; want %d, %d, %d",
			len(objs.ExtensionServices), len(objs.Services), len(objs.EndpointSlices), n, 2*n, 2*n)
	}
	seen := map[string]bool{}
	for _, s := range objs.EndpointSlices {
		for _, ep := range s.Endpoints.Unpack() {
			if seen[ep.Address] {
				t.Errorf("address %s used twice", ep.Address)
			}
			seen[ep.Address] = true
		}
	}
	if len(seen) != 2*n*m {
		t.Errorf("got %d distinct addresses, want %d", len(seen), 2*n*m)
	}
	res := translate.Translate(objs, source.Settings{})
	if len(res.ClusterLoadAssignments) != n {
		t.Errorf("got %d CLAs, want %d", len(res.ClusterLoadAssignments), n)
	}
	for _, st := range res.Statuses {
		if len(st.Condition.Errors)+len(st.Condition.Warnings) != 0 {
			t.Errorf("%s/%s: %+v, want valid without warnings", st.Namespace, st.Name, st.Condition)
		}
	}
}
