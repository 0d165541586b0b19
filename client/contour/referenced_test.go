package contour

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	discovery_v1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tributary-dev/tributary/client/internal/objectkind"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// recordingTarget holds what a referencedOnly passed on, as a session's
// desired set would. It fails the test on a delete of a Service,
// EndpointSlice or Secret it does not hold (referencedOnly deletes only
// what it passed on), and runs check after every call: a session may cut a
// batch between any two.
type recordingTarget struct {
	t       *testing.T
	objects map[objectkind.Key]*tributaryv1.KubernetesObject
	check   func()
}

// Upsert and Delete report changes as a session does: an object equal to
// the one held changes nothing.
func (r *recordingTarget) Upsert(objs ...*tributaryv1.KubernetesObject) (changed bool) {
	for _, obj := range objs {
		key := objectkind.KeyOf(obj)
		if cur, ok := r.objects[key]; !ok || !proto.Equal(cur, obj) {
			changed = true
		}
		r.objects[key] = obj
	}
	r.check()
	return changed
}

func (r *recordingTarget) Delete(refs ...*tributaryv1.ObjectReference) (changed bool) {
	for _, ref := range refs {
		key := objectkind.KeyOfReference(ref)
		if r.objects[key] == nil && isHeldKind(key.Kind) {
			r.t.Errorf("deleted %v, which was never passed on", key)
		}
		if _, ok := r.objects[key]; ok {
			changed = true
		}
		delete(r.objects, key)
	}
	r.check()
	return changed
}

func (r *recordingTarget) Flush(context.Context) error { return nil }
func (r *recordingTarget) Close()                      {}

