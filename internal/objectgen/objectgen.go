// Package objectgen generates random pipeline input (source.Objects:
// ExtensionServices, Services, EndpointSlices, Secrets and
// TLSCertificateDelegations, and the settings) for fuzz and property tests,
// driven by fuzz bytes or a seeded *rand.Rand. It is the one generator the
// tests of every package share: whole object sets for translate, batches
// of upserts and deletes for session, EndpointSlices and their edits for
// endpoints.
//
// Objects draw their names from a small Universe, so that references
// resolve, collide and break often, and their fields from short lists of
// values, valid ones first, then the edge cases the Options allow: IPv6,
// invalid and duplicate addresses, ports other than TCP, unnamed ports,
// missing conditions, invalid specs, Secrets and delegations.
//
// The same Choices always give the same objects. Tests import it; the
// service does not.
package objectgen

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/tlsfiles/testcerts"
)

// Universe is the names generated objects use, per kind. The first
// namespace is the home one: EndpointSlices and their edits live there
// unless moved to another.
type Universe struct {
	Namespaces        []string
	ExtensionServices []string
	Services          []string
	EndpointSlices    []string
	Secrets           []string
	Delegations       []string
}

// SmallUniverse is the universe of Defaults: two namespaces, four
// ExtensionServices, three Services, four EndpointSlices, a CA Secret, a
// client certificate Secret, one more, and two delegations.
func SmallUniverse() Universe {
	return Universe{
		Namespaces:        []string{"auth", "other"},
		ExtensionServices: []string{"ext-0", "ext-1", "ext-2", "ext-3"},
		Services:          []string{"s0", "s1", "s2"},
		EndpointSlices:    []string{"sl0", "sl1", "sl2", "sl3"},
		Secrets:           []string{"ca", "client", "empty"},
		Delegations:       []string{"delegate", "more"},
	}
}

// Options says what a Generator may produce. Each knob off takes its
// cases out of every list; all on is what the fuzz and property tests use.
type Options struct {
	Universe Universe

	// IPv6: IPv6 EndpointSlices and addresses.
	IPv6 bool
	// InvalidAddresses: strings netip refuses, zoned and 4-in-6
	// addresses, endpoints without an address, slices of address type
	// FQDN or none.
	InvalidAddresses bool
	// DuplicateAddresses: addresses drawn from a short list, so that
	// endpoints and slices repeat them, some spelled several ways. Off,
	// every address drawn is new (and valid unless InvalidAddresses).
	DuplicateAddresses bool
	// NonTCPPorts: UDP, SCTP and "tcp" ports.
	NonTCPPorts bool
	// UnnamedPorts: ports without a name (unset or ""), beside named ones.
	UnnamedPorts bool
	// MissingConditions: endpoint conditions left unset.
	MissingConditions bool
	// InvalidSpecs: values the API or the translator refuses: no targets,
	// unknown protocols, bad timeouts, ExternalName Services, ports out of
	// range or unset, CA Secrets malformed or named badly.
	InvalidSpecs bool
	// Secrets: Secrets, the TLS validation and client certificates that
	// read them.
	Secrets bool
	// Delegations: TLSCertificateDelegations.
	Delegations bool

	// MaxEndpoints bounds the endpoints of a generated EndpointSlice.
	MaxEndpoints int
}

// Defaults is every knob on over SmallUniverse, with up to 7 endpoints per
// slice.
func Defaults() Options {
	return Options{
		Universe: SmallUniverse(),
		IPv6:     true, InvalidAddresses: true, DuplicateAddresses: true, NonTCPPorts: true,
		UnnamedPorts: true, MissingConditions: true, InvalidSpecs: true, Secrets: true, Delegations: true,
		MaxEndpoints: 7,
	}
}

// CA and ClientCertificate are the PEM certificates generated Secrets
// hold: a CA bundle, and the certificate of a client certificate Secret.
var (
	CA                = testcerts.SelfSignedPEM("objectgen-ca")
	ClientCertificate = testcerts.SelfSignedPEM("envoy-client")
	badPEM            = []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
)

