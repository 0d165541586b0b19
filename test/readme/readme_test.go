// Package readme_test runs the walk-through of the repository's README.md
// as a reader would, so that it keeps working verbatim on a fresh clone.
//
// Every shell block of the README preceded by <!-- readme-test: NAME -->
// is a step, and the text block preceded by <!-- readme-test: NAME output -->
// is what it prints. The test runs each step with bash against a server of
// its own on free ports, changing nothing in the commands but the three
// addresses of `make run` (and naming the metrics address to `xds status`,
// which otherwise uses the same default as `make run`). It checks the exit
// status and the output: every line the README shows must be printed, in
// order and contiguously between the "..." lines that stand for what the
// README leaves out. The comparison ignores runs of spaces and the values
// that differ from one server process to the next: versions, and how long
// an xDS stream has been connected.
//
// The commands run in a scratch directory that looks like the checkout to
// them: bin/tributary is the binary built from this checkout, bin/grpcurl
// the pinned one of `make tools`, and examples/, gen/ and client/ link to
// the checkout's, so that nothing is written into the checkout.
package readme_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-dev/tributary/internal/testproc"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testproc.RemoveBuilds()
	os.Exit(code)
}

// root is the checkout, seen from this package's directory (where go test
// runs it).
const root = "../.."

// The addresses `make run` serves on, as the README names them.
const (
	readmeAddress        = "127.0.0.1:8081"
	readmeXDSAddress     = "127.0.0.1:18000"
	readmeMetricsAddress = "127.0.0.1:9090"
)

// block is a marked block of the README: a step's commands, or what it
// prints.
type block struct {
	name, text string
	line       int
}

var marked = regexp.MustCompile("(?m)^<!-- readme-test: ([a-z0-9-]+)( output)? -->\n```([a-z]+)\n((?s:.*?))^```$")

// readBlocks returns the README's marked shell blocks and their outputs by
// name.
func readBlocks(t *testing.T) (steps, outputs map[string]block) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	steps, outputs = map[string]block{}, map[string]block{}
	for _, m := range marked.FindAllStringSubmatchIndex(readme, -1) {
		name, isOutput, lang := readme[m[2]:m[3]], m[4] >= 0, readme[m[6]:m[7]]
		b := block{name: name, text: readme[m[8]:m[9]], line: 1 + strings.Count(readme[:m[0]], "\n")}
		into, wantLang := steps, "sh"
		if isOutput {
			into, wantLang = outputs, "text"
		}
		if lang != wantLang {
			t.Errorf("README.md:%d: block %q is marked %q, want %q", b.line, name, lang, wantLang)
		}
		if _, dup := into[name]; dup {
			t.Errorf("README.md:%d: a second block is marked %q", b.line, name)
		}
		into[name] = b
	}
	if strings.Count(readme, "<!-- readme-test:") != len(steps)+len(outputs) {
		t.Errorf("README.md has %d readme-test markers, but only %d are right before a block", strings.Count(readme, "<!-- readme-test:"), len(steps)+len(outputs))
	}
	return steps, outputs
}

// walkthrough lists the README's steps in the order they run. open steps
// keep running, reading a standard input the test holds open (the README
// tells the reader to leave them running), until the test closes it.
var walkthrough = []struct {
	name string
	open bool
	// connected is set for the output of `xds status`, whose last column
	// says how long each stream has been connected.
	connected bool
	// endOpen is set on the last step that needs the open ones: the
	// reader then presses Ctrl-D in their terminals, the last one opened
	// first.
	endOpen bool
}{
	{name: "grpcurl"},
	{name: "sync", open: true},
	{name: "xds-status-groups", connected: true},
	{name: "ads", open: true},
	{name: "xds-status-stream", connected: true, endOpen: true},
	{name: "python"},
	{name: "translate"},
}

