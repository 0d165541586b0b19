package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"google.golang.org/protobuf/encoding/protojson"
	meta_v1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/tributary-dev/tributary/internal/envoy"
	"github.com/tributary-dev/tributary/internal/model"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

// goldenDir holds one directory per case; see its README.md.
const goldenDir = "testdata/golden"

// Files of a golden case.
const (
	goldenInput    = "input.yaml"    // required: the manifests (-f)
	goldenSettings = "settings.yaml" // optional: --settings
	goldenOutput   = "output.yaml"   // stdout as YAML, for input that translates
	goldenStderr   = "stderr.txt"    // optional: notes printed on success
	goldenError    = "error.txt"     // stderr, for input that cannot be read or is rejected
	// optional, with output.yaml: stdout of --type availability as YAML
	goldenAvailability = "availability.yaml"
)

// TestTranslateGolden runs `tributary translate` in process on every case of
// testdata/golden and compares what it prints with the case's files. Paths
// in stderr are made relative to the case directory, so error.txt reads
// "input.yaml: document 2: ...". With -update the files are rewritten;
// a case keeps its kind (output.yaml or error.txt) unless it has neither yet.
func TestTranslateGolden(t *testing.T) {
	entries, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		t.Run(e.Name(), func(t *testing.T) {
			t.Parallel()
			runGoldenCase(t, filepath.Join(goldenDir, e.Name()))
		})
	}
	if n == 0 {
		t.Fatalf("no cases in %s", goldenDir)
	}
}

func runGoldenCase(t *testing.T, dir string) {
	input := filepath.Join(dir, goldenInput)
	if !exists(t, input) {
		t.Fatalf("%s is missing", input)
	}
	args := []string{"translate", "-f", input}
	if settings := filepath.Join(dir, goldenSettings); exists(t, settings) {
		args = append(args, "--settings", settings)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, stdio{in: strings.NewReader(""), out: &stdout, err: &stderr})
	gotStderr := strings.ReplaceAll(stderr.String(), dir+string(filepath.Separator), "")

	errorCase := exists(t, filepath.Join(dir, goldenError))
	outputCase := exists(t, filepath.Join(dir, goldenOutput))
	switch {
	case errorCase && outputCase:
		t.Fatalf("a case has %s or %s, not both", goldenOutput, goldenError)
	case !errorCase && !outputCase && *update:
		errorCase = code != 0
	}

	if errorCase {
		if code != 1 {
			t.Fatalf("exit code %d, want 1; stderr:\n%s", code, gotStderr)
		}
		if stdout.Len() > 0 {
			t.Errorf("failed translation printed to stdout:\n%s", stdout.String())
		}
		compareGolden(t, filepath.Join(dir, goldenError), gotStderr)
		return
	}

	if code != 0 {
		t.Fatalf("exit code %d, want 0; stderr:\n%s", code, gotStderr)
	}
	gotYAML, err := yaml.JSONToYAML(stdout.Bytes())
	if err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout.String())
	}
	compareGolden(t, filepath.Join(dir, goldenOutput), string(gotYAML))
	stderrFile := filepath.Join(dir, goldenStderr)
	switch {
	case *update && gotStderr == "":
		if err := os.Remove(stderrFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	case gotStderr != "" || exists(t, stderrFile):
		compareGolden(t, stderrFile, gotStderr)
	}
	checkResources(t, stdout.Bytes())

	// Availability is not in --type all (Contour's status has no such
	// field), so a case that pins it says so with its file.
	if availability := filepath.Join(dir, goldenAvailability); exists(t, availability) {
		stdout.Reset()
		args = append(args, "--type", string(outputAvailability))
		if code := run(context.Background(), args, stdio{in: strings.NewReader(""), out: &stdout, err: io.Discard}); code != 0 {
			t.Fatalf("--type availability: exit code %d", code)
		}
		gotYAML, err := yaml.JSONToYAML(stdout.Bytes())
		if err != nil {
			t.Fatalf("--type availability: stdout is not JSON: %v\n%s", err, stdout.String())
		}
		compareGolden(t, availability, string(gotYAML))
	}
}