// Generator draws objects from its Choices under its Options.
type Generator struct {
	c Choices
	o Options

	// The lists Options allow, filtered once.
	addresses, invalidAddresses, families, timeouts, lbStrategies []string
	addressCounts                                                 []int
	conditions                                                    []*bool
	slicePortNames, sliceProtocols                                []*string
	slicePorts                                                    []*int32
	servicePortNames, serviceProtocols                            []string

	fresh   uint32                                         // addresses handed out when DuplicateAddresses is off
	emitted map[source.NamespacedName]source.EndpointSlice // the slices Objects and Batch handed out, as last handed out
}

// New returns a Generator drawing from c.
func New(c Choices, o Options) *Generator {
	if o.MaxEndpoints <= 0 {
		o.MaxEndpoints = Defaults().MaxEndpoints
	}
	g := &Generator{c: c, o: o}
	g.addresses = allowed(g, addressList)
	g.invalidAddresses = allowed(g, []option[string]{
		{"not-an-ip", invalidAddr}, {"10.0.0.010", invalidAddr}, {"1.2.3", invalidAddr}, {"", invalidAddr},
		{"10.0.0.1.5", invalidAddr}, {" 10.0.0.2", invalidAddr}, {"fe80::1%eth0", v6 | invalidAddr},
	})
	g.families = allowed(g, []option[string]{
		{"IPv4", 0}, {"IPv4", 0}, {"IPv4", 0}, {"IPv6", v6}, {"IPv6", v6}, {"FQDN", invalidAddr}, {"", invalidAddr},
	})
	g.addressCounts = allowed(g, []option[int]{{1, 0}, {1, 0}, {1, 0}, {1, 0}, {2, 0}, {3, 0}, {0, invalidAddr}})
	g.conditions = allowed(g, []option[*bool]{{ptr(true), 0}, {nil, missing}, {nil, missing}, {ptr(false), 0}})
	g.slicePortNames = allowed(g, []option[*string]{
		{ptr("http"), 0}, {nil, unnamed}, {ptr(""), unnamed}, {ptr("http"), 0}, {ptr("grpc"), 0},
	})
	g.slicePorts = allowed(g, []option[*int32]{
		{ptr[int32](8080), 0}, {ptr[int32](8080), 0}, {ptr[int32](9000), 0}, {ptr[int32](9000), 0}, {ptr[int32](9001), 0},
		{ptr[int32](8081), 0}, {ptr[int32](9090), 0}, {ptr[int32](65535), 0}, {ptr[int32](1), 0},
		{nil, invalidSpec}, {ptr[int32](0), invalidSpec}, {ptr[int32](70000), invalidSpec}, {ptr[int32](-1), invalidSpec},
	})
	g.sliceProtocols = allowed(g, []option[*string]{
		{ptr("TCP"), 0}, {ptr("TCP"), 0}, {ptr("TCP"), 0}, {ptr("TCP"), 0}, {nil, 0},
		{ptr("UDP"), nonTCP}, {ptr("SCTP"), nonTCP}, {ptr("tcp"), nonTCP},
	})
	g.servicePortNames = allowed(g, []option[string]{{"http", 0}, {"", unnamed}, {"grpc", 0}, {"9000", 0}, {"", unnamed}})
	g.serviceProtocols = allowed(g, []option[string]{
		{"TCP", 0}, {"TCP", 0}, {"TCP", 0}, {"TCP", 0}, {"TCP", 0}, {"", 0}, {"UDP", nonTCP},
	})
	g.timeouts = allowed(g, []option[string]{
		{"", 0}, {"1s", 0}, {"500ms", 0}, {"infinity", 0}, {"0s", 0}, {"1.5h", 0},
		{"infinite", invalidSpec}, {"-1s", invalidSpec}, {"bogus", invalidSpec},
	})
	g.lbStrategies = allowed(g, []option[string]{
		{"Random", 0}, {"", 0}, {"WeightedLeastRequest", 0}, {"Cookie", 0}, {"RequestHash", 0}, {"RoundRobin", 0},
		{"Weird", invalidSpec},
	})
	return g
}

