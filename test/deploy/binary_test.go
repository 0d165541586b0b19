package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The tests here hold the manifests to the binary they deploy: the
// Deployment's arguments must be flags `tributary serve` has, and the
// binary, started with exactly those arguments, must answer the probes.

var built struct {
	once       sync.Once
	path, temp string
	err        error
}

// tributaryBinary returns $TRIBUTARY_BIN (make deploy-test passes
// bin/tributary), or a binary built once from this repository.
func tributaryBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if p := os.Getenv("TRIBUTARY_BIN"); p != "" {
			built.path = p
			return
		}
		built.temp, built.err = os.MkdirTemp("", "deploy-test-")
		if built.err != nil {
			return
		}
		built.path = filepath.Join(built.temp, "tributary")
		cmd := exec.Command("go", "build", "-o", built.path, "./cmd/tributary")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./cmd/tributary: %w\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.temp != "" {
		_ = os.RemoveAll(built.temp)
	}
	os.Exit(code)
}

// flagLine matches a flag's line in `tributary serve -h`, as pflag prints
// it: "      --address host:port" or "  -h, --help".
var flagLine = regexp.MustCompile(`(?m)^ {2,}(?:-[a-zA-Z], )?--([a-z0-9][a-z0-9-]*)\b`)

// serveFlags returns the names of the flags `tributary serve -h` lists.
func serveFlags(t *testing.T) map[string]bool {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(tributaryBinary(t), "serve", "-h")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tributary serve -h: %v\n%s", err, stderr.String())
	}
	flags := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(stdout.String()+stderr.String(), -1) {
		flags[m[1]] = true
	}
	if !flags["address"] || !flags["log-level"] {
		t.Fatalf("tributary serve -h lists %v; the parser no longer understands its output:\n%s", flags, stderr.String())
	}
	return flags
}

// serveArgs returns the tributary container's flags, by name, failing the
// test unless its arguments are "serve" and then --name=value flags, each
// given once.
func serveArgs(t *testing.T, d *appsv1.Deployment) map[string]string {
	t.Helper()
	c := container(t, d)
	if len(c.Command) > 0 {
		t.Errorf("the container sets command %q; the image's entrypoint is the binary", c.Command)
	}
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("container args %q do not start with serve", c.Args)
	}
	flags := map[string]string{}
	for _, arg := range c.Args[1:] {
		name, value, ok := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if !strings.HasPrefix(arg, "--") || !ok {
			t.Errorf("container arg %q is not of the form --name=value", arg)
			continue
		}
		if _, dup := flags[name]; dup {
			t.Errorf("--%s is given twice", name)
		}
		flags[name] = value
	}
	return flags
}

func TestContainerArgsAreServeFlags(t *testing.T) {
	known := serveFlags(t)
	eachBuild(t, func(t *testing.T, objs []object) {
		d := one[*appsv1.Deployment](t, objs, "tributary")
		for name := range serveArgs(t, d) {
			if !known[name] {
				t.Errorf("--%s is not a flag of tributary serve", name)
			}
		}
	})
}

// TestContainerArgsListen checks the listen addresses against the ports:
// a port the container declares but the binary does not listen on (or a
// loopback address, the binary's default) leaves every Service empty.
func TestContainerArgsListen(t *testing.T) {
	eachBuild(t, func(t *testing.T, objs []object) {
		d := one[*appsv1.Deployment](t, objs, "tributary")
		c := container(t, d)
		args := serveArgs(t, d)
		for port, flag := range listenFlags {
			number, ok := containerPort(c, port)
			if !ok {
				t.Errorf("the container has no port %s", port)
				continue
			}
			if want := fmt.Sprintf("0.0.0.0:%d", number); args[flag] != want {
				t.Errorf("--%s=%s; want %s, every interface on the %s port", flag, args[flag], want, port)
			}
		}
		// The kubelet sends SIGKILL after the grace period; Tributary's own
		// drain must end before that.
		timeout, err := time.ParseDuration(args["shutdown-timeout"])
		if err != nil {
			t.Fatalf("--shutdown-timeout: %v", err)
		}
		if grace := time.Duration(deref(d.Spec.Template.Spec.TerminationGracePeriodSeconds)) * time.Second; grace <= timeout {
			t.Errorf("terminationGracePeriodSeconds %s is not longer than --shutdown-timeout %s", grace, timeout)
		}
	})
}

