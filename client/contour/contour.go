// Package contour converts the Go types Contour already holds (its own API
// types and Kubernetes' core and discovery types) into the messages of
// TranslationService, so that Contour, or anything else that watches a
// cluster, can call Tributary without writing the mapping itself.
//
// Every function is a pure conversion: it copies, never validates, and never
// keeps a reference to its argument. Validation is the service's job, and a
// conversion that silently "fixed" an object would hide from the user the
// very problem the ExtensionService status is meant to report. What the
// conversions do guarantee is fidelity: a field Kubernetes leaves unset stays
// unset (an EndpointSlice endpoint with no ready condition is ready, which is
// not the same as ready: false), and nothing private (a Secret's tls.key)
// ever reaches a message.
package contour

import (
	"k8s.io/apimachinery/pkg/runtime"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// Object converts any object of a kind translation reads. It reports false,
// and returns nil, for every other kind (and for a nil pointer of a known
// kind), so a caller can hand it everything it watches and keep what comes
// back.
func Object(obj runtime.Object) (*tributaryv1.KubernetesObject, bool) {
	for i := range kubernetesKinds {
		if o, ok := kubernetesKinds[i].convert(obj); ok {
			return o, true
		}
	}
	return nil, false
}
