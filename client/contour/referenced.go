package contour

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/model"
	"github.com/tributary-dev/tributary/source"
)

// referencedOnly is the syncTarget in front of an Adapter's session (or its
// replica sessions). It passes on every ExtensionService and
// TLSCertificateDelegation, and of the Services, EndpointSlices and Secrets
// only those translation reads:
//   - a Service that an ExtensionService in its namespace targets;
//   - an EndpointSlice whose kubernetes.io/service-name label names such a
//     Service;
//   - a Secret that an ExtensionService names as its CA (spec.validation.
//     caSecret), or that the clientCertificate setting names.
//
// The rest is held here, and passed on when an ExtensionService comes to
// name it; when no ExtensionService names an object any more, it is deleted
// from the session again.
//
// Contour's informers list every Service, EndpointSlice and Secret in the
// cluster, and few of them back an ExtensionService. Sent as they are, a
// session would hold the whole cluster's endpoints, its first batch could
// outgrow the server's message and batch limits, and an object translation
// never reads (an EndpointSlice without a service-name label, which the
// server refuses) could get every batch rejected. Translation reads nothing
// else, so the output is the same as if everything had been sent.
//
// What has been passed on is never recorded: it is always exactly the held
// objects that are named, as the names stand. Every change of either passes
// on the difference at once, in the order the changes came.
type referencedOnly struct {
	next syncTarget
	// clientCertificate is the Secret the clientCertificate setting names;
	// it is passed on whether or not an ExtensionService exists.
	clientCertificate source.NamespacedName

	mu sync.Mutex
	// held is every Service, EndpointSlice and Secret upserted and not
	// deleted, passed on or not.
	held map[objectKey]*tributaryv1.KubernetesObject
	// slicesOf indexes the held EndpointSlices by the Service they belong to.
	slicesOf map[source.NamespacedName]map[string]*tributaryv1.KubernetesObject
	// names is what each ExtensionService names.
	names map[source.NamespacedName]references
	// serviceUses and secretUses count the ExtensionServices that name each
	// Service and Secret; an object with a count is passed on.
	serviceUses, secretUses map[source.NamespacedName]int
}

// references are the Services and Secrets one ExtensionService names, each
// once.
type references struct {
	services, secrets []source.NamespacedName
}

// newReferencedOnly returns a referencedOnly passing on to next, under the
// clientCertificate setting of settings.
func newReferencedOnly(next syncTarget, settings *tributaryv1.Settings) *referencedOnly {
	r := &referencedOnly{
		next:        next,
		held:        map[objectKey]*tributaryv1.KubernetesObject{},
		slicesOf:    map[source.NamespacedName]map[string]*tributaryv1.KubernetesObject{},
		names:       map[source.NamespacedName]references{},
		serviceUses: map[source.NamespacedName]int{},
		secretUses:  map[source.NamespacedName]int{},
	}
	// A malformed setting names nothing; the server refuses it anyway.
	if ns, name, ok := strings.Cut(settings.GetClientCertificate(), "/"); ok {
		r.clientCertificate = source.NamespacedName{Namespace: ns, Name: name}
	}
	return r
}

