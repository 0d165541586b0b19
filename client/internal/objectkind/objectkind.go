// Package objectkind is the one table of the KubernetesObject kinds the Go
// clients know: for each ObjectKind, which case of the KubernetesObject
// oneof carries it and how to wrap a message of that kind in one. The
// session's keys (package client) and the Contour adapter's conversions
// and filtering (package contour, whose own table adds the Kubernetes
// side of each kind) are derived from it, so a new kind is a row here and
// a row there, and a test fails while either is missing.
//
// The table is written out rather than read from the proto descriptors
// because keys are computed for every informer event: a type assertion
// costs a few nanoseconds, protoreflect's oneof access a hundred or more.
package objectkind

import (
	"cmp"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// Key identifies an object within a session, as its ObjectReference does.
type Key struct {
	Kind            tributaryv1.ObjectKind
	Namespace, Name string
}

// Reference returns the reference that deletes the object of k.
func (k Key) Reference() *tributaryv1.ObjectReference {
	return &tributaryv1.ObjectReference{Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
}

// Compare orders keys by kind, namespace and name.
func Compare(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// KeyOf returns obj's key; an object of no kind the table knows has
// OBJECT_KIND_UNSPECIFIED and an empty name.
func KeyOf(obj *tributaryv1.KubernetesObject) Key {
	for i := range kinds {
		if meta, ok := kinds[i].metadata(obj); ok {
			return Key{Kind: kinds[i].Kind, Namespace: meta.GetNamespace(), Name: meta.GetName()}
		}
	}
	return Key{}
}

// KeyOfReference returns the key ref names.
func KeyOfReference(ref *tributaryv1.ObjectReference) Key {
	return Key{Kind: ref.GetKind(), Namespace: ref.GetNamespace(), Name: ref.GetName()}
}

// Wrapper returns the function that puts a message of kind (a
// *tributaryv1.Service for OBJECT_KIND_SERVICE) in a KubernetesObject, and
// reports false for a message of another kind; nil for a kind the table
// does not know.
func Wrapper(kind tributaryv1.ObjectKind) func(Message) (*tributaryv1.KubernetesObject, bool) {
	for i := range kinds {
		if kinds[i].Kind == kind {
			return kinds[i].wrap
		}
	}
	return nil
}

// Kinds returns every kind the table knows, in the order of the enum.
func Kinds() []tributaryv1.ObjectKind {
	out := make([]tributaryv1.ObjectKind, len(kinds))
	for i := range kinds {
		out[i] = kinds[i].Kind
	}
	return out
}

// Message is what every kind's message has: its metadata.
type Message interface {
	GetMetadata() *tributaryv1.ObjectMeta
}

// kind is one row of the table.
type kind struct {
	Kind tributaryv1.ObjectKind
	// metadata returns the metadata of an object of this kind, and reports
	// false for an object of another kind.
	metadata func(*tributaryv1.KubernetesObject) (*tributaryv1.ObjectMeta, bool)
	// wrap puts a message of this kind in a KubernetesObject, and reports
	// false for a message of another kind.
	wrap func(Message) (*tributaryv1.KubernetesObject, bool)
}

// row builds a table row from the oneof case W that carries the kind's
// message M: unwrap reads the message out of the case, wrap makes an object
// of the message.
func row[W any, M Message](k tributaryv1.ObjectKind, unwrap func(W) M, wrap func(M) *tributaryv1.KubernetesObject) kind {
	return kind{
		Kind: k,
		metadata: func(obj *tributaryv1.KubernetesObject) (*tributaryv1.ObjectMeta, bool) {
			w, ok := obj.GetKind().(W)
			if !ok {
				return nil, false
			}
			return unwrap(w).GetMetadata(), true
		},
		wrap: func(msg Message) (*tributaryv1.KubernetesObject, bool) {
			m, ok := msg.(M)
			if !ok {
				return nil, false
			}
			return wrap(m), true
		},
	}
}

// kinds is the table, in the order of the enum; KeyOf tries the rows in
// turn.
var kinds = [...]kind{
	row(tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE,
		func(w *tributaryv1.KubernetesObject_ExtensionService) *tributaryv1.ExtensionService {
			return w.ExtensionService
		},
		func(m *tributaryv1.ExtensionService) *tributaryv1.KubernetesObject {
			return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_ExtensionService{ExtensionService: m}}
		}),
	row(tributaryv1.ObjectKind_OBJECT_KIND_SERVICE,
		func(w *tributaryv1.KubernetesObject_Service) *tributaryv1.Service { return w.Service },
		func(m *tributaryv1.Service) *tributaryv1.KubernetesObject {
			return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Service{Service: m}}
		}),
	row(tributaryv1.ObjectKind_OBJECT_KIND_ENDPOINT_SLICE,
		func(w *tributaryv1.KubernetesObject_EndpointSlice) *tributaryv1.EndpointSlice { return w.EndpointSlice },
		func(m *tributaryv1.EndpointSlice) *tributaryv1.KubernetesObject {
			return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_EndpointSlice{EndpointSlice: m}}
		}),
	row(tributaryv1.ObjectKind_OBJECT_KIND_SECRET,
		func(w *tributaryv1.KubernetesObject_Secret) *tributaryv1.Secret { return w.Secret },
		func(m *tributaryv1.Secret) *tributaryv1.KubernetesObject {
			return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Secret{Secret: m}}
		}),
	row(tributaryv1.ObjectKind_OBJECT_KIND_TLS_CERTIFICATE_DELEGATION,
		func(w *tributaryv1.KubernetesObject_TlsCertificateDelegation) *tributaryv1.TLSCertificateDelegation {
			return w.TlsCertificateDelegation
		},
		func(m *tributaryv1.TLSCertificateDelegation) *tributaryv1.KubernetesObject {
			return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_TlsCertificateDelegation{TlsCertificateDelegation: m}}
		}),
}
