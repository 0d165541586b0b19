package session

import (
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
)

// Outbox merges the deltas of the batches applied since they were last
// taken out to be sent, per resource, so a reader that falls behind
// receives the latest state of each changed resource once, and memory stays
// bounded by the size of the output, never by the number of batches.
//
// An Outbox is a plain data structure, not safe for concurrent use: one
// goroutine (a Sync call's loop) puts deltas in and takes them out, and
// decides itself when to take, so there is nothing to wait on.
//
// The Outbox knows what the reader has (the version of every resource and a
// hash of every status it took), and keeps pending only what differs from
// that: a Put that brings a resource back to what the reader has drops it
// from the pending set instead of adding to it. Pending entries are thus
// at most one per name of the reader's output or the writer's, whatever the
// number of batches.
type Outbox struct {
	// pending says whether a batch has been Put since the last Take, and
	// batchID which was the last.
	pending bool
	batchID uint64

	clusters pendingResources
	clas     pendingResources
	statuses pendingStatuses
}

// pendingResources tracks one type of resource.
type pendingResources struct {
	// sent maps the name of every resource the reader has to its version.
	sent map[string]string
	// changed holds the latest resource (or, with Body nil and Version "",
	// the removal) of every name that differs from what the reader has.
	changed map[string]translate.Resource
}

// pendingStatuses tracks statuses, by a hash of their contents (see
// model.Status.Hash) to keep the Outbox small.
type pendingStatuses struct {
	sent    map[source.NamespacedName]uint64
	changed map[source.NamespacedName]pendingStatus
}

type pendingStatus struct {
	status  model.Status
	hash    uint64
	removed bool
}

// NewOutbox returns an empty Outbox.
func NewOutbox() *Outbox {
	return &Outbox{
		clusters: pendingResources{sent: map[string]string{}, changed: map[string]translate.Resource{}},
		clas:     pendingResources{sent: map[string]string{}, changed: map[string]translate.Resource{}},
		statuses: pendingStatuses{
			sent:    map[source.NamespacedName]uint64{},
			changed: map[source.NamespacedName]pendingStatus{},
		},
	}
}

// Put adds d, the result of applying batch batchID, to what is pending.
// A d that is Empty still records the batch, so the reader acknowledges it.
// The Outbox keeps the Resources and Statuses of d, which must not change
// afterwards (Session.Apply's deltas never do).
func (o *Outbox) Put(batchID uint64, d translate.Changes) {
	o.pending, o.batchID = true, batchID
	o.clusters.put(d.Clusters, d.RemovedClusters)
	o.clas.put(d.ClusterLoadAssignments, d.RemovedClusterLoadAssignments)
	for i := range d.Statuses {
		o.statuses.put(pendingStatus{status: d.Statuses[i], hash: d.Statuses[i].Hash()})
	}
	for _, name := range d.RemovedStatuses {
		o.statuses.put(pendingStatus{status: model.Status{Namespace: name.Namespace, Name: name.Name}, removed: true})
	}
}

func (p *pendingResources) put(changed []translate.Resource, removed []string) {
	for _, r := range changed {
		if v, ok := p.sent[r.Name]; ok && v == r.Version {
			delete(p.changed, r.Name) // back to what the reader has
			continue
		}
		p.changed[r.Name] = r
	}
	for _, name := range removed {
		if _, ok := p.sent[name]; !ok {
			delete(p.changed, name) // added and removed before the reader saw it
			continue
		}
		p.changed[name] = translate.Resource{Name: name}
	}
}

func (p *pendingStatuses) put(st pendingStatus) {
	name := st.status.NamespacedName()
	h, ok := p.sent[name]
	if st.removed && !ok || !st.removed && ok && h == st.hash {
		delete(p.changed, name)
		return
	}
	p.changed[name] = st
}

// Pending reports whether a batch has been Put since the last Take.
func (o *Outbox) Pending() bool { return o.pending }

// Take returns the merged delta of every batch Put since the last Take,
// with the id of the last of them, and records it as the reader's; ok is
// false when nothing was Put since. The delta leaves out what the reader
// already has: a resource changed and changed back, or added and removed
// again, since the last Take is not in it.
func (o *Outbox) Take() (batchID uint64, d translate.Changes, ok bool) {
	if !o.pending {
		return 0, translate.Changes{}, false
	}
	d.Clusters, d.RemovedClusters = o.clusters.take()
	d.ClusterLoadAssignments, d.RemovedClusterLoadAssignments = o.clas.take()
	d.Statuses, d.RemovedStatuses = o.statuses.take()
	d.Sort()
	o.pending = false
	return o.batchID, d, true
}

// take returns the pending changes and records them as the reader's.
func (p *pendingResources) take() (changed []translate.Resource, removed []string) {
	for name, r := range p.changed {
		if r.Body == nil && r.Version == "" {
			removed = append(removed, name)
			delete(p.sent, name)
			continue
		}
		changed = append(changed, r)
		p.sent[name] = r.Version
	}
	p.changed = emptied(p.changed)
	return changed, removed
}

func (p *pendingStatuses) take() (changed []model.Status, removed []source.NamespacedName) {
	for name, st := range p.changed {
		if st.removed {
			removed = append(removed, name)
			delete(p.sent, name)
			continue
		}
		changed = append(changed, st.status)
		p.sent[name] = st.hash
	}
	p.changed = emptied(p.changed)
	return changed, removed
}

// emptied empties m for reuse. A map keeps its size after clear, and ranging
// over it costs that size, so one that held many entries (the first, full
// delta) is replaced, lest every later Take pay for it.
func emptied[K comparable, V any](m map[K]V) map[K]V {
	if len(m) > 64 {
		return make(map[K]V)
	}
	clear(m)
	return m
}
