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
// invalid specs, Secrets and delegations, the option
// groups beyond Contour's CRD (spec.options, annotations, settings
// defaults) and ExternalName targets.
//
// The same Choices always give the same objects. Tests import it; the
// service does not.
package objectgen

import (
	"strings"

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
	// ExternalNames are Services of type ExternalName (with the
	// ExternalNames knob; see Options).
	ExternalNames []string
}

// SmallUniverse is the universe of Defaults: two namespaces, four
// ExtensionServices, three Services, four EndpointSlices, a CA Secret, a
// client certificate Secret, one more, two delegations, and two
// ExternalName Services.
func SmallUniverse() Universe {
	return Universe{
		Namespaces:        []string{"auth", "other"},
		ExtensionServices: []string{"ext-0", "ext-1", "ext-2", "ext-3"},
		Services:          []string{"s0", "s1", "s2"},
		EndpointSlices:    []string{"sl0", "sl1", "sl2", "sl3"},
		Secrets:           []string{"ca", "client", "empty"},
		Delegations:       []string{"delegate", "more"},
		ExternalNames:     []string{"dns0", "dns1"},
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
	// InvalidSpecs: values the API or the translator refuses: no targets,
	// unknown protocols, bad timeouts, ExternalName Services, ports out of
	// range or unset, CA Secrets malformed or named badly.
	InvalidSpecs bool
	// Secrets: Secrets, the TLS validation and client certificates that
	// read them.
	Secrets bool
	// Delegations: TLSCertificateDelegations.
	Delegations bool
	// ExtensionOptions: the option groups beyond Contour's CRD, in
	// ExtensionServices' spec.options and "tributary.dev/" annotations and
	// in the settings' extensionDefaults, and the strategy
	// ClientSideWeightedRoundRobin. With InvalidSpecs, values out of range
	// and (in annotations) values that do not parse and unknown keys.
	ExtensionOptions bool
	// ExternalNames: the universe's ExternalNames Services, as targets
	// (all of an ExtensionService's targets, or now and then mixed with
	// Services that have endpoints), and the setting that allows them.
	// With InvalidSpecs, DNS names Kubernetes or DNS refuse.
	ExternalNames bool

	// MaxEndpoints bounds the endpoints of a generated EndpointSlice.
	MaxEndpoints int
}

// Defaults is every knob on over SmallUniverse, with up to 7 endpoints per
// slice.
func Defaults() Options {
	return Options{
		Universe: SmallUniverse(),
		IPv6:     true, InvalidAddresses: true, DuplicateAddresses: true, NonTCPPorts: true,
		UnnamedPorts: true, InvalidSpecs: true, Secrets: true, Delegations: true,
		ExtensionOptions: true, ExternalNames: true,
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
	notReady                                                      []bool
	slicePortNames, sliceProtocols                                []*string
	slicePorts                                                    []*int32
	servicePortNames, serviceProtocols                            []string
	hostnames                                                     values[string]
	optionVals                                                    *optionValues

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
	g.notReady = []bool{false, false, false, true}
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
		{"Weird", invalidSpec}, {"ClientSideWeightedRoundRobin", extOptions},
	})
	g.hostnames = split(g, []option[string]{
		{"ext.example.com", 0}, {"example.com", 0}, {"auth.other.svc.cluster.local", 0}, {"x", 0},
		{"example.com.", 0}, {strings.Repeat("a", 63) + ".example.com", 0}, {"10.0.0.1", 0},
		{"", invalidSpec}, {"Ext.Example.com", invalidSpec}, {"bad_name.example.com", invalidSpec},
		{"-x.example.com", invalidSpec}, {strings.Repeat("a", 64) + ".com", invalidSpec},
		{strings.Repeat("abcdefghi.", 26) + "com", invalidSpec}, {"a..b", invalidSpec},
	})
	g.optionVals = newOptionValues(g)
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
	invalidSpec
	extOptions
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
		{g.o.UnnamedPorts, unnamed}, {g.o.InvalidSpecs, invalidSpec},
		{g.o.ExtensionOptions, extOptions},
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
