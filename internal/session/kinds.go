package session

import (
	"github.com/tributary-dev/tributary/internal/source"
)

// kindTable is all the session knows of each kind of object, by Kind:
// adding a kind (see source.Kind) means an entry here.
var kindTable = [source.KindEnd]kindOps{
	source.KindExtensionService: &kindOf[source.ExtensionService, *source.ExtensionService]{
		kind:    source.KindExtensionService,
		objects: func(o source.Objects) []source.ExtensionService { return o.ExtensionServices },
		size:    extensionServiceSize,
		held: func(s *Session, name source.NamespacedName) *source.ExtensionService {
			if e := s.extensions[name]; e != nil {
				return e.object
			}
			return nil
		},
		put:    func(s *Session, es, _ *source.ExtensionService) { s.putExtensionService(es) },
		remove: (*Session).deleteExtensionService,
	},
	source.KindService: &kindOf[source.Service, *source.Service]{
		kind:    source.KindService,
		objects: func(o source.Objects) []source.Service { return o.Services },
		size:    serviceSize,
		held:    func(s *Session, name source.NamespacedName) *source.Service { return s.index.Service(name) },
		put: func(s *Session, svc, _ *source.Service) {
			s.index.PutService(svc)
			s.markTarget(svc.NamespacedName())
		},
		remove: func(s *Session, old *source.Service) {
			s.index.DeleteService(old.NamespacedName())
			s.markTarget(old.NamespacedName())
		},
	},
	source.KindEndpointSlice: &kindOf[source.EndpointSlice, *source.EndpointSlice]{
		kind:    source.KindEndpointSlice,
		objects: func(o source.Objects) []source.EndpointSlice { return o.EndpointSlices },
		size:    endpointSliceSize,
		held:    func(s *Session, name source.NamespacedName) *source.EndpointSlice { return s.index.EndpointSlice(name) },
		put: func(s *Session, slice, old *source.EndpointSlice) {
			if old != nil {
				// A relabelled slice leaves one Service and joins another:
				// both change.
				s.markSliceService(old)
			}
			s.index.PutEndpointSlice(slice)
			s.markSliceService(slice)
		},
		remove: func(s *Session, old *source.EndpointSlice) {
			s.index.DeleteEndpointSlice(old.NamespacedName())
			s.markSliceService(old)
		},
	},
	source.KindSecret: &kindOf[source.Secret, *source.Secret]{
		kind:    source.KindSecret,
		objects: func(o source.Objects) []source.Secret { return o.Secrets },
		size:    secretSize,
		held:    func(s *Session, name source.NamespacedName) *source.Secret { return s.index.Secret(name) },
		put: func(s *Session, secret, _ *source.Secret) {
			s.index.PutSecret(secret)
			s.markSecret(secret.NamespacedName())
		},
		remove: func(s *Session, old *source.Secret) {
			s.index.DeleteSecret(old.NamespacedName())
			s.markSecret(old.NamespacedName())
		},
	},
	source.KindTLSCertificateDelegation: &kindOf[source.TLSCertificateDelegation, *source.TLSCertificateDelegation]{
		kind:    source.KindTLSCertificateDelegation,
		objects: func(o source.Objects) []source.TLSCertificateDelegation { return o.TLSCertificateDelegations },
		size:    delegationSize,
		held:    (*Session).delegation,
		put: func(s *Session, d, _ *source.TLSCertificateDelegation) {
			s.index.PutTLSCertificateDelegation(d)
			s.markDelegationNamespace(d.Namespace)
		},
		remove: func(s *Session, old *source.TLSCertificateDelegation) {
			s.index.DeleteTLSCertificateDelegation(old.NamespacedName())
			s.markDelegationNamespace(old.Namespace)
		},
	},
}

// kindOps is what the session does with the objects of one kind, whatever
// their type; kindOf implements it for each. Objects are passed by value:
// a pointer passed through an interface method escapes, and would move
// every caller's Batch to the heap.
type kindOps interface {
	// upsert holds the kind's objects of objs, each in place of the one of
	// its name.
	upsert(s *Session, objs source.Objects)
	// delete forgets the named object, if the session holds it.
	delete(s *Session, name source.NamespacedName)
	// sizeChange is how much holding the kind's objects of objs would
	// change the session's size (see SizeChange).
	sizeChange(s *Session, objs source.Objects) int64
	// heldSize is the size of the named object, 0 if the session does not
	// hold it.
	heldSize(s *Session, name source.NamespacedName) int64
	// objectsSize is the size of the kind's objects of objs.
	objectsSize(objs source.Objects) int64
	// revert takes back u, a change upsert or delete made (see rollback).
	revert(s *Session, u undo)
}

// object is what every kind's source type is, through its pointer: an
// object with a namespace and a name.
type object[T any] interface {
	*T
	NamespacedName() source.NamespacedName
}

// kindOf describes one kind, of source type T, to the session: how to find
// its objects in a batch and in the session, and what holding or
// forgetting one changes. put and remove mark the ExtensionServices whose
// output the change can affect.
type kindOf[T any, P object[T]] struct {
	kind source.Kind
	// objects is the kind's list in a source.Objects.
	objects func(source.Objects) []T
	// size estimates what the session holds for one object (see size.go).
	size func(P) int64
	// held is the object of that name the session holds, or nil.
	held func(s *Session, name source.NamespacedName) P
	// put holds obj in place of old, nil when obj is new.
	put func(s *Session, obj, old P)
	// remove forgets old, which the session holds.
	remove func(s *Session, old P)
}

func (k *kindOf[T, P]) upsert(s *Session, objs source.Objects) {
	list := k.objects(objs)
	for i := range list {
		// A copy of the top-level struct: the session must not pin the
		// batch's array (see Apply).
		obj := P(new(T))
		*obj = list[i]
		old := k.held(s, obj.NamespacedName())
		if old == nil {
			s.counts[k.kind]++
			s.undo = append(s.undo, undo{kind: k.kind, obj: obj})
		} else {
			s.undo = append(s.undo, undo{kind: k.kind, obj: obj, old: old})
		}
		k.put(s, obj, old)
	}
}

func (k *kindOf[T, P]) delete(s *Session, name source.NamespacedName) {
	old := k.held(s, name)
	if old == nil {
		return
	}
	s.counts[k.kind]--
	s.undo = append(s.undo, undo{kind: k.kind, old: old})
	k.remove(s, old)
}

func (k *kindOf[T, P]) revert(s *Session, u undo) {
	switch {
	case u.obj == nil: // deleted
		s.counts[k.kind]++
		k.put(s, u.old.(P), nil)
	case u.old == nil: // new
		s.counts[k.kind]--
		k.remove(s, u.obj.(P))
	default:
		k.put(s, u.old.(P), u.obj.(P))
	}
}

func (k *kindOf[T, P]) sizeChange(s *Session, objs source.Objects) int64 {
	var n int64
	list := k.objects(objs)
	for i := range list {
		obj := P(&list[i])
		n += k.size(obj)
		if old := k.held(s, obj.NamespacedName()); old != nil {
			n -= k.size(old)
		}
	}
	return n
}

func (k *kindOf[T, P]) heldSize(s *Session, name source.NamespacedName) int64 {
	if old := k.held(s, name); old != nil {
		return k.size(old)
	}
	return 0
}

func (k *kindOf[T, P]) objectsSize(objs source.Objects) int64 {
	var n int64
	list := k.objects(objs)
	for i := range list {
		n += k.size(P(&list[i]))
	}
	return n
}

// Objects is the number of objects of kind k the session holds.
func (s *Session) Objects(k source.Kind) int { return s.counts[k] }
