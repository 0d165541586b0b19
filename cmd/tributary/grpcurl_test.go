package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/testproc"
)

// hangGuard bounds each external step so that a hung process fails the test
// with a message instead of stalling it until the global timeout. It is not
// a performance expectation.
const hangGuard = 2 * time.Minute

// TestMain removes the binary TestGRPCurl builds.
func TestMain(m *testing.M) {
	code := m.Run()
	testproc.RemoveBuilds()
	os.Exit(code)
}

// TestGRPCurl runs the real binary and talks to it with the real grpcurl,
// exactly as the README tells users to: reflection lists and describes our
// API, Translate answers examples/grpc/translate-request.json with every Envoy
// resource expanded from its Any, and SIGTERM ends the server cleanly.
func TestGRPCurl(t *testing.T) {
	// bin/grpcurl, from `make tools`: without it the test skips, unless CI
	// is set.
	grpcurl := testproc.Tool(t, "grpcurl")
	ctx, cancel := context.WithTimeout(context.Background(), 4*hangGuard)
	defer cancel()

	srv := testproc.Start(t, testproc.Build(t), "serve", "--address", "127.0.0.1:0")

	grpcurlRun := func(stdin io.Reader, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, hangGuard)
		defer cancel()
		cmd := exec.CommandContext(ctx, grpcurl, append([]string{"-plaintext"}, args...)...)
		cmd.Stdin = stdin
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("grpcurl %s: %v\nstdout:\n%s\nstderr:\n%s\nserver log:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String(), srv.Log())
		}
		return stdout.String()
	}

	t.Run("list", func(t *testing.T) {
		services := strings.Fields(grpcurlRun(nil, srv.Address, "list"))
		for _, want := range []string{"tributary.v1.TranslationService", "grpc.health.v1.Health"} {
			if !slices.Contains(services, want) {
				t.Errorf("grpcurl list = %q, want it to include %s", services, want)
			}
		}
	})

	t.Run("describe", func(t *testing.T) {
		// grpcurl cannot know this type on its own: describing it proves
		// the server's reflection, and the comments prove it serves the
		// descriptors with their source info (internal/apidocs).
		out := grpcurlRun(nil, srv.Address, "describe", "tributary.v1.TranslateRequest")
		for _, want := range []string{
			"tributary.v1.TranslateRequest is a message:",
			"// TranslateRequest is a complete set of input objects.\nmessage TranslateRequest {",
			"  // Translator-wide settings.\n",
			".tributary.v1.Settings settings = 1;",
			"repeated .tributary.v1.KubernetesObject objects = 2;",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("describe output lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("Translate", func(t *testing.T) {
		req, err := os.Open("../../examples/grpc/translate-request.json")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = req.Close() }()
		out := grpcurlRun(req, "-d", "@", srv.Address, "tributary.v1.TranslationService/Translate")
		// grpcurl exits 0 even when it cannot resolve an Any; it prints
		// "@error" in its place.
		if strings.Contains(out, "@error") {
			t.Fatalf("an Any was not expanded:\n%s", out)
		}
		checkExampleTranslation(t, out)
	})

	srv.Signal(t, syscall.SIGTERM)
	if code := srv.Wait(t, hangGuard); code != 0 {
		t.Fatalf("after SIGTERM the server exited with %d, want 0\nserver log:\n%s", code, srv.Log())
	}
	if log := srv.Log(); !strings.Contains(log, `msg=stopped`) {
		t.Errorf("server log does not end with a clean stop:\n%s", log)
	}
}

// checkExampleTranslation checks grpcurl's JSON for the example: the exact
// resource names, each Any expanded, and the 80/20 split over the ready
// endpoints only.
func checkExampleTranslation(t *testing.T, out string) {
	t.Helper()
	type resource struct {
		Name     string         `json:"name"`
		Version  string         `json:"version"`
		Resource map[string]any `json:"resource"`
	}
	var resp struct {
		Clusters               []resource `json:"clusters"`
		ClusterLoadAssignments []resource `json:"clusterLoadAssignments"`
		Statuses               []struct {
			Namespace, Name, ClusterName, ResponseTimeout string
			Conditions                                    []struct{ Type, Status, Reason string }
		} `json:"statuses"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("grpcurl output is not JSON: %v\n%s", err, out)
	}
	const name = "extension/auth/ext-authz"
	checkResource := func(kind string, rs []resource, typeURL, nameField string) {
		t.Helper()
		if len(rs) != 1 {
			t.Fatalf("%d %s, want 1:\n%s", len(rs), kind, out)
		}
		r := rs[0]
		if r.Name != name || r.Version == "" {
			t.Errorf("%s name %q version %q, want name %q and a version", kind, r.Name, r.Version, name)
		}
		if got := r.Resource["@type"]; got != typeURL {
			t.Errorf("%s @type = %v, want %s", kind, got, typeURL)
		}
		if got := r.Resource[nameField]; got != name {
			t.Errorf("%s %s = %v, want %s (the Any was not expanded?)", kind, nameField, got, name)
		}
	}
	checkResource("clusters", resp.Clusters, "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name")
	checkResource("clusterLoadAssignments", resp.ClusterLoadAssignments, "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment", "clusterName")

	if len(resp.Statuses) != 1 || len(resp.Statuses[0].Conditions) != 1 {
		t.Fatalf("want one status with one condition:\n%s", out)
	}
	st := resp.Statuses[0]
	if st.ClusterName != name || st.Conditions[0].Status != "True" || st.ResponseTimeout != "500ms" {
		t.Errorf("status = %+v, want valid, clusterName %s, responseTimeout 500ms", st, name)
	}

	// The localities, re-encoded to keep only what the split depends on.
	type locality struct {
		Weight    float64
		Endpoints []string
	}
	var got []locality
	cla := resp.ClusterLoadAssignments[0].Resource
	for _, l := range asSlice(cla["endpoints"]) {
		lm := asMap(l)
		loc := locality{}
		if w, ok := lm["loadBalancingWeight"].(float64); ok {
			loc.Weight = w
		}
		for _, e := range asSlice(lm["lbEndpoints"]) {
			sa := asMap(asMap(asMap(asMap(e)["endpoint"])["address"])["socketAddress"])
			addr, _ := sa["address"].(string)
			port, _ := sa["portValue"].(float64)
			loc.Endpoints = append(loc.Endpoints, addr+":"+jsonNumber(port))
		}
		got = append(got, loc)
	}
	want := []locality{
		{Weight: 80, Endpoints: []string{"10.244.1.17:9000", "10.244.2.9:9000", "10.244.3.21:9000"}},
		{Weight: 20, Endpoints: []string{"10.244.2.30:9000"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("localities (-want +got):\n%s\nfull output:\n%s", d, out)
	}
}

func asSlice(v any) []any         { s, _ := v.([]any); return s }
func asMap(v any) map[string]any  { m, _ := v.(map[string]any); return m }
func jsonNumber(f float64) string { b, _ := json.Marshal(f); return string(b) }
