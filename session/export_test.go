package session

import "github.com/tributary-dev/tributary/source"

// ObserveRebuilds makes s report to f the ExtensionServices each Apply
// rebuilds or removes, so tests can check that only the right ones are.
func ObserveRebuilds(s *Session, f func([]source.NamespacedName)) { s.observeRebuild = f }
