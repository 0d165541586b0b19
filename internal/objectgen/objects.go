package objectgen

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/tributary-dev/tributary/internal/source"
)

// Meta is namespace/name at a generation of 0 to 2.
func (g *Generator) Meta(namespace, name string) source.Meta {
	return source.Meta{Namespace: namespace, Name: name, Generation: int64(g.IntN(3))}
}

// Settings draws translator settings: an xDS cluster name, a connect
// timeout, global circuit breakers, upstream TLS versions and ciphers,
// (with Secrets) a client certificate, (with ExtensionOptions) one time in
// four extensionDefaults, which are valid (the API boundary checks them),
// and (with ExternalNames) three times in four enableExternalNameTargets.
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
	if g.o.ExtensionOptions && g.Chance(4) {
		s.ExtensionDefaults = g.ExtensionOptions(false)
	}
	if g.o.ExternalNames {
		s.ExternalNameTargets = !g.Chance(4)
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
		for _, name := range g.serviceNames() {
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
// then none; with ExternalNames, one time in three among its ExternalName
// Services, now and then mixed with the others); a protocol; TLS
// validation against a Secret of the universe one time in four (with
// Secrets), with h2 or without a protocol; a load balancer strategy,
// timeouts and circuit breakers one time in three or four; with
// ExtensionOptions, spec.options and annotations one time in five each.
func (g *Generator) ExtensionService(meta source.Meta) source.ExtensionService {
	es := source.ExtensionService{Meta: meta}
	targets := 1 + g.IntN(3)
	if g.o.InvalidSpecs && g.Chance(6) {
		targets = 0
	}
	external := g.o.ExternalNames && len(g.o.Universe.ExternalNames) > 0 && g.Chance(3)
	for range targets {
		es.Spec.Services = append(es.Spec.Services, source.ExtensionServiceTarget{
			Name:   g.targetName(external),
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
	if g.o.ExtensionOptions {
		if g.Chance(5) {
			es.Spec.Options = g.extensionOptions(&es.Spec)
		}
		if g.Chance(5) {
			es.Annotations = g.Annotations(g.extensionOptions(&es.Spec))
		}
	}
	return es
}

// targetName draws a target Service; when external, one of the
// universe's ExternalName Services but one time in six.
func (g *Generator) targetName(external bool) string {
	if external && !g.Chance(6) {
		return Pick(g, g.o.Universe.ExternalNames...)
	}
	return Pick(g, g.o.Universe.Services...)
}

// serviceNames are the universe's Services, and with ExternalNames its
// ExternalName ones after them.
func (g *Generator) serviceNames() []string {
	if !g.o.ExternalNames {
		return g.o.Universe.Services
	}
	return append(slices.Clip(g.o.Universe.Services), g.o.Universe.ExternalNames...)
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
// an ExternalName one) with one or two ports from 9000 up. A Service of
// the universe's ExternalNames (with ExternalNames) is an ExternalName one
// with a DNS name, valid but (with InvalidSpecs) one time in four; with
// InvalidSpecs, one time in eight it is a ClusterIP one.
func (g *Generator) Service(meta source.Meta) source.Service {
	svc := source.Service{Meta: meta, Type: "ClusterIP"}
	switch {
	case g.o.ExternalNames && slices.Contains(g.o.Universe.ExternalNames, meta.Name):
		if !g.o.InvalidSpecs || !g.Chance(8) {
			svc.Type, svc.ExternalName = "ExternalName", g.hostnames.pick(g, g.o.InvalidSpecs)
		}
	case g.o.InvalidSpecs && g.Chance(8):
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
	es := source.EndpointSlice{Meta: meta, Service: g.sliceService(), AddressType: Pick(g, g.families...)}
	es.Ports = g.EndpointPorts()
	eps := make([]source.Endpoint, g.IntN(g.o.MaxEndpoints+1))
	for i := range eps {
		eps[i] = g.Endpoint()
	}
	es.Endpoints = source.MakeEndpoints(eps...)
	return es
}

// sliceService draws the Service a slice is labelled for: one of the
// universe, or (one time in eight) none.
func (g *Generator) sliceService() string {
	if g.Chance(8) {
		return ""
	}
	return Pick(g, g.o.Universe.Services...)
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

// Endpoint draws an endpoint at an address drawn by Address, not ready
// one time in four.
func (g *Generator) Endpoint() source.Endpoint {
	return source.Endpoint{NotReady: Pick(g, g.notReady...), Address: g.Address()}
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
