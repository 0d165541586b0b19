package contour

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tributary-dev/tributary/client/internal/objectkind"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// kubernetesKind is the Kubernetes side of a row of the kind table
// (package objectkind holds the API side): which Go type Contour's
// informers hand over, how it converts, and how referencedOnly treats it.
type kubernetesKind struct {
	kind tributaryv1.ObjectKind
	// convert converts an informer object of this kind, and reports false
	// for an object of another kind or a nil pointer.
	convert func(runtime.Object) (*tributaryv1.KubernetesObject, bool)
	// namedAs is set for the kinds referencedOnly holds back until an
	// ExtensionService names them: it returns the key of the object an
	// ExtensionService names to name this one (its own key, or for an
	// EndpointSlice its Service's).
	namedAs func(*tributaryv1.KubernetesObject) objectkind.Key
	// names is set for the kinds that name others: it returns the keys of
	// the objects obj names.
	names func(*tributaryv1.KubernetesObject) []objectkind.Key
}

// kubernetesKinds is the table, one row per row of objectkind's.
var kubernetesKinds = [...]kubernetesKind{
	{
		kind:    tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE,
		convert: converter(tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE, ExtensionService),
		names:   func(obj *tributaryv1.KubernetesObject) []objectkind.Key { return namedBy(obj.GetExtensionService()) },
	},
	{
		kind:    tributaryv1.ObjectKind_OBJECT_KIND_SERVICE,
		convert: converter(tributaryv1.ObjectKind_OBJECT_KIND_SERVICE, Service),
		namedAs: objectkind.KeyOf,
	},
	{
		kind:    tributaryv1.ObjectKind_OBJECT_KIND_ENDPOINT_SLICE,
		convert: converter(tributaryv1.ObjectKind_OBJECT_KIND_ENDPOINT_SLICE, EndpointSlice),
		namedAs: serviceOfSlice,
	},
	{
		kind:    tributaryv1.ObjectKind_OBJECT_KIND_SECRET,
		convert: converter(tributaryv1.ObjectKind_OBJECT_KIND_SECRET, Secret),
		namedAs: objectkind.KeyOf,
	},
	{
		kind:    tributaryv1.ObjectKind_OBJECT_KIND_TLS_CERTIFICATE_DELEGATION,
		convert: converter(tributaryv1.ObjectKind_OBJECT_KIND_TLS_CERTIFICATE_DELEGATION, TLSCertificateDelegation),
	},
}

// converter makes a row's convert from the conversion of one kind.
func converter[K interface {
	*T
	runtime.Object
}, T any, M objectkind.Message](kind tributaryv1.ObjectKind, convert func(K) M) func(runtime.Object) (*tributaryv1.KubernetesObject, bool) {
	wrap := objectkind.Wrapper(kind)
	return func(obj runtime.Object) (*tributaryv1.KubernetesObject, bool) {
		o, ok := obj.(K)
		if !ok || o == nil {
			return nil, false
		}
		return wrap(convert(o))
	}
}

// kindRow returns the row of kind, or nil for a kind the table lacks.
func kindRow(kind tributaryv1.ObjectKind) *kubernetesKind {
	for i := range kubernetesKinds {
		if kubernetesKinds[i].kind == kind {
			return &kubernetesKinds[i]
		}
	}
	return nil
}

// isHeldKind reports whether referencedOnly holds objects of kind back.
func isHeldKind(kind tributaryv1.ObjectKind) bool {
	row := kindRow(kind)
	return row != nil && row.namedAs != nil
}
