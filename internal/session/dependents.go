package session

import (
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
)

// extensionSet is a set of ExtensionServices. Nearly every Service, Secret
// and namespace is used by one or two ExtensionServices, so a set starts as
// a short slice (no map per Service: at ten thousand ExtensionServices that
// would be megabytes) and becomes a map only when it grows past manySize,
// which keeps removal cheap for a CA Secret shared by thousands.
type extensionSet struct {
	few  []*extension
	many map[*extension]struct{}
}

// manySize is the size past which a set switches to a map.
const manySize = 16

func (s *extensionSet) add(e *extension) {
	if s.many != nil {
		s.many[e] = struct{}{}
		return
	}
	for _, f := range s.few {
		if f == e {
			return
		}
	}
	if len(s.few) < manySize {
		s.few = append(s.few, e)
		return
	}
	s.many = make(map[*extension]struct{}, 2*manySize)
	for _, f := range s.few {
		s.many[f] = struct{}{}
	}
	s.many[e] = struct{}{}
	s.few = nil
}

func (s *extensionSet) remove(e *extension) {
	if s.many != nil {
		delete(s.many, e)
		return
	}
	for i, f := range s.few {
		if f == e {
			last := len(s.few) - 1
			s.few[i] = s.few[last]
			s.few[last] = nil
			s.few = s.few[:last]
			return
		}
	}
}

func (s *extensionSet) empty() bool { return len(s.few) == 0 && len(s.many) == 0 }

// each calls f for every member, in no particular order.
func (s *extensionSet) each(f func(*extension)) {
	for _, e := range s.few {
		f(e)
	}
	for e := range s.many {
		f(e)
	}
}

// dependents maps the objects an ExtensionService reads to the
// ExtensionServices reading them. The keys are the names an
// ExtensionService's spec refers to, whether or not such an object exists,
// so that creating the object later finds who was waiting for it.
type dependents[K comparable] map[K]*extensionSet

func (d dependents[K]) add(key K, e *extension) {
	set := d[key]
	if set == nil {
		set = &extensionSet{}
		d[key] = set
	}
	set.add(e)
}

func (d dependents[K]) remove(key K, e *extension) {
	set := d[key]
	if set == nil {
		return
	}
	set.remove(e)
	if set.empty() {
		delete(d, key)
	}
}

// reads lists what the output of es depends on besides es itself and the
// client certificate setting's Secret, the way package model looks things
// up:
//   - targets: the Services of spec.services, in es's namespace (also the
//     key of their EndpointSlices' service-name label);
//   - secrets: the CA Secret of spec.validation ("name" or
//     "namespace/name", a missing namespace meaning es's own) and every
//     client certificate es may name as its own (model.ClientCertificateSecrets);
//   - delegationNamespaces: the namespaces of those Secrets that are not
//     es's, whose TLSCertificateDelegations decide whether es may use them.
//
// Dependencies are read from the spec alone, even where validation would
// stop before a lookup: rebuilding an ExtensionService whose output cannot
// change costs a little time, missing one that can would be wrong.
type reads struct {
	targets              []source.NamespacedName
	secrets              []source.NamespacedName
	delegationNamespaces []string
}

func readsOf(es *source.ExtensionService, settings source.Settings) reads {
	var r reads
	for _, t := range es.Spec.Services {
		r.targets = append(r.targets, source.NamespacedName{Namespace: es.Namespace, Name: t.Name})
	}
	if v := es.Spec.Validation; v != nil {
		r.secrets = append(r.secrets, model.CASecretName(v.CASecret, es.Namespace))
	}
	r.secrets = append(r.secrets, model.ClientCertificateSecrets(es, settings)...)
	for _, s := range r.secrets {
		if s.Namespace != es.Namespace {
			r.delegationNamespaces = append(r.delegationNamespaces, s.Namespace)
		}
	}
	return r
}
