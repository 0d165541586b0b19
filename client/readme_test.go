package client_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// goSnippet is a Go code block of a Markdown file.
var goSnippet = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestREADMESnippetsAreExamples keeps the README's Go snippets compiled and
// run: every line of them must be a line of a runnable example. It runs
// only in the checkout (see TestMain), where ../README.md is the README.
func TestREADMESnippetsAreExamples(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	exampleLines := map[string]bool{}
	for _, file := range []string{"example_test.go", "contour/example_test.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(src)) {
			exampleLines[strings.TrimSpace(line)] = true
		}
	}
	snippets := goSnippet.FindAllStringSubmatch(string(readme), -1)
	if len(snippets) == 0 {
		t.Fatal("README.md has no Go snippet; is the pattern out of date?")
	}
	for _, snippet := range snippets {
		for line := range strings.Lines(snippet[1]) {
			if line = strings.TrimSpace(line); line != "" && !exampleLines[line] {
				t.Errorf("README.md's Go snippet line %q is in no example (example_test.go, contour/example_test.go)", line)
			}
		}
	}
}
