package translate

import (
	"github.com/tributary-dev/tributary/internal/source"
)

// TranslateReference translates like Translate but builds every Cluster and
// ClusterLoadAssignment as a proto and marshals it, so tests can hold the
// fast path to its exact bytes.
func TranslateReference(objs *source.Objects, settings source.Settings) *Result {
	return translate(objs, settings, encodeReference)
}