// history plays informer events chosen by ops on a referencedOnly over a
// few namespaces, Services, EndpointSlices (relabelled, without the label,
// with an empty one), Secrets and ExtensionServices (targets and CA Secrets
// in either form, duplicates and empty names included). It checks, worked
// out afresh from the informers' objects:
//   - after every call referencedOnly makes, that every ExtensionService
//     passed on has the current version of every object it names passed on
//     too, whenever the session cut its batch;
//   - after every event, that what was passed on is exactly the informers'
//     objects minus the Services, EndpointSlices and Secrets of names no
//     ExtensionService has named yet, and that Upsert or Delete reported a
//     change exactly when what was passed on changed (an Adapter flushes
//     only then).
func history(t *testing.T, ops []byte) {
	const clientCertificate = "ns0/name1"
	informer := map[objectkind.Key]*tributaryv1.KubernetesObject{}
	target := &recordingTarget{t: t, objects: map[objectkind.Key]*tributaryv1.KubernetesObject{}}
	event := 0
	target.check = func() {
		for _, obj := range target.objects {
			if es := obj.GetExtensionService(); es != nil {
				services, secrets := names(es)
				for key, want := range objectsOf(informer, services, secrets) {
					if target.objects[key] != want {
						t.Fatalf("event %d: %v passed on while %v, which it names, is not (or is an old version)", event, objectkind.KeyOf(obj), key)
					}
				}
			}
		}
	}
	r := newReferencedOnly(target, &tributaryv1.Settings{ClientCertificate: clientCertificate})
	everServices := map[types.NamespacedName]bool{}
	everSecrets := map[types.NamespacedName]bool{{Namespace: "ns0", Name: "name1"}: true}
	meta := func(ns, name byte, labels map[string]string) *tributaryv1.ObjectMeta {
		return &tributaryv1.ObjectMeta{Namespace: fmt.Sprintf("ns%d", ns%2), Name: name2(name), Labels: labels}
	}
	for i := 0; i+3 < len(ops); i += 4 {
		event = i / 4
		op, ns, a, b := ops[i], ops[i+1], ops[i+2], ops[i+3]
		var obj *tributaryv1.KubernetesObject
		var ref *tributaryv1.ObjectReference
		switch op % 6 {
		case 0:
			obj = &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Service{Service: &tributaryv1.Service{Metadata: meta(ns, a, nil)}}}
		case 1:
			var labels map[string]string
			switch b % 6 {
			case 0: // no label
			case 1:
				labels = map[string]string{discovery_v1.LabelServiceName: ""}
			default:
				labels = map[string]string{discovery_v1.LabelServiceName: name2(b)}
			}
			obj = &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_EndpointSlice{EndpointSlice: &tributaryv1.EndpointSlice{Metadata: meta(ns, a, labels)}}}
		case 2:
			obj = &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Secret{Secret: &tributaryv1.Secret{Metadata: meta(ns, a, nil)}}}
		case 3:
			spec := &tributaryv1.ExtensionServiceSpec{}
			for j := range int(b % 4) {
				name := name2(a + byte(j)*(b/4))
				if (a+byte(j))%7 == 6 {
					name = "" // invalid, and must not name the slices without a label
				}
				spec.Services = append(spec.Services, &tributaryv1.ExtensionServiceTarget{Name: name})
			}
			switch b % 5 {
			case 1:
				spec.Validation = &tributaryv1.UpstreamValidation{CaSecret: name2(a)}
			case 2:
				spec.Validation = &tributaryv1.UpstreamValidation{CaSecret: fmt.Sprintf("ns%d/%s", (ns+1)%2, name2(a))}
			case 3:
				spec.Validation = &tributaryv1.UpstreamValidation{CaSecret: fmt.Sprintf("ns%d/", ns%2)}
			}
			es := &tributaryv1.ExtensionService{Metadata: meta(ns, a/4, nil), Spec: spec}
			services, secrets := names(es)
			maps.Copy(everServices, services)
			maps.Copy(everSecrets, secrets)
			obj = &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_ExtensionService{ExtensionService: es}}
		case 4:
			obj = &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_TlsCertificateDelegation{TlsCertificateDelegation: &tributaryv1.TLSCertificateDelegation{Metadata: meta(ns, a, nil)}}}
		case 5:
			// Delete one of the objects held, or of one never seen.
			keys := slices.SortedFunc(maps.Keys(informer), objectkind.Compare)
			ref = &tributaryv1.ObjectReference{Kind: tributaryv1.ObjectKind(1 + b%5), Namespace: "ns1", Name: "never"}
			if len(keys) > 0 && a%8 != 0 {
				k := keys[int(a)%len(keys)]
				ref = k.Reference()
			}
		}
		before := maps.Clone(target.objects)
		var reported bool
		if ref != nil {
			delete(informer, objectkind.KeyOfReference(ref))
			reported = r.Delete(ref)
		}
		if obj != nil {
			informer[objectkind.KeyOf(obj)] = obj
			reported = r.Upsert(obj)
		}
		if changed := !maps.EqualFunc(before, target.objects, func(a, b *tributaryv1.KubernetesObject) bool { return proto.Equal(a, b) }); reported != changed {
			t.Fatalf("after event %d (%v): reported a change %v, but what was passed on changed: %v", event, ops[i:i+4], reported, changed)
		}
		want := objectsOf(informer, everServices, everSecrets)
		for key, obj := range informer {
			if !isHeldKind(key.Kind) {
				want[key] = obj
			}
		}
		if !maps.Equal(target.objects, want) {
			t.Fatalf("after event %d (%v): passed on %v, want %v", event, ops[i:i+4], sortedKeys(target.objects), sortedKeys(want))
		}
	}
}

// name2 gives one of three names, so objects collide often.
func name2(b byte) string { return fmt.Sprintf("name%d", b%3) }

