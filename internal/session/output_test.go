package session_test

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
)

// output is a session's output as a client accumulates it from deltas.
type output struct {
	Clusters               map[string]translate.Resource
	ClusterLoadAssignments map[string]translate.Resource
	Statuses               map[source.NamespacedName]model.Status
}

func newOutput() *output {
	return &output{
		Clusters:               map[string]translate.Resource{},
		ClusterLoadAssignments: map[string]translate.Resource{},
		Statuses:               map[source.NamespacedName]model.Status{},
	}
}

// outputOf is the output a Translate result stands for.
func outputOf(r *translate.Result) *output {
	out := newOutput()
	for _, c := range r.Clusters {
		out.Clusters[c.Name] = c
	}
	for _, c := range r.ClusterLoadAssignments {
		out.ClusterLoadAssignments[c.Name] = c
	}
	for _, st := range r.Statuses {
		out.Statuses[st.NamespacedName()] = st
	}
	return out
}

// apply applies d to out, returning the problems that show d was not a
// minimal, well-formed delta against out: an entry that changes nothing
// (a resource or status sent again unchanged, a removal of something
// absent), a name listed twice, or lists out of the documented order.
func (out *output) apply(d *translate.Changes) []string {
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	for _, list := range []struct {
		kind    string
		changed []translate.Resource
		removed []string
		have    map[string]translate.Resource
	}{
		{"cluster", d.Clusters, d.RemovedClusters, out.Clusters},
		{"CLA", d.ClusterLoadAssignments, d.RemovedClusterLoadAssignments, out.ClusterLoadAssignments},
	} {
		if !slices.IsSortedFunc(list.changed, func(a, b translate.Resource) int { return strings.Compare(a.Name, b.Name) }) {
			problem("%ss not sorted by name", list.kind)
		}
		if !slices.IsSorted(list.removed) {
			problem("removed %ss not sorted", list.kind)
		}
		seen := map[string]bool{}
		for _, r := range list.changed {
			if seen[r.Name] {
				problem("%s %s listed twice", list.kind, r.Name)
			}
			seen[r.Name] = true
			if old, ok := list.have[r.Name]; ok && old.Version == r.Version {
				problem("%s %s sent again at the same version %s", list.kind, r.Name, r.Version)
			}
			list.have[r.Name] = r
		}
		for _, name := range list.removed {
			if seen[name] {
				problem("%s %s listed twice", list.kind, name)
			}
			seen[name] = true
			if _, ok := list.have[name]; !ok {
				problem("%s %s removed but absent", list.kind, name)
			}
			delete(list.have, name)
		}
	}

	if !slices.IsSortedFunc(d.Statuses, func(a, b model.Status) int { return a.NamespacedName().Compare(b.NamespacedName()) }) {
		problem("statuses not sorted by namespace and name")
	}
	if !slices.IsSortedFunc(d.RemovedStatuses, source.NamespacedName.Compare) {
		problem("removed statuses not sorted by namespace and name")
	}
	seen := map[source.NamespacedName]bool{}
	for _, st := range d.Statuses {
		name := st.NamespacedName()
		if seen[name] {
			problem("status %s listed twice", name)
		}
		seen[name] = true
		if old, ok := out.Statuses[name]; ok && cmp.Equal(old, st, statusEquality) {
			problem("status %s sent again unchanged", name)
		}
		out.Statuses[name] = st
	}
	for _, name := range d.RemovedStatuses {
		if seen[name] {
			problem("status %s listed twice", name)
		}
		seen[name] = true
		if _, ok := out.Statuses[name]; !ok {
			problem("status %s removed but absent", name)
		}
		delete(out.Statuses, name)
	}
	return problems
}

// statusEquality holds nil and empty sub-condition lists equal, as the
// meaning of a status does.
var statusEquality = cmp.Transformer("subConditions", func(s []model.SubCondition) []model.SubCondition {
	if len(s) == 0 {
		return nil
	}
	return s
})

// diffOutput compares two outputs, bodies included.
func diffOutput(want, got *output) string {
	return cmp.Diff(want, got, statusEquality)
}
