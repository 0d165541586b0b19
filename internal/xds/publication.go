package xds

import (
	"errors"
	"maps"
	"slices"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tributary-dev/tributary/internal/translate"
)

// PublicationOptions configure one Publication.
type PublicationOptions struct {
	// Listeners asks for a Listener per Cluster (see BuildListener), for
	// proxyless gRPC clients.
	Listeners bool
	// OnNack is called for every NACK by a client of the group while the
	// Publication owns it. It is called from an xDS stream's goroutine and
	// must not block.
	OnNack func(Nack)
	// OnSuperseded is called once if a newer Publication takes the group
	// over. It must not block.
	OnSuperseded func()
}

// Publication is one session's right to change a node group's resources.
type Publication struct {
	p     *Publisher
	group *group
	opts  PublicationOptions
	// superseded and closed are guarded by p.mu.
	superseded, closed bool
}

// Open makes a new Publication the owner of the node group named name,
// which must not be empty. A Publication that owned it is superseded: its
// OnSuperseded is called, its Apply changes nothing more, and what it
// published turns stale, as if it had been closed. The new Publication
// publishes into what is there: resources it publishes again with the same
// version change nothing for the group's clients, and stale ones it does
// not publish are withdrawn when the grace period ends.
func (p *Publisher) Open(name string, opts PublicationOptions) (*Publication, error) {
	if name == "" {
		return nil, errors.New("an xDS node group must not be empty")
	}
	p.mu.Lock()
	g := p.groups[name]
	if g == nil {
		g = &group{name: name}
		p.groups[name] = g
	}
	pub := &Publication{p: p, group: g, opts: opts}
	old := g.owner
	g.owner = pub
	if old != nil {
		old.superseded = true
		p.orphanLocked(g)
	}
	p.mu.Unlock()
	if old != nil {
		p.logger.Warn("xDS node group taken over by a newer session", "group", name)
		if old.opts.OnSuperseded != nil {
			old.opts.OnSuperseded()
		}
	}
	return pub, nil
}

// Apply publishes c's resources to the group's clients (xDS has no
// statuses: c's are not read): only the resources whose
// version differs from what is published are sent, each to the clients that
// watch it. A resource that fails validation is logged, counted and skipped,
// keeping the version published before, if any. With Listeners, every
// Cluster published or removed publishes or removes its Listener.
//
// Apply changes nothing once a newer Publication owns the group (which
// OnSuperseded tells, once) or after Close.
//
// The first Apply to a group that no Publication has published to since
// the Publisher started ends the group's hold (see NewPublisher), even
// when c is empty: its clients are then sent what it published, as one
// answer. A session's first Apply must therefore be its whole state.
func (pub *Publication) Apply(c translate.Changes) {
	p := pub.p
	clusters := p.prepare(pub.group.name, resourcev3.ClusterType, c.Clusters, clusterBody)
	clas := p.prepare(pub.group.name, resourcev3.EndpointType, c.ClusterLoadAssignments, clusterLoadAssignmentBody)

	p.mu.Lock()
	defer p.mu.Unlock()
	if pub.superseded || pub.closed {
		return
	}
	g := pub.group
	p.updateLocked(g, resourcev3.ClusterType, clusters, c.RemovedClusters)
	p.updateLocked(g, resourcev3.EndpointType, clas, c.RemovedClusterLoadAssignments)
	if pub.opts.Listeners {
		listeners := make(map[string]*resource, len(c.Clusters))
		for _, r := range c.Clusters {
			if !p.cache.publishes(g.name, resourcev3.ClusterType, r.Name) {
				continue // refused, with no good version: a Listener would lead nowhere
			}
			listeners[r.Name] = p.listener(g.name, r.Name)
		}
		p.updateLocked(g, resourcev3.ListenerType, listeners, c.RemovedClusters)
	}
	// After every type is updated, so that no client is answered before
	// the group's state is whole.
	p.cache.markKnown(g.name)
}

