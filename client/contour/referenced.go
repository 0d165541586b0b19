package contour

import (
	"context"
	"strings"
	"sync"

	discovery_v1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tributary-dev/tributary/client"
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
	// held is every Service, EndpointSlice and Secret upserted and not
	// deleted, passed on or not.
	held map[objectKey]*tributaryv1.KubernetesObject
	// slicesOf indexes the held EndpointSlices by the Service they belong to.
	slicesOf map[types.NamespacedName]map[string]*tributaryv1.KubernetesObject
	// namedServices and namedSecrets hold every Service and Secret named so
	// far: what is passed on.
	namedServices, namedSecrets map[types.NamespacedName]bool
}

// newReferencedOnly returns a referencedOnly passing on to next, under the
// clientCertificate setting of settings.
func newReferencedOnly(next syncTarget, settings *tributaryv1.Settings) *referencedOnly {
	r := &referencedOnly{
		next:          next,
		held:          map[objectKey]*tributaryv1.KubernetesObject{},
		slicesOf:      map[types.NamespacedName]map[string]*tributaryv1.KubernetesObject{},
		namedServices: map[types.NamespacedName]bool{},
		namedSecrets:  map[types.NamespacedName]bool{},
	}
	// A malformed setting names nothing; the server refuses it anyway.
	if ns, name, ok := strings.Cut(settings.GetClientCertificate(), "/"); ok && name != "" {
		r.namedSecrets[types.NamespacedName{Namespace: ns, Name: name}] = true
	}
	return r
}

func (r *referencedOnly) Upsert(objs ...*tributaryv1.KubernetesObject) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, obj := range objs {
		switch o := obj.GetKind().(type) {
		case *tributaryv1.KubernetesObject_ExtensionService:
			r.passNamed(o.ExtensionService)
			r.next.Upsert(obj)
		case *tributaryv1.KubernetesObject_Service, *tributaryv1.KubernetesObject_Secret:
			r.held[keyOf(obj)] = obj
			if r.passedOn(obj) {
				r.next.Upsert(obj)
			}
		case *tributaryv1.KubernetesObject_EndpointSlice:
			key := keyOf(obj)
			old := r.held[key]
			r.holdSlice(key, obj)
			switch {
			case r.passedOn(obj):
				r.next.Upsert(obj)
			case old != nil && r.passedOn(old):
				// Relabelled away from a named Service.
				r.next.Delete(client.Reference(old))
			}
		default:
			r.next.Upsert(obj)
		}
	}
}

func (r *referencedOnly) Delete(refs ...*tributaryv1.ObjectReference) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ref := range refs {
		key := objectKey{kind: ref.GetKind(), namespace: ref.GetNamespace(), name: ref.GetName()}
		if !isHeldKind(key.kind) {
			r.next.Delete(ref)
			continue
		}
		old := r.held[key]
		if old == nil {
			continue // never upserted, so never passed on
		}
		r.dropHeld(key, old)
		if r.passedOn(old) {
			r.next.Delete(ref)
		}
	}
}

func (r *referencedOnly) Flush(ctx context.Context) error { return r.next.Flush(ctx) }

func (r *referencedOnly) Close() { r.next.Close() }

// passedOn reports whether a held Service, EndpointSlice or Secret is
// named, and so has been passed on.
func (r *referencedOnly) passedOn(obj *tributaryv1.KubernetesObject) bool {
	switch o := obj.GetKind().(type) {
	case *tributaryv1.KubernetesObject_Service:
		return r.namedServices[nameOf(o.Service.GetMetadata())]
	case *tributaryv1.KubernetesObject_EndpointSlice:
		return r.namedServices[serviceOfSlice(obj)]
	case *tributaryv1.KubernetesObject_Secret:
		return r.namedSecrets[nameOf(o.Secret.GetMetadata())]
	}
	return false
}

