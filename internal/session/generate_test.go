package session_test

import (
	mathrand "math/rand/v2"

	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/tlsfiles/testcerts"
)

// chooser is where generated choices come from: fuzz input or a seeded
// random source.
type chooser interface {
	// intn returns a number in [0, n).
	intn(n int) int
	// exhausted reports whether the choices have run out (fuzz input is
	// finite; a random source never runs out).
	exhausted() bool
}

// byteChooser reads choices from fuzz input a byte at a time, then zeros.
type byteChooser struct {
	data []byte
	pos  int
}

func (b *byteChooser) intn(n int) int {
	if b.pos >= len(b.data) {
		return 0
	}
	b.pos++
	return int(b.data[b.pos-1]) % n
}

func (b *byteChooser) exhausted() bool { return b.pos >= len(b.data) }

type randChooser struct{ r *mathrand.Rand }

func (c randChooser) intn(n int) int  { return c.r.IntN(n) }
func (c randChooser) exhausted() bool { return false }

func pick[T any](c chooser, choices ...T) T { return choices[c.intn(len(choices))] }

func chance(c chooser, in int) bool { return c.intn(in) == 0 }

// The small universe of names generated objects use, so that references
// resolve, collide and break often.
var (
	genNamespaces = []string{"auth", "other"}
	genServices   = []string{"s0", "s1", "s2"}
	genSlices     = []string{"sl0", "sl1", "sl2", "sl3"}
	genSecrets    = []string{"ca", "client", "empty"}
	genDelegs     = []string{"delegate", "more"}
	genExtensions = []string{"ext-0", "ext-1", "ext-2", "ext-3"}
	genAddresses  = []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.1.1", "192.168.0.9", "2001:db8::1", "not-an-ip"}
	genCA         = testcerts.SelfSignedPEM("session-ca")
	genLeaf       = testcerts.SelfSignedPEM("envoy-client")
	genBadPEM     = []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
)

func strp(s string) *string { return &s }
func i32p(i int32) *int32   { return &i }
func boolp(v bool) *bool    { return &v }

// generateSettings draws the settings of a session; a quarter of sessions
// use a client certificate, so Secret changes reach every ExtensionService.
func generateSettings(c chooser) source.Settings {
	var s source.Settings
	if chance(c, 6) {
		s.ClientCertificate = &source.NamespacedName{Namespace: "auth", Name: pick(c, "client", "ca")}
	}
	if chance(c, 3) {
		s.GlobalCircuitBreakers = &source.CircuitBreakers{MaxConnections: uint32(c.intn(3))}
	}
	if chance(c, 3) {
		s.UpstreamTLS = &source.UpstreamTLS{MinimumProtocolVersion: pick(c, "", "1.2", "1.3")}
	}
	return s
}

// generateInitialBatch draws a first batch holding one of every object of
// the universe but the ExtensionServices, so that later batches' references
// mostly resolve and much of the output is valid.
func generateInitialBatch(c chooser) session.Batch {
	var b session.Batch
	up := &b.Upserts
	for _, ns := range genNamespaces {
		meta := func(name string) source.Meta { return source.Meta{Namespace: ns, Name: name} }
		for _, name := range genServices {
			up.Services = append(up.Services, generateService(c, meta(name)))
		}
		for _, name := range genSlices {
			up.EndpointSlices = append(up.EndpointSlices, generateEndpointSlice(c, meta(name)))
		}
		for _, name := range genSecrets {
			up.Secrets = append(up.Secrets, generateSecret(c, meta(name)))
		}
		up.TLSCertificateDelegations = append(up.TLSCertificateDelegations, generateDelegation(c, meta(genDelegs[0])))
	}
	return b
}

// generateBatch draws one batch of up to 8 upserts and deletes of every
// kind, names unique per kind, never upserting and deleting one object.
// Deletes may name objects the session never held.
func generateBatch(c chooser) session.Batch {
	var b session.Batch
	used := map[session.Ref]bool{}
	for range 1 + c.intn(8) {
		kind := session.Kind(1 + c.intn(5))
		ns := pick(c, genNamespaces...)
		var name string
		switch kind {
		case session.KindExtensionService:
			name = pick(c, genExtensions...)
		case session.KindService:
			name = pick(c, genServices...)
		case session.KindEndpointSlice:
			name = pick(c, genSlices...)
		case session.KindSecret:
			name = pick(c, genSecrets...)
		case session.KindTLSCertificateDelegation:
			name = pick(c, genDelegs...)
		}
		ref := session.Ref{Kind: kind, Name: source.NamespacedName{Namespace: ns, Name: name}}
		if used[ref] {
			continue
		}
		used[ref] = true
		if chance(c, 5) {
			b.Deletes = append(b.Deletes, ref)
			continue
		}
		meta := source.Meta{Namespace: ns, Name: name, Generation: int64(c.intn(3))}
		up := &b.Upserts
		switch kind {
		case session.KindExtensionService:
			up.ExtensionServices = append(up.ExtensionServices, generateExtensionService(c, meta))
		case session.KindService:
			up.Services = append(up.Services, generateService(c, meta))
		case session.KindEndpointSlice:
			up.EndpointSlices = append(up.EndpointSlices, generateEndpointSlice(c, meta))
		case session.KindSecret:
			up.Secrets = append(up.Secrets, generateSecret(c, meta))
		case session.KindTLSCertificateDelegation:
			up.TLSCertificateDelegations = append(up.TLSCertificateDelegations, generateDelegation(c, meta))
		}
	}
	return b
}

