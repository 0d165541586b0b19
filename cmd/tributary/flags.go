package main

import (
	"errors"
	"fmt"
	"math"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
)

// usageError is a command line that makes no sense: run prints it with a
// pointer to the command's help and exits with exitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usageErrorf is a usageError from a format.
func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitError ends a command with code after the command has reported why
// itself (serve logs its failures, for instance), so run prints nothing.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// subcommandArgs is the Args of a command that only groups others: alone
// it prints its help, and an argument that names none of its commands is
// a usage error, with cobra's suggestion when one is near.
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	// cobra sets its default distance on the root only.
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if suggestions := cmd.SuggestionsFor(args[0]); len(suggestions) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", suggestions[0])
	}
	return usageError{errors.New(msg)}
}

// noArgs is cobra.NoArgs as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%q takes no arguments, got %q", cmd.CommandPath(), args[0])
	}
	return nil
}

// byteSize is a size flag written as a Kubernetes quantity ("64Mi",
// "1Gi", "4096"), parsed by apimachinery as a resource limit in a
// manifest would be. Sizes bound int fields (gRPC's message sizes), so
// they stop below 2Gi.
type byteSize int

// maxByteSize is the largest size a flag takes: gRPC takes its sizes as
// int32-safe ints.
const maxByteSize = math.MaxInt32

func (s *byteSize) Type() string { return "quantity" }

// String prints the size as Kubernetes would: 64Mi, 1Gi, 1500.
func (s *byteSize) String() string {
	return resource.NewQuantity(int64(*s), resource.BinarySI).String()
}

func (s *byteSize) Set(v string) error {
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return fmt.Errorf("%q is not a quantity (a number of bytes, or with a suffix such as Ki, Mi or Gi: 64Mi)", v)
	}
	// AsInt64 refuses any quantity written with a fraction, 1.5Mi too; a
	// whole number of bytes is one that Value (which rounds up) keeps.
	switch {
	case q.Sign() < 0:
		return fmt.Errorf("%q is not a whole, non-negative number of bytes", v)
	case q.Cmp(*resource.NewQuantity(maxByteSize, resource.BinarySI)) > 0:
		return fmt.Errorf("%q is too large (at most %d bytes, just under 2Gi)", v, maxByteSize)
	}
	n := q.Value()
	if q.Cmp(*resource.NewQuantity(n, resource.BinarySI)) != 0 {
		return fmt.Errorf("%q is not a whole, non-negative number of bytes", v)
	}
	*s = byteSize(n)
	return nil
}

// completeWords offers words as the completions of flag's value in the
// shell completion scripts. The flag must exist: a misspelt name is a bug
// caught by every test that builds the command.
func completeWords(cmd *cobra.Command, flag string, words ...string) {
	err := cmd.RegisterFlagCompletionFunc(flag, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return words, cobra.ShellCompDirectiveNoFileComp
	})
	if err != nil {
		panic(err)
	}
}