func TestWalkthrough(t *testing.T) {
	steps, outputs := readBlocks(t)
	var known []string
	for _, s := range walkthrough {
		known = append(known, s.name)
		if _, ok := steps[s.name]; !ok {
			t.Errorf("README.md has no shell block marked <!-- readme-test: %s -->", s.name)
		}
		if _, ok := outputs[s.name]; !ok {
			t.Errorf("README.md has no text block marked <!-- readme-test: %s output -->", s.name)
		}
	}
	for name, b := range steps {
		if !slices.Contains(known, name) {
			t.Errorf("README.md:%d: step %q is not in this test's walkthrough: add it there, in the README's order", b.line, name)
		}
	}
	for name, b := range outputs {
		if _, ok := steps[name]; !ok {
			t.Errorf("README.md:%d: the output of %q follows no step of that name", b.line, name)
		}
	}
	if t.Failed() {
		return
	}

	dir := workspace(t)
	server := testproc.Start(t, filepath.Join(dir, "bin", "tributary"), "serve",
		"--address", "127.0.0.1:0", "--xds-address", "127.0.0.1:0", "--metrics-address", "127.0.0.1:0")
	addresses := strings.NewReplacer(
		readmeAddress, server.Address,
		readmeXDSAddress, server.XDSAddress,
		readmeMetricsAddress, server.MetricsAddress,
		"bin/tributary xds status", "bin/tributary xds status --metrics-address "+server.MetricsAddress,
	)

	// Each step is a subtest, so that one the machine cannot run (no
	// Python gRPC outside CI) skips alone; a step that fails ends the
	// walkthrough, since the next ones build on it. The steps left open
	// belong to the whole test.
	var stillOpen []*shell
	for _, s := range walkthrough {
		ok := t.Run(s.name, func(st *testing.T) {
			want := outputs[s.name]
			normalize := normalizeLine
			if s.connected {
				normalize = normalizeStatusLine
			}
			sh := startShell(st, t, dir, s.name, addresses.Replace(steps[s.name].text))
			if s.open {
				// The step prints its answers and goes on running, as
				// in the reader's terminal: wait for what the README
				// shows, then go on to the next step.
				sh.waitFor(func(stdout string) bool { return matches(stdout, want.text, normalize) == nil })
				stillOpen = append(stillOpen, sh)
			} else {
				sh.end(st)
			}
			if err := matches(sh.stdout.String(), want.text, normalize); err != nil {
				st.Fatalf("step %s (README.md:%d) printed what README.md:%d does not show: %v\nit printed:\n%s\nstandard error:\n%s",
					s.name, steps[s.name].line, want.line, err, sh.stdout.String(), sh.stderr.String())
			}
			if s.endOpen {
				slices.Reverse(stillOpen)
				for _, open := range stillOpen {
					open.end(st)
				}
				stillOpen = nil
			}
		})
		if !ok {
			return
		}
	}
	if len(stillOpen) > 0 {
		t.Fatal("the walkthrough leaves steps running")
	}
}

