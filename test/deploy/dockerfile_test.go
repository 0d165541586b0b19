package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// Images cannot be built on the machines that run these tests (no
// container engine), so the Dockerfile is read instead: what it must get
// right is small, and each check below is a mistake that would otherwise
// surface only in a cluster.

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line    int
	keyword string // upper case
	args    string
}

// stage is one FROM and the instructions after it.
type stage struct {
	name, image  string
	instructions []instruction
}

func (s stage) all(keyword string) []instruction {
	var found []instruction
	for _, in := range s.instructions {
		if in.keyword == keyword {
			found = append(found, in)
		}
	}
	return found
}

// parseDockerfile splits path into stages. It reads the syntax this
// repository uses: comments, blank lines, backslash continuations.
func parseDockerfile(t *testing.T, path string) (args map[string]string, stages []stage) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	args = map[string]string{}
	var (
		pending   strings.Builder
		startLine int
	)
	scanner := bufio.NewScanner(f)
	for n := 1; scanner.Scan(); n++ {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if pending.Len() == 0 {
			startLine = n
		}
		text, continued := strings.CutSuffix(line, "\\")
		pending.WriteString(text + " ")
		if continued {
			continue
		}
		keyword, rest, _ := strings.Cut(strings.TrimSpace(pending.String()), " ")
		pending.Reset()
		in := instruction{line: startLine, keyword: strings.ToUpper(keyword), args: strings.Join(strings.Fields(rest), " ")}
		switch {
		case in.keyword == "FROM":
			fields := strings.Fields(in.args)
			fields = slices.DeleteFunc(fields, func(f string) bool { return strings.HasPrefix(f, "--") })
			s := stage{image: fields[0]}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				s.name = fields[2]
			}
			stages = append(stages, s)
		case len(stages) == 0:
			if in.keyword == "ARG" {
				name, value, _ := strings.Cut(in.args, "=")
				args[name] = value
			}
		default:
			stages[len(stages)-1].instructions = append(stages[len(stages)-1].instructions, in)
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	if pending.Len() > 0 {
		t.Fatalf("%s ends in a continuation", path)
	}
	return args, stages
}

