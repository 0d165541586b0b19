package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/tributary-dev/tributary/internal/envoy"
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
}

// checkResources proves every emitted resource is one Envoy accepts (the
// contract's "every emitted resource is valid"), and that resources and
// statuses agree: one Cluster and one ClusterLoadAssignment for each valid
// ExtensionService, named as its status says, and none for invalid ones.
func checkResources(t *testing.T, out []byte) {
	t.Helper()
	var got struct {
		Clusters               []json.RawMessage
		ClusterLoadAssignments []json.RawMessage
		Statuses               []statusJSON
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	var clusters, loadAssignments, valid []string
	for _, raw := range got.Clusters {
		c := &clusterv3.Cluster{}
		if err := protojson.Unmarshal(raw, c); err != nil {
			t.Fatalf("Cluster: %v\n%s", err, raw)
		}
		if err := c.ValidateAll(); err != nil {
			t.Errorf("Cluster %s: ValidateAll: %v", c.GetName(), err)
		}
		clusters = append(clusters, c.GetName())
	}
	for _, raw := range got.ClusterLoadAssignments {
		cla := &endpointv3.ClusterLoadAssignment{}
		if err := protojson.Unmarshal(raw, cla); err != nil {
			t.Fatalf("ClusterLoadAssignment: %v\n%s", err, raw)
		}
		if err := cla.ValidateAll(); err != nil {
			t.Errorf("ClusterLoadAssignment %s: ValidateAll: %v", cla.GetClusterName(), err)
		}
		if err := envoy.CheckClusterLoadAssignment(cla); err != nil {
			t.Errorf("ClusterLoadAssignment %s: %v", cla.GetClusterName(), err)
		}
		loadAssignments = append(loadAssignments, cla.GetClusterName())
	}
	for _, s := range got.Statuses {
		if len(s.Conditions) != 1 {
			t.Errorf("status %s/%s has %d conditions, want 1", s.Namespace, s.Name, len(s.Conditions))
			continue
		}
		isValid := s.Conditions[0].Status == "True"
		if isValid != (s.ClusterName != "") {
			t.Errorf("status %s/%s: condition status %s but clusterName %q", s.Namespace, s.Name, s.Conditions[0].Status, s.ClusterName)
		}
		if isValid {
			valid = append(valid, s.ClusterName)
		}
	}
	// The response orders resources by namespace then name, which is not
	// the lexical order of their names ("a-b" < "a/" but "a" < "a-b").
	slices.Sort(valid)
	slices.Sort(clusters)
	slices.Sort(loadAssignments)
	if d := cmp.Diff(valid, clusters); d != "" {
		t.Errorf("Cluster names differ from the valid statuses' clusterName (-statuses +clusters):\n%s", d)
	}
	if d := cmp.Diff(valid, loadAssignments); d != "" {
		t.Errorf("ClusterLoadAssignment names differ from the valid statuses' clusterName (-statuses +CLAs):\n%s", d)
	}
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
		fmt.Fprintf(&want, "tributary translate: note: <stdin>: document %d: skipped v1 ConfigMap \"ns/cm-%d\" (not read by translation)\n", i+1, i)
	}
	want.WriteString("tributary translate: note: 5 more objects skipped or ignored\n")
	if diff := cmp.Diff(want.String(), stderr.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}
