package endpoints

import (
	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
)

// generatorOptions are the shared generator's (internal/objectgen) with
// every knob on, over a universe of this package's namespace and another,
// three Services and five slices.
func generatorOptions() objectgen.Options {
	o := objectgen.Defaults()
	o.Universe.Namespaces = []string{testNamespace, "other"}
	o.Universe.Services = []string{"s0", "s1", "s2"}
	o.Universe.EndpointSlices = []string{"sl0", "sl1", "sl2", "sl3", "sl4"}
	return o
}

// generateTargets draws one to four targets, repeats and all: a Service
// port named twice is the model's to merge, but nothing stops two Service
// ports of one name (or both unnamed) from reaching a Collector. "s3" is a
// Service no slice is labelled for.
func generateTargets(g *objectgen.Generator) []Target {
	targets := make([]Target, 1+g.IntN(4))
	for i := range targets {
		targets[i] = Target{
			Service:  objectgen.Pick(g, "s0", "s1", "s2", "s3"),
			PortName: objectgen.Pick(g, "", "http", "http", "grpc"),
			Port:     objectgen.Pick[int32](g, 80, 90),
		}
	}
	return targets
}

// editSlices applies one edit of the shared generator to the slices of x.
func editSlices(g *objectgen.Generator, x *testIndex) {
	current := make([]source.EndpointSlice, 0, len(x.byName))
	for _, es := range x.byName {
		current = append(current, *es)
	}
	edit := g.EditEndpointSlices(current)
	if edit.Delete != nil {
		x.delete(*edit.Delete)
		return
	}
	x.put(edit.Put)
}
