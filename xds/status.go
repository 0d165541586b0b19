package xds

import "time"

// Variant is the xDS protocol variant a stream speaks.
type Variant string

const (
	// SotW is State of the World: every request names all the resources
	// the client wants, and full-state types (CDS, LDS) are sent whole.
	SotW Variant = "sotw"
	// Delta is incremental xDS: requests and responses carry changes only.
	Delta Variant = "delta"
)

// StreamStatus is what the server knows of one connected xDS stream, as
// Envoy's config dump or istioctl proxy-status shows it.
type StreamStatus struct {
	// ID is unique among the streams of one server ("sotw-3", "delta-7").
	ID string `json:"id"`
	// NodeID is the client's node.id, and Group its node group (see
	// NodeGroup); both are cut to the server's length limit.
	NodeID string `json:"nodeId"`
	Group  string `json:"group"`
	// Variant is how the stream speaks xDS.
	Variant Variant `json:"variant"`
	// ConnectedSince is when the stream opened.
	ConnectedSince time.Time `json:"connectedSince"`
	// Types holds one entry per type the stream has asked for, sorted by
	// type URL.
	Types []TypeStatus `json:"types"`
}

// TypeStatus is one resource type of one stream.
type TypeStatus struct {
	TypeURL string `json:"typeUrl"`
	// Wildcard says the stream asked for every resource of the type;
	// Names counts the names it asked for explicitly.
	Wildcard bool `json:"wildcard"`
	Names    int  `json:"names"`
	// Pending counts the resources changed since the stream was last sent
	// the type, which it will be sent when it asks again.
	Pending int `json:"pending"`
	// LastSent is the version of the last response sent, LastAcked the
	// last one the client accepted and LastNacked the last one it rejected
	// (empty: none), with NackDetail the client's reason, cut to a bounded
	// length. SotW versions are version_info, Delta ones
	// system_version_info.
	LastSent   string `json:"lastSent,omitempty"`
	LastAcked  string `json:"lastAcked,omitempty"`
	LastNacked string `json:"lastNacked,omitempty"`
	NackDetail string `json:"nackDetail,omitempty"`
	// SentAt and AckedAt are when LastSent was sent and LastAcked acked.
	SentAt  time.Time `json:"sentAt,omitzero"`
	AckedAt time.Time `json:"ackedAt,omitzero"`
}

// GroupStatus is what one node group is served.
type GroupStatus struct {
	Name string `json:"name"`
	// Published says a live Sync session owns the group; a group without
	// one still serves what it had until the withdraw grace period ends.
	Published bool `json:"published"`
	// Streams counts the xDS streams of the group's clients.
	Streams int `json:"streams"`
	// Types holds one entry per type with resources, sorted by type URL.
	Types []GroupTypeStatus `json:"types"`
}

// GroupTypeStatus is one type's resources in a group.
type GroupTypeStatus struct {
	TypeURL   string `json:"typeUrl"`
	Resources int    `json:"resources"`
	// Versions maps each resource name to its version; filled only when
	// asked for (it can be large).
	Versions map[string]string `json:"versions,omitempty"`
}

// Streams returns the status of every open xDS stream, sorted by ID.
func (p *Publisher) Streams() []StreamStatus {
	return nil // TODO(cache): filled by the stream state of the new cache
}

// Groups returns what every node group is served, sorted by name; with
// versions, each type's Versions is filled.
func (p *Publisher) Groups(versions bool) []GroupStatus {
	return nil // TODO(cache)
}