// addressList is what DuplicateAddresses draws from: both families,
// 10.0.0.1 twice and 2001:db8::1 spelled three ways, a 4-in-6 and a zoned
// address, and strings netip refuses or reads as the other family.
var addressList = []option[string]{
	{"10.0.0.1", 0}, {"10.0.0.2", 0}, {"10.0.0.3", 0}, {"10.0.0.10", 0}, {"10.0.0.1", 0}, {"10.0.1.1", 0},
	{"192.168.0.1", 0}, {"9.255.255.255", 0}, {"0.0.0.0", 0}, {"255.255.255.255", 0},
	{"2001:db8::1", v6}, {"2001:DB8::1", v6}, {"2001:db8:0::1", v6}, {"2001:db8::2", v6}, {"::1", v6}, {"fd00::2", v6},
	{"::ffff:10.0.0.1", v6 | invalidAddr}, {"fe80::1%eth0", v6 | invalidAddr},
	{"not-an-ip", invalidAddr}, {"10.0.0.010", invalidAddr}, {"1.2.3", invalidAddr}, {"", invalidAddr},
	{"10.0.0.1.5", invalidAddr}, {" 10.0.0.2", invalidAddr},
}

// feature is a set of the Options' knobs a listed value needs.
type feature uint16

const (
	v6 feature = 1 << iota
	invalidAddr
	nonTCP
	unnamed
	missing
	invalidSpec
)

type option[T any] struct {
	v     T
	needs feature
}

func (g *Generator) features() feature {
	var f feature
	for _, k := range []struct {
		on bool
		f  feature
	}{
		{g.o.IPv6, v6}, {g.o.InvalidAddresses, invalidAddr}, {g.o.NonTCPPorts, nonTCP},
		{g.o.UnnamedPorts, unnamed}, {g.o.MissingConditions, missing}, {g.o.InvalidSpecs, invalidSpec},
	} {
		if k.on {
			f |= k.f
		}
	}
	return f
}

