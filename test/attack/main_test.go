package attack

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"go.uber.org/goleak"

	"github.com/tributary-dev/tributary/internal/testproc"
)

// scaleEnv selects the size of every scenario: unset (or "ci") runs the
// small scale CI runs in seconds, "full" the sizes (make attack).
const scaleEnv = "ATTACK_SCALE"

// full reports whether the scenarios run at the sizes.
var full = os.Getenv(scaleEnv) == "full"

// sized returns ci at the CI scale and fullSize at the issue's.
func sized[T any](ci, fullSize T) T {
	if full {
		return fullSize
	}
	return ci
}

func TestMain(m *testing.M) {
	if s := os.Getenv(scaleEnv); s != "" && s != "ci" && s != "full" {
		fmt.Fprintf(os.Stderr, "%s=%q: want ci or full\n", scaleEnv, s)
		os.Exit(2)
	}
	code := m.Run()
	testproc.RemoveBuilds()
	printTable()
	if code == 0 {
		// Every client, stream and connection a scenario opens must be closed.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// row is one scenario's line of the table printed at the end.
type row struct {
	scenario string
	// sent and got say what the attacker sent and what its client got.
	sent, got string
	// peakRSS is the server's VmHWM, in bytes, the last time it was read.
	peakRSS int64
	// elapsed is how long the attack itself took (not asserted anywhere).
	elapsed time.Duration
	held    bool
}

var (
	rowsMu sync.Mutex
	rows   []*row
)

// report adds t's row to the table; it is marked held when t ends
// without failing.
func report(t *testing.T) *row {
	t.Helper()
	r := &row{scenario: t.Name()}
	rowsMu.Lock()
	rows = append(rows, r)
	rowsMu.Unlock()
	t.Cleanup(func() { r.held = !t.Failed() })
	return r
}

// timed runs attack and records how long it took.
func (r *row) timed(attack func()) {
	start := time.Now()
	attack()
	r.elapsed = time.Since(start)
}

// gotText is what a row shows of a client's outcome: bounded, on one line.
func gotText(s string) string {
	const limit = 100
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > limit {
		return s[:limit] + "..."
	}
	return s
}

// printTable prints every row: the output of make attack.
func printTable() {
	rowsMu.Lock()
	defer rowsMu.Unlock()
	if len(rows) == 0 {
		return
	}
	scale := "ci"
	if full {
		scale = "full"
	}
	fmt.Printf("\nattack scenarios at %s scale against a fresh tributary serve each:\n\n", scale)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "scenario\tsent\tthe client got\tpeak RSS\ttime\tresult")
	for _, r := range rows {
		result := "FAILED"
		if r.held {
			result = "held"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", strings.TrimPrefix(r.scenario, "TestAttack/"), r.sent, r.got,
			mebibytes(r.peakRSS), r.elapsed.Round(time.Millisecond), result)
	}
	_ = w.Flush()
}

func mebibytes(n int64) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}