// TestContainerArgsTLSFiles checks that the TLS flags name the files of
// the mounted Secret, under the keys a kubernetes.io/tls Secret (and
// cert-manager) uses.
func TestContainerArgsTLSFiles(t *testing.T) {
	eachBuild(t, func(t *testing.T, objs []object) {
		d := one[*appsv1.Deployment](t, objs, "tributary")
		c := container(t, d)
		args := serveArgs(t, d)
		for flag, key := range map[string]string{"tls-cert-file": "tls.crt", "tls-key-file": "tls.key", "tls-client-ca-file": "ca.crt"} {
			path, ok := args[flag]
			if !ok {
				t.Errorf("--%s is not set: the gRPC and xDS ports would accept anyone", flag)
				continue
			}
			dir, file := filepath.Split(path)
			if file != key {
				t.Errorf("--%s=%s; want the Secret key %s", flag, path, key)
			}
			mount := mountAt(c, filepath.Clean(dir))
			if mount == nil {
				t.Errorf("--%s=%s is not in a mounted volume", flag, path)
				continue
			}
			if !mount.ReadOnly || mount.SubPath != "" {
				t.Errorf("volume mount %s: want read-only and no subPath (a subPath never sees a rotated Secret)", mount.Name)
			}
			if v := volume(d, mount.Name); v == nil || v.Secret == nil || v.Secret.SecretName != "tributary-tls" {
				t.Errorf("--%s=%s is not in the tributary-tls Secret", flag, path)
			} else if mode := deref(v.Secret.DefaultMode); mode&0o007 != 0 {
				t.Errorf("Secret volume mode %#o lets any user read the private key", mode)
			}
		}
	})
}

// TestContainerArgsServe starts the binary with the Deployment's own
// arguments (loopback addresses on ports the kernel picks, and generated
// TLS files in place of the Secret's) and asks its probe endpoints what the
// kubelet would. It ends with SIGTERM, which must stop it cleanly.
func TestContainerArgsServe(t *testing.T) {
	bin := tributaryBinary(t)
	eachBuild(t, func(t *testing.T, objs []object) {
		d := one[*appsv1.Deployment](t, objs, "tributary")
		c := container(t, d)
		tlsDir := writeTLSFiles(t)
		var args []string
		ports := map[string]string{}
		for _, arg := range c.Args {
			args = append(args, rewriteArg(arg, tlsDir, ports))
		}
		proc := start(t, bin, args...)
		listenedAddresses(t, proc, ports)

		metrics := ports["metrics-address"]
		for _, p := range []struct{ name, path string }{
			{"readiness", c.ReadinessProbe.HTTPGet.Path},
			{"liveness", c.LivenessProbe.HTTPGet.Path},
		} {
			if err := waitForOK("http://"+metrics+p.path, proc); err != nil {
				t.Fatalf("%s probe: %v", p.name, err)
			}
		}
		// What Prometheus is told to scrape answers too.
		paths := scrapePaths(t, objs)
		if len(paths) == 0 {
			t.Error("nothing tells Prometheus where to scrape")
		}
		for _, path := range paths {
			if err := waitForOK("http://"+metrics+path, proc); err != nil {
				t.Errorf("scrape of %s: %v", path, err)
			}
		}
		// The TLS flags are in effect on both gRPC ports: Contour gets into
		// the Sync port and Envoy into the xDS port, and where the
		// Deployment sets allowlists, neither gets into the other's.
		flags := serveArgs(t, d)
		for _, p := range []struct{ port, allowlist, identity, other string }{
			{"address", "tls-allowed-client-sans", "contour", "envoy"},
			{"xds-address", "xds-tls-allowed-client-sans", "envoy", "contour"},
		} {
			var refused []string
			if _, ok := flags[p.allowlist]; ok {
				refused = append(refused, p.other)
			}
			checkMutualTLS(t, ports[p.port], tlsDir, p.identity, refused...)
		}

		if err := proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		<-proc.done
		if err := proc.err; err != nil {
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				t.Errorf("tributary exited with %d after the signal, want 0", exit.ExitCode())
			} else {
				t.Error(err)
			}
		}
		checkLogFormat(t, flags["log-format"], proc.stderr.String())
	})
}