// prepare turns rs into resources ready to send: a version that some group
// publishes already is taken as it is; any other is checked by body, which
// returns the bytes to serve. A resource that fails is logged, counted and
// mapped to nil, so that it keeps its last good version.
func (p *Publisher) prepare(group, typeURL string, rs []translate.Resource, body func(translate.Resource) ([]byte, error)) map[string]*resource {
	out := make(map[string]*resource, len(rs))
	for _, r := range rs {
		key := resourceKey{typeURL: typeURL, name: r.Name, version: r.Version}
		if in := p.cache.internedResource(key); in != nil {
			out[r.Name] = in
			continue
		}
		b, err := body(r)
		if err != nil {
			p.refused(group, typeURL, r.Name, err)
			out[r.Name] = nil
			continue
		}
		out[r.Name] = &resource{key: key, any: &anypb.Any{TypeUrl: typeURL, Value: b}}
	}
	return out
}

// listener returns the Listener of the Cluster named name (see
// BuildListener), or nil if it fails its check. It depends on the name
// alone, so its version is a constant.
func (p *Publisher) listener(group, name string) *resource {
	key := resourceKey{typeURL: resourcev3.ListenerType, name: name, version: listenerVersion}
	if in := p.cache.internedResource(key); in != nil {
		return in
	}
	l := BuildListener(name)
	if err := checkListener(l); err != nil {
		p.refused(group, resourcev3.ListenerType, name, err)
		return nil
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(l)
	if err != nil {
		p.refused(group, resourcev3.ListenerType, name, err)
		return nil
	}
	return &resource{key: key, any: &anypb.Any{TypeUrl: resourcev3.ListenerType, Value: b}}
}

// updateLocked publishes resources (nil for one that failed validation)
// and withdraws removed, for one type. Names published again stop being
// stale; a resource whose version is already published is not touched
// (see cache.update), so its clients see nothing.
func (p *Publisher) updateLocked(g *group, typeURL string, resources map[string]*resource, removed []string) {
	stale := g.stale[typeURL]
	var upserts []*resource
	for name, res := range resources {
		delete(stale, name)
		if res != nil {
			upserts = append(upserts, res)
		}
	}
	for _, name := range removed {
		delete(stale, name)
	}
	p.cache.update(g.name, typeURL, upserts, removed)
}

// Close ends the Publication. If it still owns the group, what it published
// turns stale and is withdrawn when the grace period ends, unless a newer
// Publication publishes it again by then. Close is idempotent.
func (pub *Publication) Close() {
	p := pub.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if pub.closed {
		return
	}
	pub.closed = true
	if pub.superseded {
		return
	}
	pub.group.owner = nil
	p.orphanLocked(pub.group)
}

// orphanLocked marks everything published to g stale and (re)starts the
// grace period.
func (p *Publisher) orphanLocked(g *group) {
	g.stale = p.cache.published(g.name)
	if g.withdraw != nil {
		g.withdraw.Stop()
		g.withdraw = nil
	}
	if p.grace == 0 {
		p.withdrawLocked(g)
		return
	}
	var timer *time.Timer
	timer = time.AfterFunc(p.grace, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if g.withdraw != timer {
			return // stopped or restarted meanwhile
		}
		g.withdraw = nil
		p.withdrawLocked(g)
	})
	g.withdraw = timer
}

// withdrawLocked withdraws g's stale resources, and forgets g once nothing
// is published and no Publication owns it.
func (p *Publisher) withdrawLocked(g *group) {
	withdrawn := 0
	for typeURL, stale := range g.stale {
		withdrawn += len(stale)
		p.cache.update(g.name, typeURL, nil, slices.Collect(maps.Keys(stale)))
	}
	g.stale = nil
	if withdrawn > 0 {
		p.logger.Info("withdrew xDS resources", "group", g.name, "resources", withdrawn)
	}
	if g.owner != nil || p.groups[g.name] != g || len(p.cache.published(g.name)) > 0 {
		return
	}
	delete(p.groups, g.name)
}

// listenerVersion is the version of every Listener: one depends on its
// Cluster's name alone. Change it when BuildListener changes.
const listenerVersion = "listener-1"