// workspace returns a scratch directory that the README's commands take
// for the checkout (see the package comment).
func workspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	checkout, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"bin/tributary": testproc.Build(t),
		"bin/grpcurl":   testproc.Tool(t, "grpcurl"),
	}
	for _, shared := range []string{"examples", "gen", "client"} {
		links[shared] = filepath.Join(checkout, shared)
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// shell is a step running in bash.
type shell struct {
	name           string
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	stdout, stderr *testproc.Buffer
	done           chan struct{}
	err            error
}

// startShell starts script in bash in dir. The step may outlive t (see
// TestWalkthrough): owner is the test at whose end it is stopped, with
// every process it started.
func startShell(t, owner *testing.T, dir, name, script string) *shell {
	t.Helper()
	if strings.Contains(script, "/usr/bin/python3") {
		needPythonGRPC(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testproc.Guard)
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	// A process group of its own, so that stopping the step stops the
	// programs of its pipeline too, not bash alone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Python would write its bytecode caches into the checkout (gen/ and
	// client/ are links to it).
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	sh := &shell{name: name, cmd: cmd, stdout: &testproc.Buffer{}, stderr: &testproc.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = sh.stdout, sh.stderr
	var err error
	if sh.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("step %s: %v", name, err)
	}
	go func() {
		sh.err = cmd.Wait()
		cancel()
		close(sh.done)
	}()
	owner.Cleanup(func() {
		_ = sh.stdin.Close()
		if !sh.ended() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		<-sh.done
	})
	return sh
}

func (sh *shell) ended() bool {
	select {
	case <-sh.done:
		return true
	default:
		return false
	}
}

// waitFor returns once the step's standard output satisfies cond, the step
// has ended, or testproc.Guard has passed: the caller then looks at what
// it printed.
func (sh *shell) waitFor(cond func(stdout string) bool) {
	deadline := time.After(testproc.Guard)
	for !cond(sh.stdout.String()) {
		select {
		case <-sh.done:
			return
		case <-deadline:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// end closes the step's standard input, as Ctrl-D does, and fails the test
// unless the step then exits with status 0.
func (sh *shell) end(t *testing.T) {
	t.Helper()
	if err := sh.stdin.Close(); err != nil {
		t.Fatal(err)
	}
	<-sh.done
	if sh.err != nil {
		t.Fatalf("step %s: %v\nstandard output:\n%s\nstandard error:\n%s", sh.name, sh.err, sh.stdout.String(), sh.stderr.String())
	}
}

// needPythonGRPC skips the test when Debian's python3 lacks the gRPC
// modules that `make tools` installs, unless CI is set (as testproc.Tool
// does for a missing tool).
func needPythonGRPC(t *testing.T) {
	t.Helper()
	err := exec.Command("/usr/bin/python3", "-c", "import grpc, google.protobuf").Run()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("/usr/bin/python3 cannot import grpc and google.protobuf (%v): run `make tools` to install them", err)
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI is set, so the test does not skip)")
	}
	t.Skip(msg + " (skipped: CI is not set)")
}

// version is a resource's version (a hash of its bytes) or one of a Sync
// session's or an xDS node group's (the same hash of the process, a
// counter): they differ from one server process to the next.
var version = regexp.MustCompile(`\b[0-9a-f]{16}(-[0-9]+)?\b`)

// normalizeLine makes lines that differ only in spacing or versions equal.
func normalizeLine(line string) string {
	return version.ReplaceAllString(strings.Join(strings.Fields(line), " "), "<version>")
}

// normalizeStatusLine is normalizeLine for the table of `xds status`,
// whose last column (CONNECTED) is how long a stream has been connected.
func normalizeStatusLine(line string) string {
	fields := strings.Fields(normalizeLine(line))
	if len(fields) > 0 {
		if _, err := time.ParseDuration(fields[len(fields)-1]); err == nil {
			fields[len(fields)-1] = "<duration>"
		}
	}
	return strings.Join(fields, " ")
}

// elided is the line by which the README leaves lines out.
const elided = "..."

// matches reports why output is not what shown shows, or nil if it is:
// the runs of lines between "..." lines must appear in output in order,
// each as consecutive lines; the first at the start of the output unless
// shown begins with "...", and the last at its end unless shown ends
// with "...".
func matches(output, shown string, normalize func(string) string) error {
	got := lines(output, normalize)
	var runs [][]string
	run := []string{}
	for _, l := range lines(shown, normalize) {
		if l == elided {
			runs, run = append(runs, run), []string{}
			continue
		}
		run = append(run, l)
	}
	runs = append(runs, run)
	at := 0
	for i, r := range runs {
		if len(r) == 0 {
			continue
		}
		first, last := i == 0, i == len(runs)-1
		found := -1
		switch {
		case first:
			if hasPrefix(got, r) {
				found = 0
			}
		case last:
			if start := len(got) - len(r); start >= at && hasPrefix(got[start:], r) {
				found = start
			}
		default:
			for start := at; start+len(r) <= len(got); start++ {
				if hasPrefix(got[start:], r) {
					found = start
					break
				}
			}
		}
		if found < 0 {
			where := "after the lines matched before"
			if first {
				where = "at the start"
			} else if last {
				where = "at the end"
			}
			return fmt.Errorf("these lines are not printed %s:\n%s", where, strings.Join(r, "\n"))
		}
		at = found + len(r)
	}
	return nil
}

func lines(text string, normalize func(string) string) []string {
	var out []string
	for l := range strings.Lines(strings.TrimRight(text, "\n")) {
		out = append(out, normalize(strings.TrimSuffix(l, "\n")))
	}
	return out
}

func hasPrefix(got, want []string) bool {
	return len(got) >= len(want) && slices.Equal(got[:len(want)], want)
}

// TestMatches keeps the output comparison honest: it must fail on a line
// the output lacks, on lines out of order, and on lines shown together but
// printed apart.
func TestMatches(t *testing.T) {
	output := "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3\n}\n"
	for _, c := range []struct {
		shown string
		ok    bool
	}{
		{shown: output, ok: true},
		{shown: "{\n...\n  \"b\": 2,\n...\n}\n", ok: true},
		{shown: "{\n  \"a\":    1,\n...\n", ok: true},
		{shown: "...\n  \"c\": 3\n}\n", ok: true},
		{shown: "{\n  \"b\": 2,\n...\n", ok: false},               // not at the start
		{shown: "...\n  \"b\": 2,\n", ok: false},                  // not at the end
		{shown: "...\n  \"a\": 1,\n  \"c\": 3\n...\n", ok: false}, // not consecutive
		{shown: "...\n  \"c\": 3\n...\n  \"a\": 1,\n...\n", ok: false},
		{shown: "...\n  \"d\": 4\n...\n", ok: false},
	} {
		err := matches(output, c.shown, normalizeLine)
		if (err == nil) != c.ok {
			t.Errorf("matches(%q): %v, want ok %v", c.shown, err, c.ok)
		}
	}
	if err := matches(`"version": "0123456789abcdef-12"`, `"version": "b5d899a480fa579d-1"`, normalizeLine); err != nil {
		t.Errorf("versions of two processes: %v", err)
	}
	if err := matches("readme demo sotw EDS 1 v - - 0 1m5s", "readme demo sotw EDS 1 v - - 0 1s", normalizeStatusLine); err != nil {
		t.Errorf("connection ages: %v", err)
	}
	if err := matches("connectTimeout: 5s", "connectTimeout: 2s", normalizeLine); err == nil {
		t.Error("durations outside the table of xds status compare equal")
	}
}

// help returns the output of `tributary <args> --help`.
func help(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(testproc.Build(t), append(args, "--help")...).Output()
	if err != nil {
		t.Fatalf("tributary %s --help: %v", strings.Join(args, " "), err)
	}
	return string(out)
}

// commandLine matches a line of the Available Commands of a help text.
var commandLine = regexp.MustCompile(`^  ([a-z]+)\s+(.*)$`)

// commands returns every command of `tributary <path>` that has no
// subcommands (or is completion), by its full name ("tributary xds
// status"), with the summary its parent's help gives it.
func commands(t *testing.T, path ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	_, list, ok := strings.Cut(help(t, path...), "Available Commands:\n")
	if !ok {
		return out
	}
	list, _, _ = strings.Cut(list, "\n\n")
	for line := range strings.Lines(list) {
		m := commandLine.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m == nil {
			t.Fatalf("tributary %s --help: cannot read the command line %q", strings.Join(path, " "), line)
		}
		if m[1] == "help" {
			continue
		}
		sub := append(slices.Clone(path), m[1])
		// completion's subcommands are cobra's, one per shell; the README
		// names the shells in its prose.
		if nested := commands(t, sub...); len(nested) > 0 && m[1] != "completion" {
			for name, summary := range nested {
				out[name] = summary
			}
			continue
		}
		out["tributary "+strings.Join(sub, " ")] = m[2]
	}
	return out
}

var commandRow = regexp.MustCompile("(?m)^\\| `(tributary [a-z ]+)` \\| (.*) \\|$")

// TestCommandTable keeps the README's table of commands what `tributary
// --help` (and `tributary xds --help`) says, row for row.
func TestCommandTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	inReadme := map[string]string{}
	for _, m := range commandRow.FindAllStringSubmatch(string(data), -1) {
		inReadme[m[1]] = m[2]
	}
	inHelp := commands(t)
	for name, summary := range inHelp {
		if got, ok := inReadme[name]; !ok {
			t.Errorf("README.md's table of commands lacks `%s` | %s |", name, summary)
		} else if got != summary {
			t.Errorf("README.md says `%s` does %q; its help says %q", name, got, summary)
		}
	}
	for name := range inReadme {
		if _, ok := inHelp[name]; !ok {
			t.Errorf("README.md's table of commands has `%s`, which tributary --help does not list", name)
		}
	}
}

// flagMention is a code span of the README that starts with a flag, with
// what follows it in parentheses, if anything: the default the README
// gives it.
var flagMention = regexp.MustCompile("`(--[a-z][a-z0-9-]*)[^`]*`(?: \\(([^)]*)\\))?")

// anyFlag is a long flag anywhere in the README, prose or commands.
var anyFlag = regexp.MustCompile(`(?:^|[\s'"(\x60])(--[a-z][a-z0-9-]+)`)

// pflagDefault is how pflag ends a flag's line: (default 10s) or
// (default "info").
var pflagDefault = regexp.MustCompile(`\(default "?([^")]*)"?\)$`)

// quantity is a size as the README and the help write it.
var quantity = regexp.MustCompile(`\b[0-9]+(?:[KMGT]i?B|[KMGT]i)\b`)

// TestFlagsAreTheHelp checks every flag the README names against the help
// of the commands: it must exist, and the default the README gives it in
// parentheses must be the help's, so that a changed default or unit (64Mi,
// not 64MiB) shows up here.
func TestFlagsAreTheHelp(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	// flagLines holds each flag's help lines, one per command that has it.
	flagLines := map[string][]string{}
	for name := range commands(t) {
		args := strings.Fields(strings.TrimPrefix(name, "tributary "))
		for line := range strings.Lines(help(t, args...)) {
			fields := strings.Fields(line)
			for _, f := range fields[:min(2, len(fields))] {
				if f = strings.TrimSuffix(f, ","); strings.HasPrefix(f, "--") {
					flagLines[f] = append(flagLines[f], strings.TrimSpace(line))
				}
			}
		}
	}
	for _, m := range anyFlag.FindAllStringSubmatch(string(data), -1) {
		if _, ok := flagLines[m[1]]; !ok {
			t.Errorf("README.md names %s, which no command's help has", m[1])
		}
	}
	mentions := flagMention.FindAllStringSubmatch(string(data), -1)
	if len(mentions) == 0 {
		t.Fatal("README.md names no flag in a code span; is the pattern out of date?")
	}
	for _, m := range mentions {
		flag, readmeDefault := m[1], m[2]
		if readmeDefault == "" || len(flagLines[flag]) == 0 {
			continue
		}
		if !slices.ContainsFunc(flagLines[flag], func(line string) bool { return defaultMatches(readmeDefault, line) }) {
			t.Errorf("README.md gives %s the default %q; its help says:\n%s", flag, readmeDefault, strings.Join(flagLines[flag], "\n"))
		}
	}
}

// defaultMatches reports whether readmeDefault is the default helpLine
// gives its flag. For a default in pflag's form, the two must be the same
// value; a default that depends on something (GOMEMLIMIT) is in the help's
// text, and the sizes the README quotes must be those of that text.
func defaultMatches(readmeDefault, helpLine string) bool {
	if m := pflagDefault.FindStringSubmatch(helpLine); m != nil {
		return sameValue(readmeDefault, m[1])
	}
	sizes := quantity.FindAllString(readmeDefault, -1)
	for _, q := range sizes {
		if !strings.Contains(helpLine, q) {
			return false
		}
	}
	return len(sizes) > 0
}

// sameValue compares defaults as the flag would read them: 1h and 1h0m0s
// are one duration.
func sameValue(a, b string) bool {
	if a == b {
		return true
	}
	da, errA := time.ParseDuration(a)
	db, errB := time.ParseDuration(b)
	return errA == nil && errB == nil && da == db
}

// address is a host:port in a client's documentation.
var address = regexp.MustCompile(`\b(?:localhost|[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+):[0-9]+\b`)

// TestClientDocsNameTheServersAddress keeps the clients' documentation
// pointing at the address `tributary serve` listens on by default.
func TestClientDocsNameTheServersAddress(t *testing.T) {
	serverDefault := serveDefaultAddress(t)
	docs := []string{"client/client.go", "client/python/tributary_client.py", "client/node/README.md", "client/node/src/index.js", "client/node/src/client.js"}
	for _, doc := range docs {
		data, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		named := address.FindAll(data, -1)
		if len(named) == 0 {
			t.Errorf("%s names no address; is the pattern out of date?", doc)
		}
		for _, a := range named {
			if !bytes.Equal(a, []byte(serverDefault)) {
				t.Errorf("%s names %s; tributary serve listens on %s by default", doc, a, serverDefault)
			}
		}
	}
}

// TestMakeRunServesTheREADMEAddresses keeps the README's first step true:
// `make run` serves the API, xDS and metrics where the walk-through's
// commands call them.
func TestMakeRunServesTheREADMEAddresses(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	out, err := exec.Command("make", "--no-print-directory", "--dry-run", "-C", root, "run").Output()
	if err != nil {
		t.Fatalf("make --dry-run run: %v", err)
	}
	var serve []string
	for line := range strings.Lines(string(out)) {
		if _, args, ok := strings.Cut(line, "bin/tributary serve"); ok {
			serve = strings.Fields(args)
		}
	}
	if serve == nil {
		t.Fatalf("make run does not run bin/tributary serve:\n%s", out)
	}
	flags := map[string]string{}
	for i := 0; i+1 < len(serve); i += 2 {
		flags[serve[i]] = serve[i+1]
	}
	want := map[string]string{"--xds-address": readmeXDSAddress, "--metrics-address": readmeMetricsAddress}
	if len(serve)%2 != 0 || !maps.Equal(flags, want) {
		t.Errorf("make run runs bin/tributary serve %s; the README's commands need %v (and the default --address)", strings.Join(serve, " "), want)
	}
	if got := serveDefaultAddress(t); got != readmeAddress {
		t.Errorf("tributary serve listens on %s by default; the README's commands call %s", got, readmeAddress)
	}
}

// serveDefaultAddress is where `tributary serve` listens without --address,
// as its help says.
func serveDefaultAddress(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`--address host:port .*\(default "([^"]+)"\)`).FindStringSubmatch(help(t, "serve"))
	if m == nil {
		t.Fatal("tributary serve --help gives no default --address")
	}
	return m[1]
}
