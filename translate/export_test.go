package translate

import (
	"github.com/tributary-dev/tributary/source"
)

// TranslateReference translates like Translate but encodes every
// ClusterLoadAssignment through the reference proto builder, so tests can
// hold the fast path to its exact bytes.
func TranslateReference(objs *source.Objects, settings source.Settings) *Result {
	return translate(objs, settings, encodeReference)
}
