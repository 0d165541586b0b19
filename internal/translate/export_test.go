package translate

import (
	"context"

	"github.com/tributary-dev/tributary/internal/source"
)

// TranslateReference translates like Translate but builds every Cluster and
// ClusterLoadAssignment as a proto and marshals it, so tests can hold the
// fast path to its exact bytes.
func TranslateReference(objs *source.Objects, settings source.Settings) *Result {
	res, err := translate(context.Background(), objs, settings, Limits{}, encodeReference)
	if err != nil {
		panic(err) // unreachable without limits or a context to cancel
	}
	return res
}

// JSONExpansion is jsonExpansion, for the test that holds it.
const JSONExpansion = jsonExpansion
