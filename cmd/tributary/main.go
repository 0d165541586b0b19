// Command tributary translates Contour ExtensionServices into Envoy Clusters
// and weighted ClusterLoadAssignments, as a gRPC service (serve) or once,
// from manifests on disk (translate), and shows what a running server's xDS
// clients were sent (xds status).
//
// The command line follows kubectl's conventions (spf13/cobra and pflag):
// GNU long flags with short forms for the common ones, help on standard
// output, errors on standard error behind one prefix, and three exit codes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/grpclog"

	"github.com/tributary-dev/tributary/internal/server"
)

// Exit codes, the same for every command and documented in the root help.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// errorPrefix leads every error the command prints, whichever command
// failed: scripts and people look for one word.
const errorPrefix = "error: "

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

// run runs the command args names and returns the process exit code:
// exitOK, exitFailure, or exitUsage for a command line that makes no sense.
func run(ctx context.Context, args []string, std stdio) int {
	root := newRootCommand(std)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	var usage usageError
	var reported exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &reported):
		// The command said what went wrong itself (in its log, say).
		return reported.code
	case errors.As(err, &usage):
		std.errorf("%s%v\nRun '%s --help' for usage.\n", errorPrefix, err, cmd.CommandPath())
		return exitUsage
	default:
		std.errorf("%s%v\n", errorPrefix, err)
		return exitFailure
	}
}

const rootLong = `Tributary translates Contour ExtensionServices into Envoy Clusters and
weighted ClusterLoadAssignments: as a gRPC service (serve), once from
manifests on disk (translate), and it shows what a running server's xDS
clients were sent (xds status).

Exit codes: 0 success, 1 failure, 2 usage error (a flag or argument that
makes no sense).`

const rootExample = `  # Serve the gRPC API on 127.0.0.1:8081 and xDS on 127.0.0.1:18000
  tributary serve --xds-address 127.0.0.1:18000

  # Translate manifests without a server, as Envoy resources in YAML
  tributary translate -f examples/ -o yaml

  # Fail a CI pipeline on an invalid ExtensionService
  tributary translate -f manifests/ --fail-on-invalid > /dev/null`

// newRootCommand builds the whole command tree; each command's flags live
// with its constructor.
func newRootCommand(std stdio) *cobra.Command {
	root := &cobra.Command{
		Use:     "tributary",
		Short:   "Translate Contour ExtensionServices into weighted Envoy clusters",
		Long:    rootLong,
		Example: rootExample,
		// Errors and usage hints are printed once, by run, behind
		// errorPrefix; cobra's own printing would repeat them.
		SilenceErrors: true,
		SilenceUsage:  true,
		// The root alone prints its help, as kubectl does.
		Args: subcommandArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetIn(std.in)
	root.SetOut(std.out)
	root.SetErr(std.err)
	// pflag reports a bad flag or value; the command line, not the
	// command, is at fault.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newServeCommand(std),
		newTranslateCommand(std),
		newXDSCommand(std),
		newVersionCommand(std),
	)
	adoptStandardCommands(root)
	return root
}

// adoptStandardCommands puts the help and completion commands cobra adds
// under our usage rules: an unknown help topic or shell, or an argument
// too many, is a usage error (exit 2), where cobra would print help and
// exit 0, or fail with exit 1.
func adoptStandardCommands(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, cmd := range root.Commands() {
		switch cmd.Name() {
		case "help":
			cmd.Run = nil
			cmd.RunE = func(cmd *cobra.Command, args []string) error {
				topic, rest, err := cmd.Root().Find(args)
				if err != nil || len(rest) > 0 {
					return usageErrorf("unknown help topic %q", strings.Join(args, " "))
				}
				// As cobra's own help does: a command's --help flag exists
				// only once it runs, and its usage line lists it.
				topic.InitDefaultHelpFlag()
				return topic.Help()
			}
		case "completion":
			// A command that only groups others must run to have its
			// arguments checked (see newXDSCommand).
			cmd.Args = subcommandArgs
			cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
			for _, shell := range cmd.Commands() {
				shell.Args = noArgs
			}
		}
	}
}
