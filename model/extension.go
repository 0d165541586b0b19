package model

import "github.com/tributary-dev/tributary/source"

// build validates everything but endpoints, then calls buildLocalities.
// It records problems on st.Condition and may return nil when it stops early.
func (b *Builder) build(es *source.ExtensionService, st *Status) *ExtensionCluster {
	panic("TODO: extension-level validation")
}