// TestContainerArgsLogFormat checks that the Deployment logs JSON, one
// object a line, which log collectors parse without a pattern written for
// Tributary; TestContainerArgsServe checks that the binary, so started,
// writes nothing else.
func TestContainerArgsLogFormat(t *testing.T) {
	eachBuild(t, func(t *testing.T, objs []object) {
		if got := serveArgs(t, one[*appsv1.Deployment](t, objs, "tributary"))["log-format"]; got != "json" {
			t.Errorf("--log-format=%q, want json", got)
		}
	})
}

// checkLogFormat checks that every line of log is a record in format
// (text, the default when format is empty, or json).
func checkLogFormat(t *testing.T, format, log string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatal("tributary logged nothing")
	}
	for i, line := range lines {
		switch format {
		case "json":
			var record struct {
				Time, Level, Msg string
			}
			if err := json.Unmarshal([]byte(line), &record); err != nil || record.Time == "" || record.Level == "" || record.Msg == "" {
				t.Errorf("log line %d is not a JSON record with time, level and msg: %s", i+1, line)
			}
		case "", "text":
			if !strings.HasPrefix(line, "time=") {
				t.Errorf("log line %d is not a text record: %s", i+1, line)
			}
		default:
			t.Fatalf("--log-format=%s: not a format this test knows", format)
		}
	}
}

// TestSessionLimitsFitMemory checks that the sessions the Deployment
// allows, each at its byte limit, and the requests in flight at theirs
// (--max-inflight-bytes, by default a quarter of GOMEMLIMIT, which follows
// the memory limit) fit in the container's memory limit with 15% left for
// the xDS caches and the runtime: otherwise the kernel, not the server's
// own limits, refuses the last session, and takes every other session down
// with it.
func TestSessionLimitsFitMemory(t *testing.T) {
	eachBuild(t, func(t *testing.T, objs []object) {
		d := one[*appsv1.Deployment](t, objs, "tributary")
		args := serveArgs(t, d)
		sessions, err := strconv.ParseInt(args["max-sessions"], 10, 64)
		if err != nil {
			t.Fatalf("--max-sessions=%q: %v (the default allows far more sessions than any pod holds)", args["max-sessions"], err)
		}
		perSession, err := parseQuantity(args["max-session-bytes"])
		if err != nil {
			t.Fatalf("--max-session-bytes=%q: %v", args["max-session-bytes"], err)
		}
		limit, ok := container(t, d).Resources.Limits[corev1.ResourceMemory]
		if !ok {
			t.Fatal("no memory limit")
		}
		inflight := limit.Value() / 4
		if v, ok := args["max-inflight-bytes"]; ok {
			if inflight, err = parseQuantity(v); err != nil {
				t.Fatalf("--max-inflight-bytes=%q: %v", v, err)
			}
		}
		if total := sessions*perSession + inflight; total*100 > limit.Value()*85 {
			t.Errorf("%d sessions of %d bytes and %d bytes in flight need %d bytes, over 85%% of the %s memory limit", sessions, perSession, inflight, total, limit.String())
		}
	})
}

// parseQuantity reads a size as the binary's size flags take it: a
// Kubernetes quantity (96Mi, 1Gi, or a number of bytes).
func parseQuantity(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, err
	}
	return q.Value(), nil
}
