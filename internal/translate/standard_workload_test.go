package translate_test

import (
	"fmt"
	"strings"
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/internal/envoy"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/workload"
)

// TestStandardWorkload checks the benchmark input means what it claims:
// every ExtensionService is valid and yields a CLA with two localities
// weighted 80/20 of m endpoints each, which passes ValidateAll and the
// extra checks, and the fast path matches the reference encoding.
func TestStandardWorkload(t *testing.T) {
	const n, m = 50, 30
	objs := workload.Standard(n, m)
	got := translate.Translate(objs, source.Settings{})
	if len(got.Statuses) != n || len(got.Clusters) != n || len(got.ClusterLoadAssignments) != n {
		t.Fatalf("got %d statuses, %d clusters, %d CLAs; want %d each",
			len(got.Statuses), len(got.Clusters), len(got.ClusterLoadAssignments), n)
	}
	for _, st := range got.Statuses {
		if st.Condition.Status != model.ConditionTrue || len(st.Condition.Warnings) != 0 {
			t.Errorf("%s/%s: condition %+v, want valid without warnings", st.Namespace, st.Name, st.Condition)
		}
	}
	for _, r := range got.ClusterLoadAssignments {
		cla := new(endpointv3.ClusterLoadAssignment)
		if err := proto.Unmarshal(r.Body, cla); err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		if err := cla.ValidateAll(); err != nil {
			t.Errorf("%s: ValidateAll: %v", r.Name, err)
		}
		if err := envoy.CheckClusterLoadAssignment(cla); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
		var shape []string
		for _, lle := range cla.GetEndpoints() {
			shape = append(shape, fmt.Sprintf("%s weight %d, %d endpoints",
				lle.GetLocality().GetSubZone(), lle.GetLoadBalancingWeight().GetValue(), len(lle.GetLbEndpoints())))
		}
		ns, name := splitClusterName(t, r.Name)
		want := []string{
			fmt.Sprintf("%s/%s-primary/%d weight 80, %d endpoints", ns, name, workload.TargetPort, m),
			fmt.Sprintf("%s/%s-canary/%d weight 20, %d endpoints", ns, name, workload.TargetPort, m),
		}
		if diff := cmp.Diff(want, shape); diff != "" {
			t.Errorf("%s localities (-want +got):\n%s", r.Name, diff)
		}
	}
	if diff := cmp.Diff(translate.TranslateReference(objs, source.Settings{}), got); diff != "" {
		t.Errorf("fast path differs from the reference encoding (-reference +fast):\n%s", diff)
	}
}

func splitClusterName(t *testing.T, cluster string) (namespace, name string) {
	t.Helper()
	rest, ok := strings.CutPrefix(cluster, "extension/")
	if ok {
		namespace, name, ok = strings.Cut(rest, "/")
	}
	if !ok {
		t.Fatalf("cluster name %q is not extension/<namespace>/<name>", cluster)
	}
	return namespace, name
}

// TestOutputInNameOrder holds the Result to name order whatever order the
// objects came in: translate visits them as listed (the workload lists
// them out of name order) and must put each outcome at its place. 300
// ExtensionServices take more than one worker.
func TestOutputInNameOrder(t *testing.T) {
	const n = 300
	got := translate.Translate(workload.Standard(n, 1), source.Settings{})
	var want, statuses, clusters, clas []string
	for ns := range workload.Namespaces {
		for e := ns; e < n; e += workload.Namespaces {
			want = append(want, fmt.Sprintf("team-%03d/ext-%05d", ns, e))
		}
	}
	for _, st := range got.Statuses {
		statuses = append(statuses, st.Namespace+"/"+st.Name)
	}
	for _, r := range got.Clusters {
		clusters = append(clusters, strings.TrimPrefix(r.Name, "extension/"))
	}
	for _, r := range got.ClusterLoadAssignments {
		clas = append(clas, strings.TrimPrefix(r.Name, "extension/"))
	}
	for what, names := range map[string][]string{"statuses": statuses, "clusters": clusters, "ClusterLoadAssignments": clas} {
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("%s out of name order (-want +got):\n%s", what, diff)
		}
	}
}

// TestTranslatedTogetherAsAlone holds every ExtensionService's outcome in a
// translation of many, spread over workers and put in name order, to its
// translation alone (one ExtensionService, on the calling goroutine): the
// reference check runs the same placing code on both sides, this one does
// not. 300 ExtensionServices take more than one worker.
func TestTranslatedTogetherAsAlone(t *testing.T) {
	const n = 300
	objs := workload.Standard(n, 2)
	together := translate.Translate(objs, source.Settings{})
	if len(together.Statuses) != n || len(together.Clusters) != n || len(together.ClusterLoadAssignments) != n {
		t.Fatalf("got %d statuses, %d clusters, %d CLAs; want %d each",
			len(together.Statuses), len(together.Clusters), len(together.ClusterLoadAssignments), n)
	}
	at := map[string]int{}
	for i, st := range together.Statuses {
		at[st.Namespace+"/"+st.Name] = i
	}
	for _, es := range objs.ExtensionServices {
		one := *objs
		one.ExtensionServices = []source.ExtensionService{es}
		alone := translate.Translate(&one, source.Settings{})
		i, ok := at[es.Namespace+"/"+es.Name]
		if !ok {
			t.Fatalf("%s/%s: no status in the translation of all", es.Namespace, es.Name)
		}
		got := &translate.Result{
			Clusters:               together.Clusters[i : i+1],
			ClusterLoadAssignments: together.ClusterLoadAssignments[i : i+1],
			Statuses:               together.Statuses[i : i+1],
		}
		if diff := cmp.Diff(alone, got); diff != "" {
			t.Fatalf("%s/%s translated with the others differs from alone (-alone +together):\n%s", es.Namespace, es.Name, diff)
		}
	}
}
