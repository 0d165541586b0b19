package xds

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/anypb"
)

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
func (p *Publisher) Streams() []StreamStatus { return p.cache.streamStatus() }

// Groups returns what every node group is served, sorted by name; with
// versions, each type's Versions is filled.
func (p *Publisher) Groups(versions bool) []GroupStatus {
	statuses := p.cache.groupStatus(versions)
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range statuses {
		if g := p.groups[statuses[i].Name]; g != nil && g.owner != nil {
			statuses[i].Published = true
		}
	}
	return statuses
}

func (c *cache) streamStatus() []StreamStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]StreamStatus, 0, len(c.streams))
	for _, st := range c.streams {
		s := StreamStatus{
			ID:             st.id.String(),
			NodeID:         clipTo(st.node.GetId(), c.limits.MaxNodeLength),
			Group:          clipTo(NodeGroup(st.node), c.limits.MaxNodeLength),
			Variant:        st.id.variant,
			ConnectedSince: st.openedAt,
			Types:          make([]TypeStatus, 0, len(st.watches)),
		}
		for typeURL, w := range st.watches {
			r := &w.response
			s.Types = append(s.Types, TypeStatus{
				TypeURL:    typeURL,
				Wildcard:   w.wildcard,
				Names:      len(w.names),
				Pending:    len(w.changed),
				LastSent:   r.version,
				LastAcked:  r.lastAcked,
				LastNacked: r.lastNacked,
				NackDetail: r.nackDetail,
				SentAt:     r.sentAt,
				AckedAt:    r.ackedAt,
			})
		}
		slices.SortFunc(s.Types, func(a, b TypeStatus) int { return strings.Compare(a.TypeURL, b.TypeURL) })
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b StreamStatus) int {
		if a.Variant != b.Variant {
			return strings.Compare(string(a.Variant), string(b.Variant))
		}
		return cmp.Compare(streamNumber(a.ID), streamNumber(b.ID))
	})
	return out
}

// streamNumber is the number in a StreamStatus.ID, so that IDs sort as
// numbers.
func streamNumber(id string) int64 {
	_, n, _ := strings.Cut(id, "-")
	v, _ := strconv.ParseInt(n, 10, 64)
	return v
}

func (c *cache) groupStatus(versions bool) []GroupStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A stream's watches are all in its node's group.
	streams := map[*groupState]int{}
	for _, st := range c.streams {
		for _, w := range st.watches {
			if w.group != nil {
				streams[w.group]++
				break
			}
		}
	}
	out := make([]GroupStatus, 0, len(c.groups))
	for _, g := range c.groups {
		s := GroupStatus{Name: g.name, Streams: streams[g]}
		for _, t := range g.types {
			if len(t.resources) == 0 {
				continue
			}
			ts := GroupTypeStatus{TypeURL: t.typeURL, Resources: len(t.resources)}
			if versions {
				ts.Versions = make(map[string]string, len(t.resources))
				for name, r := range t.resources {
					ts.Versions[name] = r.version()
				}
			}
			s.Types = append(s.Types, ts)
		}
		// g.types is a map: its order is random.
		slices.SortFunc(s.Types, func(a, b GroupTypeStatus) int { return strings.Compare(a.TypeURL, b.TypeURL) })
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b GroupStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Resource returns what group serves as typeURL's resource named name, and
// its version, if it serves one: the bytes every client of the group is
// sent, for an operator to decode and read. The Any is the one shared by
// every response: read it, never change it.
func (p *Publisher) Resource(group, typeURL, name string) (*anypb.Any, string, bool) {
	c := p.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil {
		return nil, "", false
	}
	t := g.types[typeURL]
	if t == nil {
		return nil, "", false
	}
	r := t.resources[name]
	if r == nil {
		return nil, "", false
	}
	return r.any, r.version(), true
}
