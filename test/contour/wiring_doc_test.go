package contour_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDirectEDSWiringIsTheHosts keeps the controller-runtime wiring that
// docs/direct-eds.md shows a Contour developer the wiring the end-to-end
// tests run against a real API server: every line of code in that
// section's Go block (comments and closing braces aside) is a line of the host program,
// test/e2e/cmd/contourhost, so the page cannot drift into code nobody runs.
func TestDirectEDSWiringIsTheHosts(t *testing.T) {
	doc, err := os.ReadFile("../../docs/direct-eds.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)\n## Wiring the adapter into Contour's informers\n.*?```go\n(.*?)```\n").FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/direct-eds.md has no Go block under \"Wiring the adapter into Contour's informers\"")
	}
	sources, err := filepath.Glob("../e2e/cmd/contourhost/*.go")
	if err != nil || len(sources) == 0 {
		t.Fatalf("no host sources: %v", err)
	}
	hostLines := map[string]bool{}
	for _, path := range sources {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(raw)) {
			hostLines[codeOf(line)] = true
		}
	}
	checked := 0
	for line := range strings.Lines(string(block[1])) {
		code := codeOf(line)
		if code == "" || code == "}" {
			continue
		}
		checked++
		if !hostLines[code] {
			t.Errorf("docs/direct-eds.md shows %q, which is not a line of test/e2e/cmd/contourhost", code)
		}
	}
	if checked < 10 {
		t.Errorf("only %d lines of code checked; the block lost its wiring", checked)
	}
}

// codeOf is a line without its indentation and trailing comment; a line
// that is only a comment has no code.
func codeOf(line string) string {
	line = strings.TrimSpace(line)
	if i := strings.Index(line, "//"); i >= 0 && !strings.Contains(line[:i], `"`) {
		line = strings.TrimSpace(line[:i])
	}
	return line
}
