package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// newFlagSet returns a flag set for a subcommand that reports errors and
// -h to w instead of exiting.
func newFlagSet(name, synopsis string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		_, _ = fmt.Fprintf(w, "Usage: %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and rejects positional arguments. ok is false when
// the command should stop; code is then its exit code (0 after -h).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		_, _ = fmt.Fprintf(fs.Output(), "unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2, false
	}
	return 0, true
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// byteSize is a size flag: a number of bytes, optionally with a KiB, MiB or
// GiB suffix ("64MiB").
type byteSize int

var byteUnits = []struct {
	suffix string
	size   int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

func (s *byteSize) String() string {
	for _, u := range byteUnits {
		if *s != 0 && int64(*s)%u.size == 0 {
			return strconv.FormatInt(int64(*s)/u.size, 10) + u.suffix
		}
	}
	return "0"
}

func (s *byteSize) Set(v string) error {
	num, unit := v, int64(1)
	for _, u := range byteUnits {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			num, unit = n, u.size
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("%q is not a size (bytes, or a number with KiB, MiB or GiB)", v)
	}
	if n > (1<<31-1)/unit {
		return fmt.Errorf("%q is too large (at most 2GiB-1)", v)
	}
	*s = byteSize(n * unit)
	return nil
}
