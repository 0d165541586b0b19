package session_test

import (
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
)

// store is the tests' own record of what a session should hold: the objects
// of every batch applied so far, by kind and name. It shares no code with
// the session, so comparing against a Translate of store.objects() checks
// the session's bookkeeping too.
type store struct {
	extensionServices map[source.NamespacedName]source.ExtensionService
	services          map[source.NamespacedName]source.Service
	endpointSlices    map[source.NamespacedName]source.EndpointSlice
	secrets           map[source.NamespacedName]source.Secret
	delegations       map[source.NamespacedName]source.TLSCertificateDelegation
}

func newStore() *store {
	return &store{
		extensionServices: map[source.NamespacedName]source.ExtensionService{},
		services:          map[source.NamespacedName]source.Service{},
		endpointSlices:    map[source.NamespacedName]source.EndpointSlice{},
		secrets:           map[source.NamespacedName]source.Secret{},
		delegations:       map[source.NamespacedName]source.TLSCertificateDelegation{},
	}
}

func metaName(m *source.Meta) source.NamespacedName {
	return source.NamespacedName{Namespace: m.Namespace, Name: m.Name}
}

func (s *store) apply(b *session.Batch) {
	for _, o := range b.Upserts.ExtensionServices {
		s.extensionServices[metaName(&o.Meta)] = o
	}
	for _, o := range b.Upserts.Services {
		s.services[metaName(&o.Meta)] = o
	}
	for _, o := range b.Upserts.EndpointSlices {
		s.endpointSlices[metaName(&o.Meta)] = o
	}
	for _, o := range b.Upserts.Secrets {
		s.secrets[metaName(&o.Meta)] = o
	}
	for _, o := range b.Upserts.TLSCertificateDelegations {
		s.delegations[metaName(&o.Meta)] = o
	}
	for _, ref := range b.Deletes {
		switch ref.Kind {
		case source.KindExtensionService:
			delete(s.extensionServices, ref.Name)
		case source.KindService:
			delete(s.services, ref.Name)
		case source.KindEndpointSlice:
			delete(s.endpointSlices, ref.Name)
		case source.KindSecret:
			delete(s.secrets, ref.Name)
		case source.KindTLSCertificateDelegation:
			delete(s.delegations, ref.Name)
		}
	}
}

// objects lists the stored objects; the order of a kind varies from call to
// call (map order), which Translate must not care about.
func (s *store) objects() *source.Objects {
	return &source.Objects{
		ExtensionServices:         values(s.extensionServices),
		Services:                  values(s.services),
		EndpointSlices:            values(s.endpointSlices),
		Secrets:                   values(s.secrets),
		TLSCertificateDelegations: values(s.delegations),
	}
}

func values[V any](m map[source.NamespacedName]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
