package model

// endpointScratch is the memory a Builder reuses for endpoints.
type endpointScratch struct{}

// buildLocalities turns resolved targets into Localities, recording weight
// and endpoint problems on cond.
func (b *Builder) buildLocalities(namespace string, targets []resolvedTarget, cond *Condition) []Locality {
	panic("TODO: endpoints")
}