// allowed keeps the values of list whose needs the Options meet.
func allowed[T any](g *Generator, list []option[T]) []T {
	on := g.features()
	var out []T
	for _, o := range list {
		if o.needs&^on == 0 {
			out = append(out, o.v)
		}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// IntN returns a choice in [0, n).
func (g *Generator) IntN(n int) int { return g.c.IntN(n) }

// Chance is true one time in in: on the last choice, so that fuzz input
// that has run out (zeros) draws the common case.
func (g *Generator) Chance(in int) bool { return g.c.IntN(in) == in-1 }

// Exhausted reports whether the Choices have run out.
func (g *Generator) Exhausted() bool { return g.c.Exhausted() }

// Pick returns one of choices.
func Pick[T any](g *Generator, choices ...T) T { return choices[g.c.IntN(len(choices))] }

// Meta is namespace/name at a generation of 0 to 2.
func (g *Generator) Meta(namespace, name string) source.Meta {
	return source.Meta{Namespace: namespace, Name: name, Generation: int64(g.IntN(3))}
}

// Settings draws translator settings: an xDS cluster name, a connect
// timeout, global circuit breakers, upstream TLS versions and ciphers, and
// (with Secrets) a client certificate.
func (g *Generator) Settings() source.Settings {
	var s source.Settings
	if g.Chance(2) {
		s.XDSClusterName = Pick(g, "contour", "tributary", "ns/xds")
	}
	s.ConnectTimeout = durations[g.IntN(len(durations))]
	if g.Chance(2) {
		s.GlobalCircuitBreakers = &source.CircuitBreakers{MaxConnections: uint32(g.IntN(3)), PerHostMaxConnections: uint32(g.IntN(2))}
	}
	if g.o.Secrets && len(g.o.Universe.Secrets) > 0 && g.Chance(4) {
		name := Pick(g, g.o.Universe.Secrets...)
		if g.o.InvalidSpecs && g.Chance(4) {
			name = "missing"
		}
		s.ClientCertificate = &source.NamespacedName{Namespace: g.o.Universe.Namespaces[0], Name: name}
	}
	if g.Chance(2) {
		versions := []string{"", "1.2", "1.3"}
		if g.o.InvalidSpecs {
			versions = append(versions, "1.1")
		}
		s.UpstreamTLS = &source.UpstreamTLS{
			MinimumProtocolVersion: Pick(g, versions...),
			MaximumProtocolVersion: Pick(g, "", "1.2", "1.3"),
			CipherSuites:           Pick(g, []string(nil), []string{"ECDHE-ECDSA-AES128-GCM-SHA256"}),
		}
	}
	return s
}

var durations = [...]time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond}

// Objects draws a whole set of objects: in every namespace, most of the
// universe's Services, EndpointSlices and Secrets, and about half its
// delegations; then one to all of its ExtensionServices, each in a
// namespace of its own choosing.
func (g *Generator) Objects() *source.Objects {
	u := &g.o.Universe
	objs := &source.Objects{}
	for _, ns := range u.Namespaces {
		for _, name := range u.Services {
			if !g.Chance(5) {
				objs.Services = append(objs.Services, g.Service(g.Meta(ns, name)))
			}
		}
		for _, name := range u.EndpointSlices {
			if !g.Chance(4) {
				es := g.EndpointSlice(g.Meta(ns, name))
				g.emit(es)
				objs.EndpointSlices = append(objs.EndpointSlices, es)
			}
		}
		if g.o.Secrets {
			for _, name := range u.Secrets {
				if !g.Chance(5) {
					objs.Secrets = append(objs.Secrets, g.Secret(g.Meta(ns, name)))
				}
			}
		}
		if g.o.Delegations {
			for _, name := range u.Delegations {
				if g.Chance(2) {
					objs.TLSCertificateDelegations = append(objs.TLSCertificateDelegations, g.Delegation(g.Meta(ns, name)))
				}
			}
		}
	}
	if len(u.ExtensionServices) > 0 {
		for _, name := range u.ExtensionServices[:1+g.IntN(len(u.ExtensionServices))] {
			objs.ExtensionServices = append(objs.ExtensionServices, g.ExtensionService(g.Meta(Pick(g, u.Namespaces...), name)))
		}
	}
	return objs
}

// ExtensionService draws an ExtensionService: one to three targets among
// the universe's Services, mostly on port 9000 (with InvalidSpecs, now and
// then none); a protocol; TLS validation against a Secret of the universe
// one time in four (with Secrets), with h2 or without a protocol; a load
// balancer strategy, timeouts and circuit breakers one time in three or
// four.
func (g *Generator) ExtensionService(meta source.Meta) source.ExtensionService {
	es := source.ExtensionService{Meta: meta}
	targets := 1 + g.IntN(3)
	if g.o.InvalidSpecs && g.Chance(6) {
		targets = 0
	}
	for range targets {
		es.Spec.Services = append(es.Spec.Services, source.ExtensionServiceTarget{
			Name:   Pick(g, g.o.Universe.Services...),
			Port:   Pick[int32](g, 9000, 9000, 9000, 9000, 9000, 9001, 9002),
			Weight: Pick[uint32](g, 80, 0, 0, 1, 20, 80, 4294967295),
		})
	}
	protocols := []*string{nil, nil, nil, ptr("h2c"), ptr("h2c"), ptr("http/1.1"), ptr("h2")}
	if g.o.InvalidSpecs {
		protocols = append(protocols, ptr("h3"), ptr(""))
	}
	es.Spec.Protocol = Pick(g, protocols...)
	if g.o.Secrets && len(g.o.Universe.Secrets) > 0 && g.Chance(4) {
		es.Spec.Validation = &source.UpstreamValidation{
			CASecret:    g.caSecretName(),
			SubjectName: Pick(g, "ext.example.com", "ext.example.com", "a", ""),
		}
		if g.Chance(2) {
			es.Spec.Validation.SubjectNames = []string{Pick(g, "ext.example.com", "b"), "x.example.com"}
		}
		// Validation means TLS: h2, or no protocol at all, now and then h2c.
		es.Spec.Protocol = Pick(g, nil, nil, ptr("h2"), ptr("h2c"))
	}
	if g.Chance(3) {
		es.Spec.LoadBalancerPolicy = &source.LoadBalancerPolicy{Strategy: Pick(g, g.lbStrategies...)}
	}
	if g.Chance(3) {
		es.Spec.TimeoutPolicy = &source.TimeoutPolicy{
			Response: Pick(g, g.timeouts...), Idle: Pick(g, g.timeouts...), IdleConnection: Pick(g, g.timeouts...),
		}
	}
	if g.Chance(4) {
		es.Spec.CircuitBreakerPolicy = &source.CircuitBreakers{MaxRequests: uint32(g.IntN(3)), MaxRetries: uint32(g.IntN(2))}
	}
	return es
}

// caSecretName names a Secret of the universe, in the ExtensionService's
// namespace or another; with InvalidSpecs, now and then one missing or a
// name without its namespace.
func (g *Generator) caSecretName() string {
	u := &g.o.Universe
	name := Pick(g, u.Secrets...)
	switch g.IntN(8) {
	case 0, 1:
		return Pick(g, u.Namespaces...) + "/" + name
	case 2:
		if g.o.InvalidSpecs {
			return Pick(g, "missing", "/"+name, "")
		}
	}
	return name
}

// Service draws a ClusterIP Service (with InvalidSpecs, one time in eight
// an ExternalName one) with one or two ports from 9000 up.
func (g *Generator) Service(meta source.Meta) source.Service {
	svc := source.Service{Meta: meta, Type: "ClusterIP"}
	if g.o.InvalidSpecs && g.Chance(8) {
		svc.Type, svc.ExternalName = "ExternalName", "example.com"
	}
	for p := range 1 + g.IntN(2) {
		port := int32(9000 + p)
		if g.o.InvalidSpecs && g.Chance(4) {
			port++
		}
		svc.Ports = append(svc.Ports, source.ServicePort{
			Name:     Pick(g, g.servicePortNames...),
			Port:     port,
			Protocol: Pick(g, g.serviceProtocols...),
		})
	}
	return svc
}

// EndpointSlice draws a slice labelled for a Service of the universe (one
// time in eight for none), with up to three ports and up to MaxEndpoints
// endpoints.
func (g *Generator) EndpointSlice(meta source.Meta) source.EndpointSlice {
	meta.Labels = g.serviceLabel()
	es := source.EndpointSlice{Meta: meta, AddressType: Pick(g, g.families...)}
	es.Ports = g.EndpointPorts()
	for range g.IntN(g.o.MaxEndpoints + 1) {
		es.Endpoints = append(es.Endpoints, g.Endpoint())
	}
	return es
}

// serviceLabel labels a slice for a Service of the universe, or (one time
// in eight) for none.
func (g *Generator) serviceLabel() map[string]string {
	if g.Chance(8) {
		return nil
	}
	return map[string]string{source.ServiceNameLabel: Pick(g, g.o.Universe.Services...)}
}

// EndpointPorts draws up to three ports of a slice.
func (g *Generator) EndpointPorts() []source.EndpointPort {
	var ports []source.EndpointPort
	for range g.IntN(4) {
		ports = append(ports, source.EndpointPort{
			Name: Pick(g, g.slicePortNames...), Port: Pick(g, g.slicePorts...), Protocol: Pick(g, g.sliceProtocols...),
		})
	}
	return ports
}

// Endpoint draws an endpoint with one to three addresses (with
// InvalidAddresses, now and then none) and each condition true, false or
// (with MissingConditions) unset.
func (g *Generator) Endpoint() source.Endpoint {
	ep := source.Endpoint{
		Ready: Pick(g, g.conditions...), Serving: Pick(g, g.conditions...), Terminating: Pick(g, g.conditions...),
	}
	for range Pick(g, g.addressCounts...) {
		ep.Addresses = append(ep.Addresses, g.Address())
	}
	return ep
}

// Address draws an endpoint address: from a short list with
// DuplicateAddresses, else a new one each time (IPv4 in 10.1.0.0/16, or
// with IPv6 one time in four in fd00::/16), or with InvalidAddresses one
// time in eight a string netip refuses.
func (g *Generator) Address() string {
	if g.o.DuplicateAddresses {
		return Pick(g, g.addresses...)
	}
	if g.o.InvalidAddresses && g.Chance(8) {
		return Pick(g, g.invalidAddresses...)
	}
	g.fresh++
	if g.o.IPv6 && g.Chance(4) {
		return fmt.Sprintf("fd00::%x", g.fresh)
	}
	return netip.AddrFrom4([4]byte{10, 1, byte(g.fresh >> 8), byte(g.fresh)}).String()
}

// Secret draws a Secret: Opaque or kubernetes.io/tls, mostly with a CA
// bundle (with InvalidSpecs, now and then none or a malformed one), mostly
// with a client certificate.
func (g *Generator) Secret(meta source.Meta) source.Secret {
	cas := [][]byte{CA, CA, CA, CA}
	if g.o.InvalidSpecs {
		cas = append(cas, nil, badPEM)
	}
	return source.Secret{
		Meta:   meta,
		Type:   Pick(g, "Opaque", "kubernetes.io/tls"),
		CACrt:  Pick(g, cas...),
		TLSCrt: Pick(g, ClientCertificate, ClientCertificate, nil),
	}
}

// Delegation draws a delegation of a Secret of the universe to the first
// namespace, to all, to both, or to one that does not exist.
func (g *Generator) Delegation(meta source.Meta) source.TLSCertificateDelegation {
	home := g.o.Universe.Namespaces[0]
	return source.TLSCertificateDelegation{
		Meta: meta,
		Delegations: []source.CertificateDelegation{{
			SecretName:       Pick(g, g.o.Universe.Secrets...),
			TargetNamespaces: Pick(g, []string{home}, []string{"*"}, []string{"nobody"}, []string{"*", home}),
		}},
	}
}

// Kind is a kind of object, in the order of source.Objects' fields.
type Kind int

// The kinds of objects.
const (
	KindExtensionService Kind = iota + 1
	KindService
	KindEndpointSlice
	KindSecret
	KindTLSCertificateDelegation
)

// Deletion names an object to delete.
type Deletion struct {
	Kind Kind
	Name source.NamespacedName
}

// Batch is a set of changes: objects to upsert and objects to delete,
// never both for one object.
type Batch struct {
	Upserts source.Objects
	Deletes []Deletion
}

// Batch draws one to eight changes of every kind the Options allow, at
// names of the universe, unique per kind: one in five a delete (which may
// name an object never upserted), the rest upserts. Half the upserts of an
// EndpointSlice that Objects or Batch handed out before (and Batch has not
// deleted since) edit it as a cluster does (see EditEndpointSlices), at
// the next generation.
func (g *Generator) Batch() Batch {
	u := &g.o.Universe
	kinds := []Kind{KindExtensionService, KindService, KindEndpointSlice}
	if g.o.Secrets {
		kinds = append(kinds, KindSecret)
	}
	if g.o.Delegations {
		kinds = append(kinds, KindTLSCertificateDelegation)
	}
	names := map[Kind][]string{
		KindExtensionService: u.ExtensionServices, KindService: u.Services, KindEndpointSlice: u.EndpointSlices,
		KindSecret: u.Secrets, KindTLSCertificateDelegation: u.Delegations,
	}
	var b Batch
	used := map[Deletion]bool{}
	for range 1 + g.IntN(8) {
		kind := Pick(g, kinds...)
		ns := Pick(g, u.Namespaces...)
		if len(names[kind]) == 0 {
			continue
		}
		ref := Deletion{Kind: kind, Name: source.NamespacedName{Namespace: ns, Name: Pick(g, names[kind]...)}}
		if used[ref] {
			continue
		}
		used[ref] = true
		if g.Chance(5) {
			b.Deletes = append(b.Deletes, ref)
			if kind == KindEndpointSlice {
				delete(g.emitted, ref.Name)
			}
			continue
		}
		meta := g.Meta(ns, ref.Name.Name)
		up := &b.Upserts
		switch kind {
		case KindExtensionService:
			up.ExtensionServices = append(up.ExtensionServices, g.ExtensionService(meta))
		case KindService:
			up.Services = append(up.Services, g.Service(meta))
		case KindEndpointSlice:
			es, ok := g.emitted[ref.Name]
			if ok && g.Chance(2) {
				es, _ = g.editSlice(es, 7)
				es.Generation++
			} else {
				es = g.EndpointSlice(meta)
			}
			g.emit(es)
			up.EndpointSlices = append(up.EndpointSlices, es)
		case KindSecret:
			up.Secrets = append(up.Secrets, g.Secret(meta))
		case KindTLSCertificateDelegation:
			up.TLSCertificateDelegations = append(up.TLSCertificateDelegations, g.Delegation(meta))
		}
	}
	return b
}

// emit remembers es as the latest version of its slice that Objects or
// Batch handed out, for Batch to edit.
func (g *Generator) emit(es source.EndpointSlice) {
	if g.emitted == nil {
		g.emitted = map[source.NamespacedName]source.EndpointSlice{}
	}
	g.emitted[es.NamespacedName()] = es
}

// EndpointSlices draws some of the universe's slices (none to all, in
// order) in the home namespace, one in ten moved to another namespace.
func (g *Generator) EndpointSlices() []source.EndpointSlice {
	u := &g.o.Universe
	var out []source.EndpointSlice
	for _, name := range u.EndpointSlices[:g.IntN(len(u.EndpointSlices)+1)] {
		out = append(out, g.homeSlice(name))
	}
	return out
}

// homeSlice draws slice name in the home namespace or, one time in ten,
// in another.
func (g *Generator) homeSlice(name string) source.EndpointSlice {
	ns := g.o.Universe.Namespaces
	meta := source.Meta{Namespace: ns[0], Name: name}
	if len(ns) > 1 && g.Chance(10) {
		meta.Namespace = Pick(g, ns[1:]...)
	}
	return g.EndpointSlice(meta)
}

// SliceEdit is one change to a set of EndpointSlices: Put upserts a slice,
// Delete names one to delete.
type SliceEdit struct {
	Put    *source.EndpointSlice
	Delete *source.NamespacedName
}

// EditEndpointSlices changes one of current as a cluster does: endpoints
// appended (the common case caches take a shortcut for), replaced,
// removed, their readiness flipped; ports changed; the slice relabelled or
// deleted; or (one time in eight, or when there is none) a new slice of
// the universe added. It picks among current in name order, so the same
// Choices give the same edits whatever order current is in. The edited
// slice shares nothing mutable with the one in current but what a client
// would keep (address strings, ports, conditions).
func (g *Generator) EditEndpointSlices(current []source.EndpointSlice) SliceEdit {
	if len(current) == 0 || g.Chance(8) {
		es := g.homeSlice(Pick(g, g.o.Universe.EndpointSlices...))
		return SliceEdit{Put: &es}
	}
	sorted := slices.Clone(current)
	slices.SortFunc(sorted, func(a, b source.EndpointSlice) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	es, deleted := g.editSlice(Pick(g, sorted...), 8)
	if deleted {
		name := es.NamespacedName()
		return SliceEdit{Delete: &name}
	}
	return SliceEdit{Put: &es}
}

// editSlice draws an edit of es (one of the first `edits` of: endpoints
// appended, one replaced, one removed, one's readiness flipped, new ports,
// a new label, the slice deleted) and returns the edited slice, or es and
// true for a delete.
func (g *Generator) editSlice(es source.EndpointSlice, edits int) (source.EndpointSlice, bool) {
	es.Endpoints = slices.Clone(es.Endpoints)
	switch g.IntN(edits) {
	case 0, 1:
		for range 1 + g.IntN(3) {
			es.Endpoints = append(es.Endpoints, g.Endpoint())
		}
	case 2:
		if len(es.Endpoints) > 0 {
			es.Endpoints[g.IntN(len(es.Endpoints))] = g.Endpoint()
		}
	case 3:
		if len(es.Endpoints) > 0 {
			at := g.IntN(len(es.Endpoints))
			es.Endpoints = slices.Delete(es.Endpoints, at, at+1)
		}
	case 4:
		if len(es.Endpoints) > 0 {
			ep := &es.Endpoints[g.IntN(len(es.Endpoints))]
			ep.Ready = ptr(ep.Ready != nil && !*ep.Ready)
		}
	case 5:
		es.Ports = g.EndpointPorts()
	case 6:
		es.Labels = g.serviceLabel()
	case 7:
		return es, true
	}
	return es, false
}
