package session

import "github.com/tributary-dev/tributary/internal/source"

// ObserveRebuilds makes s report to f the ExtensionServices each Apply
// rebuilds or removes, so tests can check that only the right ones are.
func ObserveRebuilds(s *Session, f func([]source.NamespacedName)) { s.observeRebuild = f }

// OutboxPending is how many entries o holds for the reader, pending and
// already taken: what its memory grows with.
func OutboxPending(o *Outbox) (pending, taken int) {
	pending = len(o.clusters.changed) + len(o.clas.changed) + len(o.statuses.changed)
	taken = len(o.clusters.sent) + len(o.clas.sent) + len(o.statuses.sent)
	return pending, taken
}