func TestDockerfile(t *testing.T) {
	_, stages := parseDockerfile(t, "../../Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("%d stages; want a build stage and a runtime stage", len(stages))
	}
	final := stages[len(stages)-1]
	if final.image != "scratch" && !strings.HasPrefix(final.image, "gcr.io/distroless/static") {
		t.Errorf("the final stage is FROM %s; want scratch or gcr.io/distroless/static (no shell, no libc)", final.image)
	}
	if runs := final.all("RUN"); len(runs) > 0 {
		t.Errorf("line %d: RUN in the final stage, which has no shell", runs[0].line)
	}

	// The binary: built static in an earlier stage, copied into the final
	// one, and run as the entrypoint.
	var binary string
	buildStages := map[string]bool{}
	for _, s := range stages[:len(stages)-1] {
		for _, run := range s.all("RUN") {
			if !strings.Contains(run.args, "go build") || !strings.Contains(run.args, "./cmd/tributary") {
				continue
			}
			if !strings.Contains(run.args, "CGO_ENABLED=0") {
				t.Errorf("line %d: go build without CGO_ENABLED=0 links libc, which the final stage lacks", run.line)
			}
			if m := regexp.MustCompile(`-o (\S+)`).FindStringSubmatch(run.args); m != nil {
				binary = m[1]
				buildStages[s.name] = true
			}
		}
	}
	if binary == "" {
		t.Fatal("no stage runs go build -o ... ./cmd/tributary")
	}
	var installed string
	for _, cp := range final.all("COPY") {
		fields := strings.Fields(cp.args)
		if len(fields) == 3 && buildStages[strings.TrimPrefix(fields[0], "--from=")] && fields[1] == binary {
			installed = fields[2]
		}
	}
	if installed == "" {
		t.Fatalf("the final stage does not COPY --from the build stage's %s", binary)
	}
	entrypoints := final.all("ENTRYPOINT")
	var entrypoint []string
	if len(entrypoints) != 1 || json.Unmarshal([]byte(entrypoints[0].args), &entrypoint) != nil ||
		!slices.Equal(entrypoint, []string{installed}) {
		t.Errorf("ENTRYPOINT %v; want the exec form [%q]: the Deployment passes only args", entrypoints, installed)
	}

	// The BuildKit frontend named by a syntax directive is pulled like a
	// base image, and pinned like one.
	if frontend := syntaxDirective(t, "../../Dockerfile"); frontend != "" {
		if _, _, err := pinnedImage(frontend); err != nil {
			t.Errorf("# syntax=%s: %v", frontend, err)
		}
	}

	// Every base image is pinned: a tag for the reader and a digest for
	// the pull. A stage built FROM an earlier stage is not an image.
	stageNames := map[string]bool{}
	var golangTags []string
	for _, s := range stages {
		if !stageNames[s.image] {
			name, tag, err := pinnedImage(s.image)
			if err != nil {
				t.Errorf("FROM %s: %v", s.image, err)
			} else if path.Base(name) == "golang" {
				golangTags = append(golangTags, tag)
			}
		}
		if s.name != "" {
			stageNames[s.name] = true
		}
	}

	// Go: the toolchain the image builds with is the one go.mod asks for.
	// The official golang image sets GOTOOLCHAIN=local, so it must be the
	// same major and minor release and at least go.mod's patch release.
	goMod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)`).FindSubmatch(goMod)
	if m == nil {
		t.Fatal("no go directive in ../go.mod")
	}
	want, ok := parseGoVersion(string(m[1]))
	if !ok {
		t.Fatalf("go.mod's go directive %q is not a Go version", m[1])
	}
	if len(golangTags) == 0 {
		t.Error("no stage is FROM the golang image")
	}
	for _, tag := range golangTags {
		got, ok := parseGoVersion(tag)
		if !ok || got[0] != want[0] || got[1] != want[1] || got[2] < want[2] {
			t.Errorf("FROM golang:%s; go.mod wants go %s (same minor release, at least that patch)", tag, m[1])
		}
	}

	// The user and the ports agree with the Deployment.
	d := one[*appsv1.Deployment](t, build(t, "base"), "tributary")
	users := final.all("USER")
	if len(users) == 0 {
		t.Fatal("the final stage sets no USER: the image would run as root")
	}
	uid, gid, _ := strings.Cut(users[len(users)-1].args, ":")
	psc := d.Spec.Template.Spec.SecurityContext
	if n, err := strconv.ParseInt(uid, 10, 64); err != nil || n == 0 {
		t.Errorf("USER %s: want a numeric non-root uid, which the kubelet can check against runAsNonRoot", users[len(users)-1].args)
	} else if n != deref(psc.RunAsUser) {
		t.Errorf("USER %s, but the Deployment runs as %d", uid, deref(psc.RunAsUser))
	}
	if n, err := strconv.ParseInt(gid, 10, 64); err != nil || n != deref(psc.RunAsGroup) {
		t.Errorf("USER group %q, but the Deployment's runAsGroup is %d", gid, deref(psc.RunAsGroup))
	}
	var exposed, declared []string
	for _, e := range final.all("EXPOSE") {
		exposed = append(exposed, strings.Fields(e.args)...)
	}
	for _, p := range container(t, d).Ports {
		declared = append(declared, strconv.Itoa(int(p.ContainerPort)))
	}
	slices.Sort(exposed)
	slices.Sort(declared)
	if !slices.Equal(exposed, declared) {
		t.Errorf("EXPOSE %v; the Deployment declares %v", exposed, declared)
	}
}

// syntaxDirective returns the image of the Dockerfile's "# syntax="
// parser directive, or "" without one. Directives come before anything
// else, comments included.
func syntaxDirective(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		directive, ok := strings.CutPrefix(strings.TrimSpace(line), "#")
		if !ok {
			return ""
		}
		key, value, ok := strings.Cut(directive, "=")
		if !ok {
			return ""
		}
		if strings.EqualFold(strings.TrimSpace(key), "syntax") {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

// digestRef matches what follows the "@" of a pinned image reference.
var digestRef = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// pinnedImage splits an image reference of the form name:tag@sha256:<hex>
// into its name and tag. Anything else is an error: no digest (the tag
// alone may point at other bytes tomorrow), no tag (the digest alone says
// nothing to a reader or to a bump bot), or a build argument in it (the
// image would depend on how the build is invoked).
func pinnedImage(ref string) (name, tag string, err error) {
	if strings.Contains(ref, "$") {
		return "", "", fmt.Errorf("the image depends on a build argument")
	}
	named, digest, ok := strings.Cut(ref, "@")
	if !ok {
		return "", "", fmt.Errorf("no digest: want name:tag@sha256:<64 hex digits>")
	}
	if !digestRef.MatchString(digest) {
		return "", "", fmt.Errorf("digest %q is not sha256:<64 lower-case hex digits>", digest)
	}
	slash := strings.LastIndex(named, "/")
	colon := strings.LastIndex(named, ":")
	if colon <= slash || colon == len(named)-1 {
		return "", "", fmt.Errorf("no tag beside the digest: want name:tag@sha256:<64 hex digits>")
	}
	return named[:colon], named[colon+1:], nil
}

func TestPinnedImage(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		ref, name, tag string
		ok             bool
	}{
		{"golang:1.26.8-bookworm@" + digest, "golang", "1.26.8-bookworm", true},
		{"gcr.io/distroless/static-debian12:nonroot@" + digest, "gcr.io/distroless/static-debian12", "nonroot", true},
		{"registry.example.com:5000/tools/go:1.26@" + digest, "registry.example.com:5000/tools/go", "1.26", true},
		{"golang:1.26", "", "", false},
		{"golang@" + digest, "", "", false},
		{"registry.example.com:5000/go@" + digest, "", "", false},
		{"golang:1.26@sha256:0123", "", "", false},
		{"golang:1.26@sha256:" + strings.Repeat("A", 64), "", "", false},
		{"golang:${GO_VERSION}@" + digest, "", "", false},
	} {
		name, tag, err := pinnedImage(c.ref)
		if ok := err == nil; ok != c.ok || name != c.name || tag != c.tag {
			t.Errorf("pinnedImage(%q) = %q, %q, %v; want %q, %q, ok %v", c.ref, name, tag, err, c.name, c.tag, c.ok)
		}
	}
}

// parseGoVersion reads the release at the start of a Go version or a
// golang image tag ("1.26", "1.26.8", "1.26.8-bookworm") as major, minor
// and patch; a missing patch is 0.
func parseGoVersion(s string) ([3]int, bool) {
	m := regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?(?:$|-)`).FindStringSubmatch(s)
	if m == nil {
		return [3]int{}, false
	}
	var v [3]int
	for i, part := range m[1:] {
		if part != "" {
			v[i], _ = strconv.Atoi(part)
		}
	}
	return v, true
}

