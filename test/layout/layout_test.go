// Package layout holds the import rules of docs/architecture.md as a test,
// so the picture there cannot drift from the code.
package layout_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/tributary-dev/tributary/"

// mayImport lists, for each package of the service, the packages of this
// repository it may import. A package missing here, or an import missing
// from its list, fails the test: a new arrow in the picture is a decision
// to write down in docs/architecture.md first.
var mayImport = map[string][]string{
	"internal/source":    nil,
	"internal/endpoints": {"internal/source"},
	"internal/model":     {"internal/endpoints", "internal/source"},
	"internal/envoy":     {"internal/model", "internal/source"},
	"internal/translate": {"internal/envoy", "internal/model", "internal/source"},
	"internal/session":   {"internal/model", "internal/source", "internal/translate"},
	"internal/xds":       {"internal/envoy", "internal/translate"},
	"internal/metrics":   nil,
	"internal/manifest":  nil,
	"internal/tlsfiles":  nil,
	"internal/apidocs":   nil,
	"internal/server": {
		"gen/go/tributary/v1", "internal/apidocs", "internal/metrics", "internal/model", "internal/session",
		"internal/source", "internal/translate", "internal/xds",
	},
	"cmd/tributary": {
		"client/contour", "gen/go/tributary/v1", "internal/manifest", "internal/metrics",
		"internal/server", "internal/source", "internal/tlsfiles", "internal/xds",
	},
}

// pipeline is the part of the picture that has no gRPC in it: the server,
// the command line and tests call it alike.
var pipeline = []string{"internal/source", "internal/endpoints", "internal/model", "internal/envoy", "internal/translate", "internal/session"}

// TestImportsFollowTheArchitecture checks every non-test import of the
// service's packages against mayImport.
func TestImportsFollowTheArchitecture(t *testing.T) {
	for pkg, imports := range listImports(t, "-f", `{{.ImportPath}} {{join .Imports " "}}`, "../../internal/...", "../../cmd/...") {
		if isTestHelper(pkg) {
			continue
		}
		allowed, known := mayImport[pkg]
		if !known {
			t.Errorf("%s is not in docs/architecture.md's import rules (mayImport)", pkg)
			continue
		}
		for _, imp := range imports {
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s, which the architecture does not allow", pkg, imp)
			}
		}
	}
}

// TestPipelineHasNoGRPC checks that the pipeline does not depend on gRPC,
// even indirectly.
func TestPipelineHasNoGRPC(t *testing.T) {
	for _, pkg := range pipeline {
		out, err := exec.Command("go", "list", "-deps", "../../"+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		if slices.Contains(strings.Fields(string(out)), "google.golang.org/grpc") {
			t.Errorf("%s depends on google.golang.org/grpc", pkg)
		}
	}
}

// TestClientModuleNeedsNothingOfTheService checks that the public client
// module builds without the service's module: Contour embeds it.
func TestClientModuleNeedsNothingOfTheService(t *testing.T) {
	out, err := exec.Command("go", "list", "-C", "../../client", "-deps", "-test", "./...").Output()
	if err != nil {
		t.Fatalf("go list in client/: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, module+"internal/") || strings.HasPrefix(dep, module+"cmd/") {
			t.Errorf("the client module depends on %s", dep)
		}
	}
	goMod, err := exec.Command("go", "list", "-C", "../../client", "-m", "all").Output()
	if err != nil {
		t.Fatalf("go list -m all in client/: %v", err)
	}
	for _, line := range strings.Split(string(goMod), "\n") {
		if fields := strings.Fields(line); len(fields) > 0 && fields[0] == strings.TrimSuffix(module, "/") {
			t.Errorf("the client module requires the service's module: %s", line)
		}
	}
}

// listImports runs go list with args and returns, for each package of this
// repository, its imports of this repository, both relative to the module.
func listImports(t *testing.T, args ...string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	found := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		var ours []string
		for _, imp := range fields[1:] {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				ours = append(ours, rest)
			}
		}
		found[pkg] = ours
	}
	return found
}

// isTestHelper reports whether pkg exists only for tests (docs/architecture.md,
// "Test helpers"); their imports are not part of the picture.
func isTestHelper(pkg string) bool {
	switch pkg {
	case "internal/testproc", "internal/testctx", "internal/xdstest", "internal/grpctest", "internal/workload",
		"internal/objectgen", "internal/tlsfiles/testcerts", "internal/xds/grpcproof", "internal/cputime":
		return true
	}
	return false
}