func (r *referencedOnly) Upsert(objs ...*tributaryv1.KubernetesObject) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, obj := range objs {
		switch o := obj.GetKind().(type) {
		case *tributaryv1.KubernetesObject_ExtensionService:
			name := nameOf(o.ExtensionService.GetMetadata())
			r.rename(name, namedBy(o.ExtensionService))
			r.next.Upsert(obj)
		case *tributaryv1.KubernetesObject_Service:
			r.held[keyOf(obj)] = obj
			if r.serviceUses[nameOf(o.Service.GetMetadata())] > 0 {
				r.next.Upsert(obj)
			}
		case *tributaryv1.KubernetesObject_EndpointSlice:
			key := keyOf(obj)
			old := r.held[key]
			r.holdSlice(key, obj)
			switch {
			case r.serviceUses[serviceOfSlice(obj)] > 0:
				r.next.Upsert(obj)
			case old != nil && r.serviceUses[serviceOfSlice(old)] > 0:
				// Relabelled away from a named Service.
				r.next.Delete(client.Reference(old))
			}
		case *tributaryv1.KubernetesObject_Secret:
			r.held[keyOf(obj)] = obj
			if r.secretNamed(nameOf(o.Secret.GetMetadata())) {
				r.next.Upsert(obj)
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
		name := source.NamespacedName{Namespace: ref.GetNamespace(), Name: ref.GetName()}
		switch key.kind {
		case tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE:
			r.rename(name, references{})
			r.next.Delete(ref)
		case tributaryv1.ObjectKind_OBJECT_KIND_SERVICE, tributaryv1.ObjectKind_OBJECT_KIND_ENDPOINT_SLICE, tributaryv1.ObjectKind_OBJECT_KIND_SECRET:
			old := r.held[key]
			if old == nil {
				continue // never upserted, so never passed on
			}
			r.dropHeld(key, old)
			if r.passedOn(old) {
				r.next.Delete(ref)
			}
		default:
			r.next.Delete(ref)
		}
	}
}

func (r *referencedOnly) Flush(ctx context.Context) error { return r.next.Flush(ctx) }

func (r *referencedOnly) Close() { r.next.Close() }

// passedOn reports whether a held Service, EndpointSlice or Secret is named,
// and so has been passed on.
func (r *referencedOnly) passedOn(obj *tributaryv1.KubernetesObject) bool {
	switch o := obj.GetKind().(type) {
	case *tributaryv1.KubernetesObject_Service:
		return r.serviceUses[nameOf(o.Service.GetMetadata())] > 0
	case *tributaryv1.KubernetesObject_EndpointSlice:
		return r.serviceUses[serviceOfSlice(obj)] > 0
	case *tributaryv1.KubernetesObject_Secret:
		return r.secretNamed(nameOf(o.Secret.GetMetadata()))
	}
	return false
}

func (r *referencedOnly) secretNamed(name source.NamespacedName) bool {
	return name == r.clientCertificate || r.secretUses[name] > 0
}

// rename replaces what the ExtensionService es names, passing on the held
// objects it is the first to name, and deleting those nothing names any
// more. The new names are counted first, so an object named before and
// after is neither deleted nor sent again.
func (r *referencedOnly) rename(es source.NamespacedName, now references) {
	before := r.names[es]
	if len(now.services) == 0 && len(now.secrets) == 0 {
		delete(r.names, es)
	} else {
		r.names[es] = now
	}
	for _, svc := range now.services {
		if r.serviceUses[svc]++; r.serviceUses[svc] == 1 {
			r.eachOfService(svc, r.upsertNext)
		}
	}
	for _, secret := range now.secrets {
		if r.secretUses[secret]++; r.secretUses[secret] == 1 && secret != r.clientCertificate {
			r.eachSecret(secret, r.upsertNext)
		}
	}
	for _, svc := range before.services {
		if r.serviceUses[svc]--; r.serviceUses[svc] == 0 {
			delete(r.serviceUses, svc)
			r.eachOfService(svc, r.deleteNext)
		}
	}
	for _, secret := range before.secrets {
		if r.secretUses[secret]--; r.secretUses[secret] == 0 {
			delete(r.secretUses, secret)
			if secret != r.clientCertificate {
				r.eachSecret(secret, r.deleteNext)
			}
		}
	}
}

func (r *referencedOnly) upsertNext(obj *tributaryv1.KubernetesObject) { r.next.Upsert(obj) }

func (r *referencedOnly) deleteNext(obj *tributaryv1.KubernetesObject) {
	r.next.Delete(client.Reference(obj))
}

// eachOfService calls f with the held Service svc and each held
// EndpointSlice of it.
func (r *referencedOnly) eachOfService(svc source.NamespacedName, f func(*tributaryv1.KubernetesObject)) {
	if obj := r.held[objectKey{kind: tributaryv1.ObjectKind_OBJECT_KIND_SERVICE, namespace: svc.Namespace, name: svc.Name}]; obj != nil {
		f(obj)
	}
	for _, slice := range r.slicesOf[svc] {
		f(slice)
	}
}

// eachSecret calls f with the held Secret name, if there is one.
func (r *referencedOnly) eachSecret(name source.NamespacedName, f func(*tributaryv1.KubernetesObject)) {
	if obj := r.held[objectKey{kind: tributaryv1.ObjectKind_OBJECT_KIND_SECRET, namespace: name.Namespace, name: name.Name}]; obj != nil {
		f(obj)
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

// namedBy returns the Services and Secrets es names, each once. A target
// Service is in es's namespace; a CA Secret is where model.CASecretName
// says, which is where translation looks for it.
func namedBy(es *tributaryv1.ExtensionService) references {
	namespace := es.GetMetadata().GetNamespace()
	var refs references
	for _, target := range es.GetSpec().GetServices() {
		svc := source.NamespacedName{Namespace: namespace, Name: target.GetName()}
		if svc.Name != "" && !slices.Contains(refs.services, svc) {
			refs.services = append(refs.services, svc)
		}
	}
	if ca := es.GetSpec().GetValidation().GetCaSecret(); ca != "" {
		if secret := model.CASecretName(ca, namespace); secret.Name != "" {
			refs.secrets = append(refs.secrets, secret)
		}
	}
	return refs
}

func nameOf(meta *tributaryv1.ObjectMeta) source.NamespacedName {
	return source.NamespacedName{Namespace: meta.GetNamespace(), Name: meta.GetName()}
}

// serviceOfSlice names the Service an EndpointSlice belongs to. A slice
// without the label belongs to a Service named "", which namedBy never
// returns: the server requires the label, and translation would not read
// the slice.
func serviceOfSlice(obj *tributaryv1.KubernetesObject) source.NamespacedName {
	meta := obj.GetEndpointSlice().GetMetadata()
	return source.NamespacedName{Namespace: meta.GetNamespace(), Name: meta.GetLabels()[source.ServiceNameLabel]}
}