// TestDockerignoreKeepsSources checks that the build context still holds
// every file `go build ./cmd/tributary` reads: .dockerignore excludes a
// lot, and a package it drops breaks only the image build.
func TestDockerignoreKeepsSources(t *testing.T) {
	patterns := readDockerignore(t, "../../.dockerignore")
	// The packages of this repository's modules: the main one and those
	// its go.mod replaces with a folder of the checkout (client, gen/go).
	out, err := exec.Command("go", "list", "-C", "../..", "-deps",
		"-f", `{{if .Module}}{{if or .Module.Main .Module.Replace}}{{.Dir}}{{end}}{{end}}`, "./cmd/tributary").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	needed := []string{"go.mod", "go.sum", "client/go.mod", "client/go.sum", "gen/go/go.mod", "gen/go/go.sum"}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		needed = append(needed, filepath.ToSlash(rel))
	}
	if len(needed) < 4 {
		t.Fatalf("go list found only %v", needed)
	}
	for _, path := range needed {
		if excluded(patterns, path) {
			t.Errorf(".dockerignore excludes %s, which the build needs", path)
		}
	}
	for _, path := range []string{".git", "bin", "client/node/node_modules", "tools/buf/node_modules"} {
		if !excluded(patterns, path) {
			t.Errorf(".dockerignore keeps %s in the build context", path)
		}
	}
}

func readDockerignore(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	return patterns
}

// excluded applies .dockerignore's rules to path (slash-separated,
// relative to the context): a path is excluded when it or a parent
// directory matches, the last matching pattern deciding, and "!" negating.
// It knows the subset of the syntax the file uses: filepath.Match patterns
// and a leading "**/".
func excluded(patterns []string, path string) bool {
	parts := strings.Split(path, "/")
	result := false
	for _, pattern := range patterns {
		negate := strings.HasPrefix(pattern, "!")
		pattern = strings.TrimPrefix(strings.TrimPrefix(pattern, "!"), "/")
		for i := 1; i <= len(parts); i++ {
			if matchIgnore(pattern, parts[:i]) {
				result = !negate
				break
			}
		}
	}
	return result
}

func matchIgnore(pattern string, parts []string) bool {
	if rest, ok := strings.CutPrefix(pattern, "**/"); ok {
		for i := range parts {
			if matchIgnore(rest, parts[i:]) {
				return true
			}
		}
		return false
	}
	ok, err := filepath.Match(pattern, strings.Join(parts, "/"))
	return err == nil && ok
}
