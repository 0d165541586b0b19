package contour

import (
	"context"
	"strings"
	"sync"

	discovery_v1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tributary-dev/tributary/client/internal/objectkind"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// referencedOnly is the syncTarget in front of an Adapter's session (or its
// replica sessions). It passes on every ExtensionService and
// TLSCertificateDelegation, and of the Services, EndpointSlices and Secrets
// only those translation may read:
//   - a Service that an ExtensionService in its namespace targets;
//   - an EndpointSlice whose kubernetes.io/service-name label names such a
//     Service;
//   - a Secret that an ExtensionService names as its CA (spec.validation.
//     caSecret), or that the clientCertificate setting names.
//
// The rest is held here, and passed on when an ExtensionService comes to
// name it.
//
// Contour's informers list every Service, EndpointSlice and Secret in the
// cluster, and few of them back an ExtensionService. Sent as they are, a
// session would hold the whole cluster's endpoints, its first batch could
// outgrow the server's message and batch limits, and an object translation
// never reads (an EndpointSlice without a service-name label, which the
// server refuses) could get every batch rejected.
//
// Two rules keep the output what it would be if everything were sent, at
// every batch boundary the session may cut:
//   - The objects an ExtensionService names are passed on before the
//     ExtensionService itself, and passed on again (the session drops what
//     it holds already) whenever the ExtensionService is: a batch never
//     holds an ExtensionService without the objects it names, and they are
//     restored with it if an earlier batch that carried them was rejected.
//   - A name, once named, stays named for the Adapter's life: the Service
//     or Secret of that name and the Service's EndpointSlices go on being
//     passed on, with every change and deletion, even when no
//     ExtensionService names them any more. Withdrawing them would be safe
//     only once the session held the change that stopped naming them, and
//     a rejected batch takes such a change back: the session then holds the
//     ExtensionService as it was, which must keep getting its endpoints.
//     What the session holds beyond what is named now is bounded by the
//     names ever named, and changes no output.
type referencedOnly struct {
	next syncTarget

	mu sync.Mutex
	// held is every object of a held kind (see kubernetesKind.namedAs)
	// upserted and not deleted, passed on or not, with the key it is named
	// through.
	held map[objectkind.Key]heldObject
	// heldUnder indexes the held objects by the key they are named through:
	// a Service's key holds the Service and its EndpointSlices.
	heldUnder map[objectkind.Key]map[objectkind.Key]*tributaryv1.KubernetesObject
	// named holds every key named so far: the objects held under them are
	// passed on.
	named map[objectkind.Key]bool
}

type heldObject struct {
	obj *tributaryv1.KubernetesObject
	via objectkind.Key
}

// newReferencedOnly returns a referencedOnly passing on to next, under the
// clientCertificate setting of settings.
func newReferencedOnly(next syncTarget, settings *tributaryv1.Settings) *referencedOnly {
	r := &referencedOnly{
		next:      next,
		held:      map[objectkind.Key]heldObject{},
		heldUnder: map[objectkind.Key]map[objectkind.Key]*tributaryv1.KubernetesObject{},
		named:     map[objectkind.Key]bool{},
	}
	// A malformed setting names nothing; the server refuses it anyway.
	if ns, name, ok := strings.Cut(settings.GetClientCertificate(), "/"); ok && name != "" {
		r.named[objectkind.Key{Kind: tributaryv1.ObjectKind_OBJECT_KIND_SECRET, Namespace: ns, Name: name}] = true
	}
	return r
}

// Upsert and Delete report whether what they passed on changed what the
// next target holds: an object held and not passed on changes nothing.
func (r *referencedOnly) Upsert(objs ...*tributaryv1.KubernetesObject) (changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, obj := range objs {
		key := objectkind.KeyOf(obj)
		row := kindRow(key.Kind)
		if row != nil && row.names != nil {
			changed = r.passNamed(row.names(obj)) || changed
		}
		if row == nil || row.namedAs == nil {
			changed = r.next.Upsert(obj) || changed
			continue
		}
		via := row.namedAs(obj)
		old, wasHeld := r.held[key]
		r.hold(key, heldObject{obj: obj, via: via})
		switch {
		case r.named[via]:
			changed = r.next.Upsert(obj) || changed
		case wasHeld && r.named[old.via]:
			// Relabelled away from a named Service.
			changed = r.next.Delete(key.Reference()) || changed
		}
	}
	return changed
}

func (r *referencedOnly) Delete(refs ...*tributaryv1.ObjectReference) (changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ref := range refs {
		key := objectkind.KeyOfReference(ref)
		if !isHeldKind(key.Kind) {
			changed = r.next.Delete(ref) || changed
			continue
		}
		old, wasHeld := r.held[key]
		if !wasHeld {
			continue // never upserted, so never passed on
		}
		r.drop(key, old)
		if r.named[old.via] {
			changed = r.next.Delete(ref) || changed
		}
	}
	return changed
}

func (r *referencedOnly) Flush(ctx context.Context) error { return r.next.Flush(ctx) }

func (r *referencedOnly) Close() { r.next.Close() }

// passNamed records the keys an object names and passes on the held
// objects named through them, whether or not they were passed on before,
// and reports whether that changed what the next target holds.
func (r *referencedOnly) passNamed(keys []objectkind.Key) (changed bool) {
	for _, key := range keys {
		r.named[key] = true
		for _, obj := range r.heldUnder[key] {
			changed = r.next.Upsert(obj) || changed
		}
	}
	return changed
}

// hold holds h in place of the object of key, and indexes it under the key
// it is named through.
func (r *referencedOnly) hold(key objectkind.Key, h heldObject) {
	if old, ok := r.held[key]; ok {
		r.drop(key, old)
	}
	r.held[key] = h
	under := r.heldUnder[h.via]
	if under == nil {
		under = map[objectkind.Key]*tributaryv1.KubernetesObject{}
		r.heldUnder[h.via] = under
	}
	under[key] = h.obj
}

// drop forgets old, the held object of key.
func (r *referencedOnly) drop(key objectkind.Key, old heldObject) {
	delete(r.held, key)
	delete(r.heldUnder[old.via], key)
	if len(r.heldUnder[old.via]) == 0 {
		delete(r.heldUnder, old.via)
	}
}

// namedBy returns the keys of the Services and Secrets es names; an empty
// name names nothing. A target Service is in es's namespace; a CA Secret is
// where caSecretName says, which is where translation looks for it.
func namedBy(es *tributaryv1.ExtensionService) []objectkind.Key {
	var keys []objectkind.Key
	namespace := es.GetMetadata().GetNamespace()
	for _, target := range es.GetSpec().GetServices() {
		if target.GetName() != "" {
			keys = append(keys, objectkind.Key{Kind: tributaryv1.ObjectKind_OBJECT_KIND_SERVICE, Namespace: namespace, Name: target.GetName()})
		}
	}
	if ca := es.GetSpec().GetValidation().GetCaSecret(); ca != "" {
		if secret := caSecretName(ca, namespace); secret.Name != "" {
			keys = append(keys, objectkind.Key{Kind: tributaryv1.ObjectKind_OBJECT_KIND_SECRET, Namespace: secret.Namespace, Name: secret.Name})
		}
	}
	return keys
}

// serviceOfSlice returns the key of the Service an EndpointSlice belongs
// to. A slice without the label belongs to a Service named "", which
// namedBy never returns: the server requires the label, and translation
// would not read the slice.
func serviceOfSlice(obj *tributaryv1.KubernetesObject) objectkind.Key {
	meta := obj.GetEndpointSlice().GetMetadata()
	return objectkind.Key{Kind: tributaryv1.ObjectKind_OBJECT_KIND_SERVICE, Namespace: meta.GetNamespace(), Name: meta.GetLabels()[discovery_v1.LabelServiceName]}
}

// caSecretName reads spec.validation.caSecret as translation does: "name"
// or "namespace/name", a missing namespace meaning the ExtensionService's
// own. The adapter lives in a module of its own that cannot import the
// translator, so the rule is stated twice: here and in internal/model
// (CASecretName).
func caSecretName(ref, namespace string) types.NamespacedName {
	ns, name, found := strings.Cut(ref, "/")
	if !found {
		ns, name = "", ref
	}
	if ns == "" {
		ns = namespace
	}
	return types.NamespacedName{Namespace: ns, Name: name}
}