// passNamed records what es names and passes on the held objects it names,
// whether or not they were passed on before.
func (r *referencedOnly) passNamed(es *tributaryv1.ExtensionService) {
	services, secrets := namedBy(es)
	for _, svc := range services {
		r.namedServices[svc] = true
		r.passHeld(tributaryv1.ObjectKind_OBJECT_KIND_SERVICE, svc)
		for _, slice := range r.slicesOf[svc] {
			r.next.Upsert(slice)
		}
	}
	for _, secret := range secrets {
		r.namedSecrets[secret] = true
		r.passHeld(tributaryv1.ObjectKind_OBJECT_KIND_SECRET, secret)
	}
}

// passHeld passes on the held object of kind and name, if there is one.
func (r *referencedOnly) passHeld(kind tributaryv1.ObjectKind, name types.NamespacedName) {
	if obj := r.held[objectKey{kind: kind, namespace: name.Namespace, name: name.Name}]; obj != nil {
		r.next.Upsert(obj)
	}
}

// holdSlice holds an EndpointSlice in place of the one with its key, and
// indexes it under its Service.
func (r *referencedOnly) holdSlice(key objectKey, slice *tributaryv1.KubernetesObject) {
	if old := r.held[key]; old != nil {
		r.dropHeld(key, old)
	}
	r.held[key] = slice
	svc := serviceOfSlice(slice)
	if r.slicesOf[svc] == nil {
		r.slicesOf[svc] = map[string]*tributaryv1.KubernetesObject{}
	}
	r.slicesOf[svc][key.name] = slice
}

// dropHeld forgets the held object old, whose key is key.
func (r *referencedOnly) dropHeld(key objectKey, old *tributaryv1.KubernetesObject) {
	delete(r.held, key)
	if key.kind != tributaryv1.ObjectKind_OBJECT_KIND_ENDPOINT_SLICE {
		return
	}
	svc := serviceOfSlice(old)
	delete(r.slicesOf[svc], key.name)
	if len(r.slicesOf[svc]) == 0 {
		delete(r.slicesOf, svc)
	}
}

// namedBy returns the Services and Secrets es names; an empty name names
// nothing. A target Service is in es's namespace; a CA Secret is where
// caSecretName says, which is where translation looks for it.
func namedBy(es *tributaryv1.ExtensionService) (services, secrets []types.NamespacedName) {
	namespace := es.GetMetadata().GetNamespace()
	for _, target := range es.GetSpec().GetServices() {
		if target.GetName() != "" {
			services = append(services, types.NamespacedName{Namespace: namespace, Name: target.GetName()})
		}
	}
	if ca := es.GetSpec().GetValidation().GetCaSecret(); ca != "" {
		if secret := caSecretName(ca, namespace); secret.Name != "" {
			secrets = append(secrets, secret)
		}
	}
	return services, secrets
}

// isHeldKind reports whether referencedOnly holds objects of kind back.
func isHeldKind(kind tributaryv1.ObjectKind) bool {
	switch kind {
	case tributaryv1.ObjectKind_OBJECT_KIND_SERVICE, tributaryv1.ObjectKind_OBJECT_KIND_ENDPOINT_SLICE, tributaryv1.ObjectKind_OBJECT_KIND_SECRET:
		return true
	}
	return false
}

func nameOf(meta *tributaryv1.ObjectMeta) types.NamespacedName {
	return types.NamespacedName{Namespace: meta.GetNamespace(), Name: meta.GetName()}
}

// serviceOfSlice names the Service an EndpointSlice belongs to. A slice
// without the label belongs to a Service named "", which namedBy never
// returns: the server requires the label, and translation would not read
// the slice.
func serviceOfSlice(obj *tributaryv1.KubernetesObject) types.NamespacedName {
	meta := obj.GetEndpointSlice().GetMetadata()
	return types.NamespacedName{Namespace: meta.GetNamespace(), Name: meta.GetLabels()[discovery_v1.LabelServiceName]}
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
