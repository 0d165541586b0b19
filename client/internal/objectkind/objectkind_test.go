package objectkind

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// TestTableCoversTheAPI fails when the API gains a kind (a case of the
// KubernetesObject oneof, a value of ObjectKind) that the table lacks.
func TestTableCoversTheAPI(t *testing.T) {
	var enum []tributaryv1.ObjectKind
	values := tributaryv1.ObjectKind(0).Descriptor().Values()
	for i := range values.Len() {
		if k := tributaryv1.ObjectKind(values.Get(i).Number()); k != tributaryv1.ObjectKind_OBJECT_KIND_UNSPECIFIED {
			enum = append(enum, k)
		}
	}
	if !slices.Equal(enum, Kinds()) {
		t.Errorf("the table has kinds %v, the ObjectKind enum %v", Kinds(), enum)
	}

	oneof := (&tributaryv1.KubernetesObject{}).ProtoReflect().Descriptor().Oneofs().ByName("kind")
	if oneof.Fields().Len() != len(kinds) {
		t.Errorf("the KubernetesObject oneof has %d cases, the table %d rows", oneof.Fields().Len(), len(kinds))
	}
	for i := range oneof.Fields().Len() {
		field := oneof.Fields().Get(i)
		obj := &tributaryv1.KubernetesObject{}
		msg := obj.ProtoReflect().NewField(field).Message()
		meta := msg.Descriptor().Fields().ByName("metadata")
		if meta == nil {
			t.Errorf("%s has no metadata", field.Name())
			continue
		}
		msg.Set(meta, protoreflect.ValueOfMessage((&tributaryv1.ObjectMeta{Namespace: "ns", Name: string(field.Name())}).ProtoReflect()))
		obj.ProtoReflect().Set(field, protoreflect.ValueOfMessage(msg))

		key := KeyOf(obj)
		if key.Kind == tributaryv1.ObjectKind_OBJECT_KIND_UNSPECIFIED || key.Namespace != "ns" || key.Name != string(field.Name()) {
			t.Errorf("KeyOf(a %s) = %+v", field.Name(), key)
			continue
		}
		wrapped, ok := Wrapper(key.Kind)(msg.Interface().(Message))
		if !ok || KeyOf(wrapped) != key {
			t.Errorf("Wrap(%v, its %s) = %v, %v; want an object of key %+v", key.Kind, field.Name(), wrapped, ok, key)
		}
	}
}

func TestKeyOfNothing(t *testing.T) {
	if got := KeyOf(&tributaryv1.KubernetesObject{}); got != (Key{}) {
		t.Errorf("KeyOf(an object of no kind) = %+v, want the zero key", got)
	}
	if _, ok := Wrapper(tributaryv1.ObjectKind_OBJECT_KIND_SERVICE)(&tributaryv1.Secret{}); ok {
		t.Error("the Service wrapper wrapped a Secret")
	}
	if w := Wrapper(tributaryv1.ObjectKind_OBJECT_KIND_UNSPECIFIED); w != nil {
		t.Error("OBJECT_KIND_UNSPECIFIED has a wrapper")
	}
}
