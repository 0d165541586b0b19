package client

import (
	"maps"
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// versioned is a resource with its version.
type versioned[T any] struct {
	version string
	msg     T
}

// output is the last known output of a session.
type output struct {
	version  string
	clusters map[string]versioned[*clusterv3.Cluster]
	clas     map[string]versioned[*endpointv3.ClusterLoadAssignment]
	statuses map[NamespacedName]*tributaryv1.ExtensionServiceStatus
}

func newOutput() output {
	return output{
		clusters: map[string]versioned[*clusterv3.Cluster]{},
		clas:     map[string]versioned[*endpointv3.ClusterLoadAssignment]{},
		statuses: map[NamespacedName]*tributaryv1.ExtensionServiceStatus{},
	}
}

// apply applies a delta (t is its unpacked content) and returns what it
// changed. A full-state delta replaces the output: whatever it lacks is
// removed. What equals the output already (same version, equal status) is
// not reported, so an Update never repeats what the caller has.
func (o *output) apply(d *tributaryv1.SyncDelta, t *Translation) Update {
	u := Update{BatchID: d.GetBatchId(), FullState: d.GetFullState(), Version: d.GetVersion()}
	o.version = d.GetVersion()

	removedClusters, removedCLAs := d.GetRemovedClusters(), d.GetRemovedClusterLoadAssignments()
	var removedStatuses []NamespacedName
	if !d.GetFullState() {
		for _, r := range d.GetRemovedStatuses() {
			removedStatuses = append(removedStatuses, NamespacedName{r.GetNamespace(), r.GetName()})
		}
	} else {
		removedClusters = absent(o.clusters, t.ClusterVersions)
		removedCLAs = absent(o.clas, t.ClusterLoadAssignmentVersions)
		present := make(map[NamespacedName]bool, len(t.Statuses))
		for _, st := range t.Statuses {
			present[NamespacedName{st.GetNamespace(), st.GetName()}] = true
		}
		for _, n := range slices.SortedFunc(maps.Keys(o.statuses), NamespacedName.Compare) {
			if !present[n] {
				removedStatuses = append(removedStatuses, n)
			}
		}
	}

	u.Clusters, u.ClusterVersions, u.RemovedClusters = applyResources(o.clusters, t.Clusters, t.ClusterVersions, (*clusterv3.Cluster).GetName, removedClusters)
	u.ClusterLoadAssignments, u.ClusterLoadAssignmentVersions, u.RemovedClusterLoadAssignments = applyResources(o.clas, t.ClusterLoadAssignments, t.ClusterLoadAssignmentVersions, (*endpointv3.ClusterLoadAssignment).GetClusterName, removedCLAs)
	for _, st := range t.Statuses {
		n := NamespacedName{st.GetNamespace(), st.GetName()}
		if cur, ok := o.statuses[n]; ok && proto.Equal(cur, st) {
			continue
		}
		o.statuses[n] = st
		u.Statuses = append(u.Statuses, st)
	}
	for _, n := range removedStatuses {
		if _, ok := o.statuses[n]; ok {
			delete(o.statuses, n)
			u.RemovedStatuses = append(u.RemovedStatuses, n)
		}
	}
	return u
}

// absent returns, sorted, the names in have that are not in keep.
func absent[T any](have map[string]versioned[T], keep map[string]string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if _, ok := keep[name]; !ok {
			out = append(out, name)
		}
	}
	return out
}

// applyResources stores changed resources whose version differs from the
// stored one and deletes the removed names that are stored, returning what
// actually changed.
func applyResources[T any](have map[string]versioned[T], changed []T, versions map[string]string, nameOf func(T) string, removed []string) (outChanged []T, outVersions map[string]string, outRemoved []string) {
	for _, r := range changed {
		name := nameOf(r)
		v := versions[name]
		if cur, ok := have[name]; ok && cur.version == v {
			continue
		}
		have[name] = versioned[T]{version: v, msg: r}
		outChanged = append(outChanged, r)
		if outVersions == nil {
			outVersions = map[string]string{}
		}
		outVersions[name] = v
	}
	for _, name := range removed {
		if _, ok := have[name]; ok {
			delete(have, name)
			outRemoved = append(outRemoved, name)
		}
	}
	return outChanged, outVersions, outRemoved
}

// notify answers every waiting Flush.
func notify(waiters []chan<- error, err error) {
	for _, w := range waiters {
		w <- err
	}
}
