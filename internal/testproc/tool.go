package testproc

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Tool returns the absolute path of bin/<name> under the module root, where
// `make tools` installs the external programs some tests run (grpcurl,
// ghz). When it is not there, the test is skipped with a message naming the
// tool and `make tools`, so that `go test ./...` passes on a bare clone;
// but when the environment variable CI is set (CI runs `make test`, which
// installs the tools, with CI=true), a missing tool fails the test instead:
// in CI these tests run, they never skip silently.
func Tool(tb testing.TB, name string) string {
	tb.Helper()
	root, err := moduleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	return tool(tb, root, name, os.Getenv("CI") != "")
}

// tool is Tool for the module rooted at root, ci telling whether CI is set.
func tool(tb testing.TB, root, name string, ci bool) string {
	tb.Helper()
	path, missing := findTool(root, name)
	if missing == nil {
		return path
	}
	if ci {
		tb.Fatalf("%v (CI is set, so the test does not skip)", missing)
	}
	tb.Skipf("%v (skipped: CI is not set)", missing)
	return ""
}

// findTool returns root/bin/name, or an error naming the tool and the make
// target that installs it when that is not a regular file.
func findTool(root, name string) (string, error) {
	path := filepath.Join(root, "bin", name)
	fi, err := os.Stat(path)
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file (%v)", fi.Mode())
	}
	if err != nil {
		return "", fmt.Errorf("%s is not installed at %s: run `make tools` to install it: %w", name, path, err)
	}
	return path, nil
}