func generateExtensionService(c chooser, meta source.Meta) source.ExtensionService {
	es := source.ExtensionService{Meta: meta}
	targets := 1 + c.intn(2)
	if chance(c, 8) {
		targets = 0 // invalid: no targets
	}
	for range targets {
		es.Spec.Services = append(es.Spec.Services, source.ExtensionServiceTarget{
			Name:   pick(c, genServices...),
			Port:   int32(pick(c, 9000, 9000, 9000, 9000, 9000, 9000, 9000, 9001)),
			Weight: pick[uint32](c, 0, 1, 20, 80),
		})
	}
	// h2 needs TLS validation details; cleartext is the common case.
	es.Spec.Protocol = pick(c, strp("h2c"), strp("h2c"), strp("h2c"), strp("http/1.1"), nil, strp("h3"), strp("h2c"), strp("h2c"))
	if chance(c, 3) {
		es.Spec.Validation = &source.UpstreamValidation{
			CASecret:    pick(c, "ca", "ca", "other/ca", "other/ca", "auth/ca", "/ca", "empty", "missing"),
			SubjectName: pick(c, "ext.example.com", "ext.example.com", ""),
		}
		// Validation means TLS: h2, but not always.
		es.Spec.Protocol = pick(c, nil, nil, strp("h2"), strp("h2c"))
	}
	if chance(c, 4) {
		es.Spec.TimeoutPolicy = &source.TimeoutPolicy{Response: pick(c, "1s", "infinity", "1s", "bogus")}
	}
	if chance(c, 4) {
		es.Spec.LoadBalancerPolicy = &source.LoadBalancerPolicy{Strategy: pick(c, "Random", "Cookie")}
	}
	return es
}

func generateService(c chooser, meta source.Meta) source.Service {
	svc := source.Service{Meta: meta, Type: "ClusterIP"}
	if chance(c, 8) {
		svc.Type, svc.ExternalName = "ExternalName", "example.com"
	}
	for p := range 1 + c.intn(2) {
		svc.Ports = append(svc.Ports, source.ServicePort{
			Name:     pick(c, "", "grpc"),
			Port:     int32(9000 + p),
			Protocol: pick(c, "TCP", "TCP", "TCP", "TCP", "TCP", "TCP", "", "UDP"),
		})
	}
	return svc
}

func generateEndpointSlice(c chooser, meta source.Meta) source.EndpointSlice {
	// Relabelling happens whenever an upsert of an existing slice draws
	// another Service (or none).
	if !chance(c, 6) {
		meta.Labels = map[string]string{source.ServiceNameLabel: pick(c, genServices...)}
	}
	slice := source.EndpointSlice{Meta: meta, AddressType: pick(c, "IPv4", "IPv4", "IPv6")}
	for range c.intn(4) {
		slice.Endpoints = append(slice.Endpoints, source.Endpoint{
			Addresses: []string{pick(c, genAddresses...)},
			Ready:     pick(c, nil, boolp(true), boolp(false)),
		})
	}
	for range 1 + c.intn(2) {
		slice.Ports = append(slice.Ports, source.EndpointPort{
			Name:     pick(c, nil, strp("grpc"), strp("http")),
			Port:     i32p(int32(pick(c, 9000, 9001, 8080))),
			Protocol: strp("TCP"),
		})
	}
	return slice
}

func generateSecret(c chooser, meta source.Meta) source.Secret {
	return source.Secret{
		Meta:   meta,
		Type:   pick(c, "Opaque", "kubernetes.io/tls"),
		CACrt:  pick(c, genCA, genCA, genCA, genCA, nil, genBadPEM),
		TLSCrt: pick(c, genLeaf, genLeaf, nil),
	}
}

func generateDelegation(c chooser, meta source.Meta) source.TLSCertificateDelegation {
	return source.TLSCertificateDelegation{
		Meta: meta,
		Delegations: []source.CertificateDelegation{{
			SecretName:       pick(c, "ca", "client"),
			TargetNamespaces: pick(c, []string{"auth"}, []string{"*"}, []string{"nobody"}, []string{"*", "auth"}),
		}},
	}
}
