package xds_test

import (
	"slices"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/tributary-dev/tributary/internal/xds"
)

// A group's types are sorted by type URL, every time: the group keeps them
// in a map, whose order is random.
func TestGroupTypesSorted(t *testing.T) {
	p, _ := startServer(t, xds.Options{})
	_, res := translated(2, 1)
	mustOpen(t, p, "edge", xds.PublicationOptions{}).Apply(everything(res))
	want := []string{resourcev3.ClusterType, resourcev3.EndpointType}
	for range 50 {
		groups := p.Groups(false)
		if len(groups) != 1 {
			t.Fatalf("groups %+v, want edge only", groups)
		}
		var got []string
		for _, ts := range groups[0].Types {
			got = append(got, ts.TypeURL)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("types %q, want %q", got, want)
		}
	}
}
