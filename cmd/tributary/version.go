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
	v, revision := buildVersion()
	details := ""
	if revision != "" {
		details = "revision " + revision + ", "
	}
	return fmt.Sprintf("%s (%s%s)", v, details, runtime.Version())
}

// buildVersion gives the version ("(devel)" when unknown) and the VCS
// revision, shortened to 12 digits and marked +dirty for a modified tree
// ("" when unknown), from -ldflags or what Go recorded.
func buildVersion() (v, revision string) {
	v, modified := version, false
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value[:min(len(s.Value), 12)]
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if revision != "" && modified {
		revision += "+dirty"
	}
	return v, revision
}
