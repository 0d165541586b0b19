package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/tributary-dev/tributary/internal/testproc"
)

// The programs the tests run, by name: the packages testproc builds them
// from.
var programs = map[string]string{
	"tributary":    "./cmd/tributary",
	"authzbackend": "./test/e2e/cmd/authzbackend",
	"xdscaller":    "./test/e2e/cmd/xdscaller",
	"contourhost":  "./test/e2e/cmd/contourhost",
}

func TestMain(m *testing.M) {
	code := m.Run()
	testproc.RemoveBuilds()
	// The API server and etcd would outlive the test binary.
	if err := stopKubeAPI(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the Kubernetes API server:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// program returns the path of the built program name, building it the
// first time.
func program(tb testing.TB, name string) string {
	tb.Helper()
	return testproc.BuildPackage(tb, programs[name])
}
