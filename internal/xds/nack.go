package xds

// Nack is one response an xDS client rejected.
type Nack struct {
	// NodeID and NodeGroup identify the client (see NodeGroup).
	NodeID, NodeGroup string
	// TypeURL is the type of the rejected resources.
	TypeURL string
	// ResourceNames are the resources the rejected response carried, sorted.
	ResourceNames []string
	// ErrorDetail is the client's reason, cut to 1 KiB.
	ErrorDetail string
	// RejectedVersion is the rejected response's version_info (State of the
	// World) or system_version_info (Delta); AcceptedVersion is the version
	// the client keeps using (State of the World only).
	RejectedVersion, AcceptedVersion string
	// Delta says the client spoke incremental xDS.
	Delta bool
}