// names is what es names, read from its spec as the contract reads it: the
// Services it targets in its namespace and its CA Secret; empty names name
// nothing.
func names(es *tributaryv1.ExtensionService) (services, secrets map[types.NamespacedName]bool) {
	services, secrets = map[types.NamespacedName]bool{}, map[types.NamespacedName]bool{}
	namespace := es.GetMetadata().GetNamespace()
	for _, target := range es.GetSpec().GetServices() {
		if target.GetName() != "" {
			services[types.NamespacedName{Namespace: namespace, Name: target.GetName()}] = true
		}
	}
	if ca := es.GetSpec().GetValidation().GetCaSecret(); ca != "" {
		if secret := caSecretOracle(ca, namespace); secret.Name != "" {
			secrets[secret] = true
		}
	}
	return services, secrets
}

// objectsOf returns the Services and Secrets of objects with the given
// names, and the EndpointSlices labelled with one of the Service names.
func objectsOf(objects map[objectkind.Key]*tributaryv1.KubernetesObject, services, secrets map[types.NamespacedName]bool) map[objectkind.Key]*tributaryv1.KubernetesObject {
	out := map[objectkind.Key]*tributaryv1.KubernetesObject{}
	for key, obj := range objects {
		named := types.NamespacedName{Namespace: key.Namespace, Name: key.Name}
		switch key.Kind {
		case tributaryv1.ObjectKind_OBJECT_KIND_SERVICE:
			if services[named] {
				out[key] = obj
			}
		case tributaryv1.ObjectKind_OBJECT_KIND_ENDPOINT_SLICE:
			if label, ok := obj.GetEndpointSlice().GetMetadata().GetLabels()[discovery_v1.LabelServiceName]; ok && services[types.NamespacedName{Namespace: key.Namespace, Name: label}] {
				out[key] = obj
			}
		case tributaryv1.ObjectKind_OBJECT_KIND_SECRET:
			if secrets[named] {
				out[key] = obj
			}
		}
	}
	return out
}

func sortedKeys(m map[objectkind.Key]*tributaryv1.KubernetesObject) []string {
	var out []string
	for k := range m {
		out = append(out, fmt.Sprintf("%v %s/%s", k.Kind, k.Namespace, k.Name))
	}
	slices.Sort(out)
	return out
}

// TestReferencedOnlyRandomHistories plays 300 random histories of 200
// events each (see history).
func TestReferencedOnlyRandomHistories(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		ops := make([]byte, 800)
		for i := range ops {
			ops[i] = byte(rng.Uint32())
		}
		history(t, ops)
		if t.Failed() {
			return
		}
	}
}

func FuzzReferencedOnly(f *testing.F) {
	// An ExtensionService naming a Service and a CA Secret, their objects
	// arriving after it; then the ExtensionService renamed away, and back.
	f.Add([]byte{3, 0, 0, 5, 0, 0, 0, 0, 1, 0, 9, 1, 2, 0, 0, 0, 3, 0, 1, 5, 3, 0, 0, 5})
	// Objects first, the ExtensionService last, then deleted.
	f.Add([]byte{0, 1, 1, 0, 1, 1, 2, 1, 2, 1, 1, 0, 3, 1, 4, 6, 5, 1, 1, 3})
	// A slice relabelled between Services, and one without the label.
	f.Add([]byte{3, 0, 0, 5, 1, 0, 0, 1, 1, 0, 0, 2, 1, 0, 0, 0, 1, 0, 0, 1})
	// The clientCertificate Secret, named by no ExtensionService, then by one.
	f.Add([]byte{2, 0, 1, 0, 3, 0, 4, 1, 3, 0, 4, 0, 5, 0, 1, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 4000 {
			return
		}
		history(t, ops)
	})
}

// caSecretOracle restates, independently of the adapter, where the contract
// looks for a CA Secret: "namespace/name", or "name" in es's namespace.
func caSecretOracle(ref, namespace string) types.NamespacedName {
	if i := strings.IndexByte(ref, '/'); i >= 0 {
		if i == 0 {
			return types.NamespacedName{Namespace: namespace, Name: ref[1:]}
		}
		return types.NamespacedName{Namespace: ref[:i], Name: ref[i+1:]}
	}
	return types.NamespacedName{Namespace: namespace, Name: ref}
}
