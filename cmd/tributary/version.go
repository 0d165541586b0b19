package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// without it the module version and VCS revision Go recorded are used.
var version = ""

func newVersionCommand(std stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(std.out, "tributary %s\n", versionString())
			return err
		},
	}
}

// versionString gives "v1.2.3 (revision abcdef0, go1.26.8)", leaving out
// what is unknown.
func versionString() string {
	v, revision, modified := version, "", false
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	details := ""
	if revision != "" {
		details = "revision " + revision[:min(len(revision), 12)]
		if modified {
			details += "+dirty"
		}
		details += ", "
	}
	return fmt.Sprintf("%s (%s%s)", v, details, runtime.Version())
}
