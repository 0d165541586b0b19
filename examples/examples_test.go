// Package examples_test keeps the examples honest: the gRPC request in
// grpc/translate-request.json must be exactly the objects of extauth.yaml, so
// the grpcurl and the command-line walkthroughs show the same translation.
package examples_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/tributary-dev/tributary/client/contour"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/manifest"
)

// requestPath is the gRPC request grpcurl sends. It lives in a subdirectory
// because it is not a Kubernetes manifest: `tributary translate -f examples/`
// reads only the files directly in examples/, as kubectl does.
const requestPath = "grpc/translate-request.json"

var update = flag.Bool("update", false, "rewrite "+requestPath+" from extauth.yaml")

// requestFromManifests builds the TranslateRequest `tributary translate`
// would send for the manifests at path.
func requestFromManifests(t *testing.T, path string) *tributaryv1.TranslateRequest {
	t.Helper()
	m, err := manifest.Read([]string{path}, nil, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Skipped) > 0 {
		t.Fatalf("%s has objects translation does not read: %v", path, m.Skipped)
	}
	req := &tributaryv1.TranslateRequest{}
	for _, o := range m.Objects {
		obj, ok := contour.Object(o.Object)
		if !ok {
			t.Fatalf("%s: cannot convert %T", o.Position, o.Object)
		}
		req.Objects = append(req.Objects, obj)
	}
	return req
}

func TestTranslateRequestMatchesManifests(t *testing.T) {
	fromYAML := requestFromManifests(t, "extauth.yaml")
	if *update {
		j, err := protojson.Marshal(fromYAML)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := json.Indent(&out, j, "", "  "); err != nil {
			t.Fatal(err)
		}
		out.WriteByte('\n')
		if err := os.WriteFile(requestPath, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	data, err := os.ReadFile(requestPath)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON := &tributaryv1.TranslateRequest{}
	// Unknown fields are errors (protojson's default), so a typo in the
	// JSON cannot hide behind a field the diff never sees.
	if err := protojson.Unmarshal(data, fromJSON); err != nil {
		t.Fatalf("%s: %v", requestPath, err)
	}
	if d := cmp.Diff(fromYAML, fromJSON, protocmp.Transform()); d != "" {
		t.Errorf("%s and extauth.yaml differ (-yaml +json); run go test ./examples -update:\n%s", requestPath, d)
	}
}

// TestDirectoryIsTheExample keeps `tributary translate -f examples/` working:
// read as a directory (not recursively, as kubectl reads one), examples/
// must hold exactly the objects of extauth.yaml, each of a kind translation
// reads, and nothing that fails to read.
func TestDirectoryIsTheExample(t *testing.T) {
	dir, err := manifest.Read([]string{"."}, nil, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	file, err := manifest.Read([]string{"extauth.yaml"}, nil, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(file.Objects) == 0 || len(file.Skipped) != 0 {
		t.Fatalf("extauth.yaml: %d objects, %d skipped; want objects only", len(file.Objects), len(file.Skipped))
	}
	if d := cmp.Diff(file, dir); d != "" {
		t.Errorf("examples/ read as a directory differs from extauth.yaml (-file +directory):\n%s", d)
	}
}

// TestGoldenCaseIsTheExample keeps the golden case that pins the example's
// output on exactly the example's input.
func TestGoldenCaseIsTheExample(t *testing.T) {
	example, err := os.ReadFile("extauth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("../cmd/tributary/testdata/golden/extauth-example/input.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(example, golden) {
		t.Error("testdata/golden/extauth-example/input.yaml differs from examples/extauth.yaml: copy it over and rerun the golden test with -update")
	}
}
