package contour

import (
	"maps"
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// elect keeps the primary while it is eligible, or else makes the first
// eligible replica the primary and brings the sinks to its output.
func (rs *replicaSet) elect() {
	rs.deliverMu.Lock()
	defer rs.deliverMu.Unlock()
	rs.mu.Lock()
	prev := rs.primary
	if prev != nil && rs.eligible(prev) {
		rs.mu.Unlock()
		return
	}
	var next *replica
	for _, addr := range slices.Sorted(maps.Keys(rs.replicas)) {
		if r := rs.replicas[addr]; rs.eligible(r) {
			next = r
			break
		}
	}
	rs.primary = next
	rs.broadcast()
	rs.mu.Unlock()
	switch {
	case next == nil && prev != nil:
		rs.logger.Warn("tributary: no replica is reachable and up to date; the caches keep their last output", "previous", prev.address)
	case next != nil:
		from := ""
		if prev != nil {
			from = prev.address
		}
		rs.logger.Info("tributary: caches now follow replica", "address", next.address, "previous", from)
		rs.send(rs.delivered.toView(next.session.View()))
	}
}

// onUpdate delivers a replica's update when it is the primary's, leaving
// out what the sinks already have (the primary's output may have reached
// them when it was elected).
func (rs *replicaSet) onUpdate(r *replica, u client.Update) {
	rs.deliverMu.Lock()
	defer rs.deliverMu.Unlock()
	rs.mu.Lock()
	primary := rs.primary == r
	rs.mu.Unlock()
	if primary {
		rs.send(rs.delivered.apply(u))
	}
}

// send hands u to the sinks. Called with deliverMu held.
func (rs *replicaSet) send(u client.Update) {
	if !u.Empty() {
		rs.deliver(u)
	}
}

// deliveredState is what the sinks hold: each resource's version, and each
// status.
type deliveredState struct {
	clusters, clas map[string]string
	statuses       map[client.NamespacedName]*tributaryv1.ExtensionServiceStatus
}

func newDeliveredState() deliveredState {
	return deliveredState{clusters: map[string]string{}, clas: map[string]string{}, statuses: map[client.NamespacedName]*tributaryv1.ExtensionServiceStatus{}}
}

// apply records u and returns the part of it the sinks do not have yet.
func (d *deliveredState) apply(u client.Update) client.Update {
	out := client.Update{BatchID: u.BatchID, FullState: u.FullState, Version: u.Version}
	out.Clusters, out.ClusterVersions = newer(d.clusters, u.Clusters, u.ClusterVersions, (*clusterv3.Cluster).GetName)
	out.ClusterLoadAssignments, out.ClusterLoadAssignmentVersions = newer(d.clas, u.ClusterLoadAssignments, u.ClusterLoadAssignmentVersions, (*endpointv3.ClusterLoadAssignment).GetClusterName)
	out.RemovedClusters = held(d.clusters, u.RemovedClusters)
	out.RemovedClusterLoadAssignments = held(d.clas, u.RemovedClusterLoadAssignments)
	for _, st := range u.Statuses {
		n := client.NamespacedName{Namespace: st.GetNamespace(), Name: st.GetName()}
		if cur, ok := d.statuses[n]; ok && proto.Equal(cur, st) {
			continue
		}
		d.statuses[n] = st
		out.Statuses = append(out.Statuses, st)
	}
	for _, n := range u.RemovedStatuses {
		if _, ok := d.statuses[n]; ok {
			delete(d.statuses, n)
			out.RemovedStatuses = append(out.RemovedStatuses, n)
		}
	}
	return out
}

// toView records v as the sinks' state and returns the Update that takes
// them there.
func (d *deliveredState) toView(v client.View) client.Update {
	u := client.Update{FullState: true, Version: v.Version, ClusterVersions: v.ClusterVersions, ClusterLoadAssignmentVersions: v.ClusterLoadAssignmentVersions}
	for _, name := range slices.Sorted(maps.Keys(v.Clusters)) {
		u.Clusters = append(u.Clusters, v.Clusters[name])
	}
	for _, name := range slices.Sorted(maps.Keys(v.ClusterLoadAssignments)) {
		u.ClusterLoadAssignments = append(u.ClusterLoadAssignments, v.ClusterLoadAssignments[name])
	}
	u.RemovedClusters = missing(d.clusters, v.ClusterVersions)
	u.RemovedClusterLoadAssignments = missing(d.clas, v.ClusterLoadAssignmentVersions)
	for _, n := range slices.SortedFunc(maps.Keys(v.Statuses), client.NamespacedName.Compare) {
		u.Statuses = append(u.Statuses, v.Statuses[n])
	}
	for _, n := range slices.SortedFunc(maps.Keys(d.statuses), client.NamespacedName.Compare) {
		if _, ok := v.Statuses[n]; !ok {
			u.RemovedStatuses = append(u.RemovedStatuses, n)
		}
	}
	return d.apply(u)
}

// newer records the resources whose version differs from the recorded one
// and returns them with their versions.
func newer[T any](have map[string]string, changed []T, versions map[string]string, nameOf func(T) string) ([]T, map[string]string) {
	var out []T
	var outVersions map[string]string
	for _, r := range changed {
		name := nameOf(r)
		v := versions[name]
		if cur, ok := have[name]; ok && cur == v {
			continue
		}
		have[name] = v
		out = append(out, r)
		if outVersions == nil {
			outVersions = map[string]string{}
		}
		outVersions[name] = v
	}
	return out, outVersions
}

// held forgets the removed names that are recorded and returns them.
func held(have map[string]string, removed []string) []string {
	var out []string
	for _, name := range removed {
		if _, ok := have[name]; ok {
			delete(have, name)
			out = append(out, name)
		}
	}
	return out
}

// missing returns, sorted, the recorded names that keep lacks.
func missing(have, keep map[string]string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if _, ok := keep[name]; !ok {
			out = append(out, name)
		}
	}
	return out
}
