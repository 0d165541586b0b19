package server

import (
	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
)

// heldObjects knows which objects a Sync session holds, by kind and name,
// for tributary_sync_session_objects. The session keeps its objects in
// indexes shaped for rebuilding, none of which counts them, so the call
// keeps names beside it; only when metrics are on, since that costs a map
// entry per object (the name strings are shared with the objects).
type heldObjects struct {
	names map[session.Kind]map[source.NamespacedName]struct{}
	// reported is what the gauge was given, by kind: what to take back
	// when the session ends.
	reported map[session.Kind]int
}

func newHeldObjects() *heldObjects {
	h := &heldObjects{names: map[session.Kind]map[source.NamespacedName]struct{}{}, reported: map[session.Kind]int{}}
	for kind := range objectKindLabels {
		h.names[kind] = map[source.NamespacedName]struct{}{}
	}
	return h
}

// apply records b, which the session has applied: upserts of new names
// add, deletes of held names remove, as in Session.Apply. It returns the
// change in count per kind.
func (h *heldObjects) apply(b *session.Batch) map[session.Kind]int {
	changes := map[session.Kind]int{}
	add := func(kind session.Kind, m *source.Meta) {
		name := source.NamespacedName{Namespace: m.Namespace, Name: m.Name}
		if _, ok := h.names[kind][name]; !ok {
			h.names[kind][name] = struct{}{}
			changes[kind]++
		}
	}
	up := &b.Upserts
	for i := range up.ExtensionServices {
		add(session.KindExtensionService, &up.ExtensionServices[i].Meta)
	}
	for i := range up.Services {
		add(session.KindService, &up.Services[i].Meta)
	}
	for i := range up.EndpointSlices {
		add(session.KindEndpointSlice, &up.EndpointSlices[i].Meta)
	}
	for i := range up.Secrets {
		add(session.KindSecret, &up.Secrets[i].Meta)
	}
	for i := range up.TLSCertificateDelegations {
		add(session.KindTLSCertificateDelegation, &up.TLSCertificateDelegations[i].Meta)
	}
	for _, ref := range b.Deletes {
		if _, ok := h.names[ref.Kind][ref.Name]; ok {
			delete(h.names[ref.Kind], ref.Name)
			changes[ref.Kind]--
		}
	}
	return changes
}

// report adds changes to m's gauge, and remembers them for withdraw.
func (h *heldObjects) report(m *metrics.Metrics, changes map[session.Kind]int) {
	for kind, n := range changes {
		m.AddSessionObjects(objectKindLabels[kind], n)
		h.reported[kind] += n
	}
}

// withdraw takes back from m's gauge everything report gave it.
func (h *heldObjects) withdraw(m *metrics.Metrics) {
	for kind, n := range h.reported {
		m.AddSessionObjects(objectKindLabels[kind], -n)
	}
	clear(h.reported)
}