// checkResources proves every emitted resource is one Envoy accepts (the
// contract's "every emitted resource is valid") and carries a version, that
// each status is an ExtensionService as Contour's own type decodes it, and
// that resources and statuses agree: one Cluster and one
// ClusterLoadAssignment for each valid ExtensionService, named after it
// (no ClusterLoadAssignment for a STRICT_DNS Cluster), and none for invalid
// ones.
func checkResources(t *testing.T, out []byte) {
	t.Helper()
	var got struct {
		ConfigDump json.RawMessage
		Statuses   json.RawMessage
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	dump := decodeConfigDump(t, got.ConfigDump, outputAll)
	var clusters, loadAssignments, valid []string
	// A STRICT_DNS Cluster (ExternalName targets) carries its endpoints
	// inline: it has no ClusterLoadAssignment.
	dns := map[string]bool{}
	for _, c := range dump.clusters {
		if err := c.ValidateAll(); err != nil {
			t.Errorf("Cluster %s: ValidateAll: %v", c.GetName(), err)
		}
		clusters = append(clusters, c.GetName())
		dns[c.GetName()] = c.GetType() == clusterv3.Cluster_STRICT_DNS
		if la := c.GetLoadAssignment(); la != nil {
			if err := envoy.CheckClusterLoadAssignment(la); err != nil {
				t.Errorf("Cluster %s: load_assignment: %v", c.GetName(), err)
			}
		}
	}
	for _, cla := range dump.loadAssignments {
		if err := cla.ValidateAll(); err != nil {
			t.Errorf("ClusterLoadAssignment %s: ValidateAll: %v", cla.GetClusterName(), err)
		}
		if err := envoy.CheckClusterLoadAssignment(cla); err != nil {
			t.Errorf("ClusterLoadAssignment %s: %v", cla.GetClusterName(), err)
		}
		loadAssignments = append(loadAssignments, cla.GetClusterName())
	}
	for _, es := range decodeStatusList(t, got.Statuses) {
		conditions := es.Status.Conditions
		if len(conditions) != 1 || conditions[0].Type != "Valid" {
			t.Errorf("status %s/%s has conditions %+v, want one of type Valid", es.Namespace, es.Name, conditions)
			continue
		}
		if conditions[0].Status == meta_v1.ConditionTrue {
			valid = append(valid, model.ClusterName(es.Namespace, es.Name))
		}
	}
	// The response orders resources by namespace then name, which is not
	// the lexical order of their names ("a-b" < "a/" but "a" < "a-b").
	slices.Sort(valid)
	slices.Sort(clusters)
	slices.Sort(loadAssignments)
	if d := cmp.Diff(valid, clusters); d != "" {
		t.Errorf("Cluster names differ from the valid ExtensionServices' (-statuses +clusters):\n%s", d)
	}
	withEDS := slices.DeleteFunc(slices.Clone(valid), func(name string) bool { return dns[name] })
	if d := cmp.Diff(withEDS, loadAssignments, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("ClusterLoadAssignment names differ from the valid ExtensionServices' (-statuses +CLAs):\n%s", d)
	}
}

// envoyResources is a decoded ConfigDump.
type envoyResources struct {
	clusters        []*clusterv3.Cluster
	loadAssignments []*endpointv3.ClusterLoadAssignment
}

// decodeConfigDump reads the ConfigDump `translate --type what` prints: a
// ClustersConfigDump unless what is endpoint, then an EndpointsConfigDump
// unless what is cluster, and nothing else, each resource of them with a
// version.
func decodeConfigDump(t *testing.T, raw []byte, what outputType) envoyResources {
	t.Helper()
	dump := &adminv3.ConfigDump{}
	if err := protojson.Unmarshal(raw, dump); err != nil {
		t.Fatalf("ConfigDump: %v\n%s", err, raw)
	}
	var want []string
	if what != outputEndpoint {
		want = append(want, "type.googleapis.com/envoy.admin.v3.ClustersConfigDump")
	}
	if what != outputCluster {
		want = append(want, "type.googleapis.com/envoy.admin.v3.EndpointsConfigDump")
	}
	var sections []string
	for _, c := range dump.GetConfigs() {
		sections = append(sections, c.GetTypeUrl())
	}
	if d := cmp.Diff(want, sections); d != "" {
		t.Fatalf("ConfigDump sections (-want +got):\n%s", d)
	}

	var got envoyResources
	for _, section := range dump.GetConfigs() {
		m, err := section.UnmarshalNew()
		if err != nil {
			t.Fatal(err)
		}
		switch m := m.(type) {
		case *adminv3.ClustersConfigDump:
			for _, dc := range m.GetDynamicActiveClusters() {
				c := &clusterv3.Cluster{}
				if err := dc.GetCluster().UnmarshalTo(c); err != nil {
					t.Fatalf("dynamic cluster: %v", err)
				}
				if dc.GetVersionInfo() == "" {
					t.Errorf("Cluster %s has no version", c.GetName())
				}
				got.clusters = append(got.clusters, c)
			}
		case *adminv3.EndpointsConfigDump:
			for _, de := range m.GetDynamicEndpointConfigs() {
				cla := &endpointv3.ClusterLoadAssignment{}
				if err := de.GetEndpointConfig().UnmarshalTo(cla); err != nil {
					t.Fatalf("dynamic endpoint config: %v", err)
				}
				if de.GetVersionInfo() == "" {
					t.Errorf("ClusterLoadAssignment %s has no version", cla.GetClusterName())
				}
				got.loadAssignments = append(got.loadAssignments, cla)
			}
		}
	}
	return got
}

// decodeStatusList reads the List `translate --type status` prints; each
// item must decode strictly as Contour's ExtensionService, so the statuses
// have exactly the shape Contour writes.
func decodeStatusList(t *testing.T, raw []byte) []contour_v1alpha1.ExtensionService {
	t.Helper()
	var list struct {
		APIVersion string
		Kind       string
		Items      []json.RawMessage
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	if list.APIVersion != "v1" || list.Kind != "List" || list.Items == nil {
		t.Fatalf("statuses are not a v1 List with items:\n%s", raw)
	}
	var out []contour_v1alpha1.ExtensionService
	for _, item := range list.Items {
		var es contour_v1alpha1.ExtensionService
		dec := json.NewDecoder(bytes.NewReader(item))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&es); err != nil {
			t.Fatalf("status item is not a Contour ExtensionService: %v\n%s", err, item)
		}
		if es.APIVersion != "projectcontour.io/v1alpha1" || es.Kind != "ExtensionService" {
			t.Errorf("status item is a %s %s, want a projectcontour.io/v1alpha1 ExtensionService", es.APIVersion, es.Kind)
		}
		out = append(out, es)
	}
	return out
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got, "\n")); d != "" {
		t.Errorf("%s differs (-want +got); rerun with -update if the change is intended:\n%s", path, d)
	}
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// TestTranslateNotesBounded: past maxNotes objects skipped or ignored, the
// notes stop and one line counts the rest.
func TestTranslateNotesBounded(t *testing.T) {
	var in strings.Builder
	for i := range maxNotes + 5 {
		fmt.Fprintf(&in, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: ns, name: cm-%d}\n", i)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"translate", "-f", "-"}, stdio{in: strings.NewReader(in.String()), out: &stdout, err: &stderr}); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, stderr.String())
	}
	var want strings.Builder
	for i := range maxNotes {
		fmt.Fprintf(&want, "note: <stdin>: document %d: skipped v1 ConfigMap \"ns/cm-%d\" (not read by translation)\n", i+1, i)
	}
	want.WriteString("note: 5 more objects skipped or ignored\n")
	if diff := cmp.Diff(want.String(), stderr.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}
