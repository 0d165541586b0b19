package translate

import (
	"cmp"
	"slices"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
)

// Changes is what changed in an output: what a Sync session's batch
// changed, what the server streams to its client, and what a publication
// hands to xDS, all one value. Applying Changes in order to an empty output
// gives exactly what Translate gives for the same objects.
type Changes struct {
	// Clusters and ClusterLoadAssignments added or changed.
	Clusters               []Resource
	ClusterLoadAssignments []Resource
	// Names of resources that no longer exist.
	RemovedClusters               []string
	RemovedClusterLoadAssignments []string
	// Statuses added or changed, and the ExtensionServices deleted. xDS has
	// no statuses and ignores them.
	Statuses        []model.Status
	RemovedStatuses []source.NamespacedName
}

// Empty reports whether c changes nothing.
func (c *Changes) Empty() bool {
	return len(c.Clusters) == 0 && len(c.ClusterLoadAssignments) == 0 &&
		len(c.RemovedClusters) == 0 && len(c.RemovedClusterLoadAssignments) == 0 &&
		len(c.Statuses) == 0 && len(c.RemovedStatuses) == 0
}

// Sort puts every list in name order (statuses by namespace, then name),
// the order every Changes is handed on in.
func (c *Changes) Sort() {
	byName := func(a, b Resource) int { return cmp.Compare(a.Name, b.Name) }
	slices.SortFunc(c.Clusters, byName)
	slices.SortFunc(c.ClusterLoadAssignments, byName)
	slices.Sort(c.RemovedClusters)
	slices.Sort(c.RemovedClusterLoadAssignments)
	slices.SortFunc(c.Statuses, func(a, b model.Status) int { return a.NamespacedName().Compare(b.NamespacedName()) })
	slices.SortFunc(c.RemovedStatuses, source.NamespacedName.Compare)
}
