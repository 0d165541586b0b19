package session_test

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/tributary-dev/tributary/internal/session"
)

// Versions never repeat within a process, whatever goroutines ask.
func TestNextVersionUniqueAcrossGoroutines(t *testing.T) {
	const goroutines, each = 8, 1000
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			mine := make([]string, each)
			for i := range mine {
				mine[i] = session.NextVersion()
			}
			mu.Lock()
			defer mu.Unlock()
			for _, v := range mine {
				if seen[v] {
					t.Errorf("version %q handed out twice", v)
				}
				seen[v] = true
			}
		})
	}
	wg.Wait()
	if len(seen) != goroutines*each {
		t.Errorf("got %d distinct versions, want %d", len(seen), goroutines*each)
	}
}

// versionChildEnv makes the test binary print versions instead of testing:
// another process standing for a restarted server.
const versionChildEnv = "TRIBUTARY_SESSION_VERSION_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(versionChildEnv) != "" {
		for range 3 {
			os.Stdout.WriteString(session.NextVersion() + "\n")
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A restarted server starts its counter again, yet repeats no version: two
// processes hand out the same counters under different instance ids.
func TestNextVersionUniqueAcrossRestarts(t *testing.T) {
	run := func() []string {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), versionChildEnv+"=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("child process: %v", err)
		}
		return strings.Fields(string(out))
	}
	first, second := run(), run()
	if len(first) != 3 || len(second) != 3 {
		t.Fatalf("children printed %q and %q, want 3 versions each", first, second)
	}
	for i := range first {
		id1, n1, _ := strings.Cut(first[i], "-")
		id2, n2, _ := strings.Cut(second[i], "-")
		if n1 != n2 {
			t.Errorf("counters %q and %q differ; both processes should start from 1", n1, n2)
		}
		if id1 == id2 || first[i] == second[i] {
			t.Errorf("two processes both handed out version %q", first[i])
		}
	}
}
