package translate_test

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/internal/envoy"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
)

// FuzzTranslate drives the whole pipeline with settings and object sets
// generated from the fuzz input (internal/objectgen) over a small universe
// of names, so that lookups, weights, duplicates and TLS references collide
// often; with option groups (spec.options, annotations, settings
// defaults) and ExternalName targets. Every run must: not panic, give one
// status per ExtensionService, give a Cluster exactly for the valid ones
// and a ClusterLoadAssignment exactly for those whose Cluster is EDS (a
// STRICT_DNS one holds its endpoints), encode every Cluster and
// ClusterLoadAssignment to the same bytes as marshalling the reference
// protos, and emit only resources that pass ValidateAll and the
// contract's extra checks.
func FuzzTranslate(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		{0, 1, 2, 3, 4, 5, 6, 7, 8, 9},
		bytes.Repeat([]byte{7}, 64),
		[]byte("tributary fuzz seed with some words in it"),
		{255, 254, 253, 252, 1, 0, 1, 0, 200, 100, 50, 25, 12, 6, 3, 1},
		bytes.Repeat([]byte{1, 2, 3, 250}, 40),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkGenerated(t, objectgen.New(objectgen.FromBytes(data), objectgen.Defaults()))
	})
}

// TestTranslateGenerated is FuzzTranslate on seeded random input, so that
// plain `go test` covers far more than the seed corpus.
func TestTranslateGenerated(t *testing.T) {
	n := 500
	if testing.Short() {
		n = 100
	}
	for seed := range uint64(n) {
		checkGenerated(t, objectgen.New(objectgen.FromRand(rand.New(rand.NewPCG(seed, 0x7472616e73))), objectgen.Defaults()))
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

// checkGenerated translates settings and a whole object set drawn from g
// (internal/objectgen, over its small universe with every knob on) and
// checks the Result against checkResult and the reference encoding.
func checkGenerated(t *testing.T, g *objectgen.Generator) {
	t.Helper()
	settings := g.Settings()
	objs := g.Objects()
	got := translate.Translate(objs, settings)
	checkResult(t, objs, got)
	want := translate.TranslateReference(objs, settings)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("fast path differs from the reference encoding (-reference +fast):\n%s", diff)
	}
	// Bounded looks each target up once, for the bound and the build
	// alike; what it builds is Translate's.
	bounded, err := translate.Bounded(context.Background(), objs, settings, translate.Limits{MaxOutputBytes: math.MaxInt64})
	if err != nil {
		t.Fatalf("Bounded without a reachable bound: %v", err)
	}
	if diff := cmp.Diff(got, bounded); diff != "" {
		t.Fatalf("Bounded differs from Translate (-Translate +Bounded):\n%s", diff)
	}
}

// checkResult asserts the invariants every Result must hold.
func checkResult(t *testing.T, objs *source.Objects, res *translate.Result) {
	t.Helper()
	if len(res.Statuses) != len(objs.ExtensionServices) {
		t.Fatalf("got %d statuses for %d ExtensionServices", len(res.Statuses), len(objs.ExtensionServices))
	}
	valid := map[string]bool{}
	for _, st := range res.Statuses {
		if len(st.Condition.Errors) == 0 {
			if st.Condition.Status != model.ConditionTrue {
				t.Errorf("%s/%s: no errors but status %q", st.Namespace, st.Name, st.Condition.Status)
			}
			valid[st.ClusterName] = true
		} else if st.ClusterName != "" {
			t.Errorf("%s/%s: invalid but names cluster %q", st.Namespace, st.Name, st.ClusterName)
		}
	}
	if len(res.Clusters) != len(valid) {
		t.Fatalf("got %d clusters for %d valid ExtensionServices", len(res.Clusters), len(valid))
	}
	var eds []string
	for _, r := range res.Clusters {
		c := new(clusterv3.Cluster)
		if err := proto.Unmarshal(r.Body, c); err != nil {
			t.Fatalf("cluster %s: %v", r.Name, err)
		}
		if err := c.ValidateAll(); err != nil {
			t.Errorf("cluster %s fails ValidateAll: %v", r.Name, err)
		}
		if c.GetName() != r.Name || !valid[r.Name] {
			t.Errorf("cluster %q listed as %q", c.GetName(), r.Name)
		}
		switch c.GetType() {
		case clusterv3.Cluster_EDS:
			eds = append(eds, r.Name)
		case clusterv3.Cluster_STRICT_DNS:
			// Its endpoints are inline, held to what a
			// ClusterLoadAssignment is held to.
			if err := envoy.CheckClusterLoadAssignment(c.GetLoadAssignment()); err != nil || len(c.GetLoadAssignment().GetEndpoints()) == 0 {
				t.Errorf("cluster %s: its load_assignment fails the extra checks (%v) or is empty", r.Name, err)
			}
		default:
			t.Errorf("cluster %s is of type %v", r.Name, c.GetType())
		}
	}
	var withCLA []string
	for _, r := range res.ClusterLoadAssignments {
		withCLA = append(withCLA, r.Name)
	}
	if !slices.Equal(eds, withCLA) {
		t.Fatalf("the EDS clusters are %q, the CLAs %q; want one CLA per EDS cluster, in order", eds, withCLA)
	}
	for _, r := range res.ClusterLoadAssignments {
		cla := new(endpointv3.ClusterLoadAssignment)
		if err := proto.Unmarshal(r.Body, cla); err != nil {
			t.Fatalf("CLA %s: %v", r.Name, err)
		}
		if err := cla.ValidateAll(); err != nil {
			t.Errorf("CLA %s fails ValidateAll: %v", r.Name, err)
		}
		if err := envoy.CheckClusterLoadAssignment(cla); err != nil {
			t.Errorf("CLA %s fails the extra checks: %v", r.Name, err)
		}
		if cla.GetClusterName() != r.Name {
			t.Errorf("CLA %q listed as %q", cla.GetClusterName(), r.Name)
		}
	}
}
