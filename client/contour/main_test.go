package contour_test

import (
	"os"
	"testing"

	"github.com/tributary-dev/tributary/client/internal/testserver"
)

// serverAddress is where the server the examples call serves gRPC.
var serverAddress string

func TestMain(m *testing.M) {
	os.Exit(testserver.Main(m, &serverAddress))
}
