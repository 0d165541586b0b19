// Command tributary translates Contour ExtensionServices into Envoy Clusters
// and weighted ClusterLoadAssignments, as a gRPC service (serve) or once,
// from manifests on disk (translate), and shows what a running server's xDS
// clients were sent (xds status).
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"google.golang.org/grpc/grpclog"

	"github.com/tributary-dev/tributary/internal/server"
)

const usage = `Tributary translates Contour ExtensionServices into Envoy Clusters and
weighted ClusterLoadAssignments.

Usage:
  tributary serve [flags]        serve the gRPC API (and, with flags, xDS and metrics)
  tributary translate [flags]    translate manifests once and print the result
  tributary xds status [flags]   show the xDS clients of a running server and what they were sent
  tributary version              print the version

Run "tributary COMMAND -h" for the flags of a command.
`

// stdio is where a command reads and writes, so tests can run commands in
// process.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// errorf writes to stderr. A failed write there has nowhere left to be
// reported, so its error is dropped, here and only here.
func (s stdio) errorf(format string, args ...any) { _, _ = fmt.Fprintf(s.err, format, args...) }

// grpcLog carries gRPC's own log into serve's log. gRPC's logger is global
// and must be set before gRPC is used, so only the process's main sets it;
// commands run in process by tests keep gRPC's default.
var grpcLog server.GRPCLog

func main() {
	grpclog.SetLoggerV2(&grpcLog)
	os.Exit(run(context.Background(), os.Args[1:], stdio{os.Stdin, os.Stdout, os.Stderr}))
}

// run runs the command args names and returns the process exit code: 0 for
// success, 1 for a failure, 2 for a usage error.
func run(ctx context.Context, args []string, std stdio) int {
	if len(args) == 0 {
		std.errorf("%s", usage)
		return 2
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		return runServe(ctx, rest, std)
	case "translate":
		return runTranslate(ctx, rest, std)
	case "xds":
		return runXDS(ctx, rest, std)
	case "version":
		return runVersion(rest, std)
	case "help", "-h", "-help", "--help":
		if _, err := fmt.Fprint(std.out, usage); err != nil {
			return 1
		}
		return 0
	default:
		std.errorf("tributary: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}
