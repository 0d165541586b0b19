package client

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// ErrSessionClosed is the error of a SyncSession ended by Close.
var ErrSessionClosed = errors.New("tributary: sync session closed")

// Default reconnect backoff: the first retry waits between 125 and 250 ms,
// each failure doubles the bound, up to 30 s, so a server that is down for
// long costs a few calls a minute, and one that restarts is found again
// within a second.
const (
	DefaultMinBackoff = 250 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
)

// NamespacedName names an ExtensionService.
type NamespacedName struct {
	Namespace, Name string
}

// Compare orders names by namespace, then name, the order the server sorts
// statuses in.
func (n NamespacedName) Compare(o NamespacedName) int {
	return cmp.Or(cmp.Compare(n.Namespace, o.Namespace), cmp.Compare(n.Name, o.Name))
}

// Update is one change to a SyncSession's output, with the Envoy resources
// unpacked. Applying every Update in order to an empty state gives the
// session's View: each Update holds only what differs from the state the
// previous ones built, so a caller can push it to its caches as it is.
// The messages are shared with the session's View: treat them as read-only.
type Update struct {
	// BatchID is the last batch the update covers.
	BatchID uint64
	// FullState is true when the update comes from the first answer of a
	// stream: the session compared the server's complete state with what it
	// had delivered before and this update is the difference. After a
	// reconnect, that is how resources the new server no longer produces are
	// removed.
	FullState bool
	// Version is the version of the session's whole output after the update.
	// Versions come from the server instance: they change when the session
	// reconnects to another one.
	Version string
	// Clusters and ClusterLoadAssignments added or changed, sorted by name.
	Clusters               []*clusterv3.Cluster
	ClusterLoadAssignments []*endpointv3.ClusterLoadAssignment
	// ClusterVersions and ClusterLoadAssignmentVersions hold the version of
	// each added or changed resource, by name.
	ClusterVersions               map[string]string
	ClusterLoadAssignmentVersions map[string]string
	// Names of resources that no longer exist.
	RemovedClusters               []string
	RemovedClusterLoadAssignments []string
	// Statuses added or changed, and the ExtensionServices whose status is
	// gone (they were deleted).
	Statuses        []*tributaryv1.ExtensionServiceStatus
	RemovedStatuses []NamespacedName
}

// Empty reports whether u changes nothing.
func (u *Update) Empty() bool {
	return len(u.Clusters) == 0 && len(u.ClusterLoadAssignments) == 0 &&
		len(u.RemovedClusters) == 0 && len(u.RemovedClusterLoadAssignments) == 0 &&
		len(u.Statuses) == 0 && len(u.RemovedStatuses) == 0
}

// View is a SyncSession's last known output. Its maps are copies; the
// messages are shared and read-only.
type View struct {
	// Version is the version of the last Update (or of the last answer when
	// it changed nothing).
	Version                       string
	Clusters                      map[string]*clusterv3.Cluster
	ClusterLoadAssignments        map[string]*endpointv3.ClusterLoadAssignment
	ClusterVersions               map[string]string
	ClusterLoadAssignmentVersions map[string]string
	Statuses                      map[NamespacedName]*tributaryv1.ExtensionServiceStatus
}

// BatchRejectedError is the error of a Flush whose batch the server refused.
// The server's objects are as they were before the batch, and so is the
// session's desired set: the refused changes are dropped, so they are not
// sent again on reconnect. Upsert corrected objects and Flush again.
type BatchRejectedError struct {
	// BatchID is the id of the refused batch.
	BatchID uint64
	// Message says what is wrong, naming the object and field.
	Message string
	// Violations lists every problem found, with its field path (relative
	// to the batch: "upserts[3].metadata.name").
	Violations []*tributaryv1.FieldViolation
}

func (e *BatchRejectedError) Error() string {
	return fmt.Sprintf("tributary: batch %d rejected: %s", e.BatchID, e.Message)
}
