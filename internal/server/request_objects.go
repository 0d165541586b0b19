package server

import (
	"fmt"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/source"
)

// sizes counts what decodeObjects allocates, so every kind and every
// repeated field gets one exactly sized backing array.
type sizes struct {
	// objects counts the objects of each kind, by source.Kind.
	objects                                               []int
	targets, servicePorts, endpointPorts, certDelegations int
}

func countObjects(objects []*tributaryv1.KubernetesObject) sizes {
	n := sizes{objects: make([]int, len(apiKinds))}
	for _, o := range objects {
		switch k := o.GetKind().(type) {
		case *tributaryv1.KubernetesObject_ExtensionService:
			n.objects[source.KindExtensionService]++
			n.targets += len(k.ExtensionService.GetSpec().GetServices())
		case *tributaryv1.KubernetesObject_Service:
			n.objects[source.KindService]++
			n.servicePorts += len(k.Service.GetSpec().GetPorts())
		case *tributaryv1.KubernetesObject_EndpointSlice:
			n.objects[source.KindEndpointSlice]++
			n.endpointPorts += len(k.EndpointSlice.GetPorts())
		case *tributaryv1.KubernetesObject_Secret:
			n.objects[source.KindSecret]++
		case *tributaryv1.KubernetesObject_TlsCertificateDelegation:
			n.objects[source.KindTLSCertificateDelegation]++
			n.certDelegations += len(k.TlsCertificateDelegation.GetDelegations())
		}
	}
	return n
}

// arrayLayout says where a decoder puts the repeated fields inside objects
// (targets, ports, delegations). A slice's endpoints are packed in arrays
// of their own either way (see source.Endpoints).
type arrayLayout bool

const (
	// sharedArrays carves each repeated field out of one exactly sized array
	// per field: the objects of a Translate request live and die together,
	// and tens of thousands of ports cost one allocation.
	sharedArrays arrayLayout = true
	// ownArrays gives each object arrays of its own: a Sync session keeps
	// objects from many batches, and one it keeps must not pin the rest of
	// its batch.
	ownArrays arrayLayout = false
)

// decoder converts objects into one source.Objects.
type decoder struct {
	// list is the path of the objects in the client's message, for
	// problems: "objects" or "batch.upserts".
	list            string
	objs            source.Objects
	targets         []source.ExtensionServiceTarget
	servicePorts    []source.ServicePort
	endpointPorts   []source.EndpointPort
	certDelegations []source.CertificateDelegation
	// packed packs each EndpointSlice's endpoints, its buffers reused from
	// one slice to the next.
	packed source.EndpointsBuilder
	// seen records, per source.Kind, each namespace/name and the object
	// that first used it.
	seen []*namesSeen
	// metas counts the objects whose metadata meta checked; decode holds it
	// to the number of objects listed (see meta).
	metas int
	// offWire, when not nil, is what the wire fast path kept of the
	// EndpointSlices still to decode, in order, outside their messages
	// (see sliceOffWire).
	offWire []*sliceOffWire
}

// carve returns the next n elements of *backing with their capacity capped,
// so an append by a later stage can never overwrite a neighbour. Without a
// backing array (ownArrays) it allocates n elements.
func carve[T any](backing *[]T, n int) []T {
	if n == 0 {
		return nil
	}
	if len(*backing) < n {
		return make([]T, n)
	}
	s := (*backing)[:n:n]
	*backing = (*backing)[n:]
	return s
}

// decodeObjects checks the objects of a Translate request, found at path list
// of the client's message, and converts them into shared arrays.
// offWire is what the wire fast path kept of the EndpointSlices outside
// their messages, nil when the messages hold everything.
func decodeObjects(objects []*tributaryv1.KubernetesObject, offWire []*sliceOffWire, list string, p *problems) *source.Objects {
	d := newDecoder(objects, list, sharedArrays)
	d.offWire = offWire
	d.decode(objects, p)
	return &d.objs
}

func newDecoder(objects []*tributaryv1.KubernetesObject, list string, layout arrayLayout) *decoder {
	n := countObjects(objects)
	d := &decoder{
		list: list,
		objs: source.Objects{
			ExtensionServices:         make([]source.ExtensionService, 0, n.objects[source.KindExtensionService]),
			Services:                  make([]source.Service, 0, n.objects[source.KindService]),
			EndpointSlices:            make([]source.EndpointSlice, 0, n.objects[source.KindEndpointSlice]),
			Secrets:                   make([]source.Secret, 0, n.objects[source.KindSecret]),
			TLSCertificateDelegations: make([]source.TLSCertificateDelegation, 0, n.objects[source.KindTLSCertificateDelegation]),
		},
		seen: make([]*namesSeen, len(apiKinds)),
	}
	for k := range source.Kinds() {
		d.seen[k] = newNamesSeen(n.objects[k], func(position int32) source.NamespacedName { return d.nameAt(k, int(position)) })
	}
	if layout == sharedArrays {
		d.targets = make([]source.ExtensionServiceTarget, n.targets)
		d.servicePorts = make([]source.ServicePort, n.servicePorts)
		d.endpointPorts = make([]source.EndpointPort, n.endpointPorts)
		d.certDelegations = make([]source.CertificateDelegation, n.certDelegations)
	}
	return d
}

func (d *decoder) decode(objects []*tributaryv1.KubernetesObject, p *problems) {
	for i, o := range objects {
		switch k := o.GetKind().(type) {
		case *tributaryv1.KubernetesObject_ExtensionService:
			d.extensionService(i, k.ExtensionService, p)
		case *tributaryv1.KubernetesObject_Service:
			d.service(i, k.Service, p)
		case *tributaryv1.KubernetesObject_EndpointSlice:
			d.endpointSlice(i, k.EndpointSlice, p)
		case *tributaryv1.KubernetesObject_Secret:
			d.secret(i, k.Secret, p)
		case *tributaryv1.KubernetesObject_TlsCertificateDelegation:
			d.delegation(i, k.TlsCertificateDelegation, p)
		default:
			p.add(fmt.Sprintf("%s[%d]", d.list, i), ReasonRequired, fmt.Sprintf(
				"%s[%d]: kind is required (%s)", d.list, i, knownObjectFields))
		}
		if listed := len(d.objs.ExtensionServices) + len(d.objs.Services) + len(d.objs.EndpointSlices) +
			len(d.objs.Secrets) + len(d.objs.TLSCertificateDelegations); listed != d.metas {
			panic(fmt.Sprintf("server: %d objects listed after %d metadata checks: meta must be called once for each object, before it is listed", listed, d.metas))
		}
	}
}

// ref locates object i, of kind k and metadata m.
func (d *decoder) ref(i int, k apiKind, m *tributaryv1.ObjectMeta) objectRef {
	return objectRef{list: d.list, index: i, kind: k, viaKind: true, namespace: m.GetNamespace(), name: m.GetName()}
}

// meta checks an object's metadata and its uniqueness within its kind.
//
// It is called once for each object, before the object joins the list of
// its kind, at the list's end, where namesSeen will look for it; decode
// panics on an object listed without it.
func (d *decoder) meta(ref objectRef, m *tributaryv1.ObjectMeta, p *problems) source.Meta {
	d.metas++
	if m == nil {
		ref.report(p, "metadata", ReasonRequired, "is required")
		return source.Meta{}
	}
	ok := checkName(ref, p, "metadata.namespace", "metadata.name")
	meta := source.Meta{Namespace: m.GetNamespace(), Name: m.GetName(), Generation: m.GetGeneration()}
	// Labels are checked on every kind; of their values, translation reads
	// only an EndpointSlice's service name (source.EndpointSlice.Service).
	checkLabels(ref, p, m.GetLabels())
	if ok {
		key := source.NamespacedName{Namespace: meta.Namespace, Name: meta.Name}
		if first, dup := d.seen[ref.kind.Kind].add(key, ref.index, d.listed(ref.kind.Kind)); dup {
			ref.report(p, "metadata.name", ReasonDuplicate, fmt.Sprintf("duplicates %s[%d]: two %ss have the same namespace and name", d.list, first, ref.kind))
		}
	}
	return meta
}

// listed is how many objects of kind k the decoder has listed.
func (d *decoder) listed(k source.Kind) int {
	switch k {
	case source.KindExtensionService:
		return len(d.objs.ExtensionServices)
	case source.KindService:
		return len(d.objs.Services)
	case source.KindEndpointSlice:
		return len(d.objs.EndpointSlices)
	case source.KindSecret:
		return len(d.objs.Secrets)
	case source.KindTLSCertificateDelegation:
		return len(d.objs.TLSCertificateDelegations)
	}
	panic(fmt.Sprintf("server: no list of kind %d", k)) // unreachable: every kind has one
}

// nameAt is the name of the object of kind k at position of its list.
func (d *decoder) nameAt(k source.Kind, position int) source.NamespacedName {
	switch k {
	case source.KindExtensionService:
		return d.objs.ExtensionServices[position].NamespacedName()
	case source.KindService:
		return d.objs.Services[position].NamespacedName()
	case source.KindEndpointSlice:
		return d.objs.EndpointSlices[position].NamespacedName()
	case source.KindSecret:
		return d.objs.Secrets[position].NamespacedName()
	case source.KindTLSCertificateDelegation:
		return d.objs.TLSCertificateDelegations[position].NamespacedName()
	}
	panic(fmt.Sprintf("server: no list of kind %d", k)) // unreachable: every kind has one
}

// checkPort checks the port number of list[index] the way Kubernetes does:
// 1..65535. The field path is formatted only for a bad port.
func checkPort(ref objectRef, p *problems, list string, index int, value int32) {
	if value < 1 || value > 65535 {
		ref.report(p, fmt.Sprintf("%s[%d].port", list, index), ReasonOutOfRange, fmt.Sprintf("%d is outside 1..65535", value))
	}
}

func (d *decoder) extensionService(i int, pb *tributaryv1.ExtensionService, p *problems) {
	ref := d.ref(i, apiKinds[source.KindExtensionService], pb.GetMetadata())
	es := source.ExtensionService{Meta: d.meta(ref, pb.GetMetadata(), p)}
	// Only an ExtensionService's annotations are read; other kinds drop
	// theirs unseen.
	es.Annotations = decodeAnnotations(ref, p, pb.GetMetadata().GetAnnotations())
	spec := pb.GetSpec()
	targets := spec.GetServices()
	es.Spec.Services = carve(&d.targets, len(targets))
	for j, t := range targets {
		// The name has no length limit: Contour's CRD sets none, and a name
		// no Service can have is a Service not found, in the status.
		checkPort(ref, p, "spec.services", j, t.GetPort())
		es.Spec.Services[j] = source.ExtensionServiceTarget{Name: t.GetName(), Port: t.GetPort(), Weight: t.GetWeight()}
	}
	if v := spec.GetValidation(); v != nil {
		caSecretLimit.check(ref, p, "spec.validation.caSecret", v.GetCaSecret())
		// Contour's CRD bounds caSecret and subjectName, not the entries of
		// subjectNames: translation refuses a long one in the status.
		subjectNameLimit.check(ref, p, "spec.validation.subjectName", v.GetSubjectName())
		es.Spec.Validation = &source.UpstreamValidation{CASecret: v.GetCaSecret(), SubjectName: v.GetSubjectName(), SubjectNames: v.GetSubjectNames()}
	}
	if spec != nil {
		if spec.Protocol != nil {
			keywordLimit.check(ref, p, "spec.protocol", *spec.Protocol)
		}
		es.Spec.Protocol = spec.Protocol
	}
	// The strategy and the timeouts have no length limit: Contour's CRD
	// sets none, an unknown strategy means round robin, and a timeout is
	// parsed (or refused in the status) in one pass.
	if lb := spec.GetLoadBalancerPolicy(); lb != nil {
		es.Spec.LoadBalancerPolicy = &source.LoadBalancerPolicy{Strategy: lb.GetStrategy()}
	}
	if tp := spec.GetTimeoutPolicy(); tp != nil {
		es.Spec.TimeoutPolicy = &source.TimeoutPolicy{Response: tp.GetResponse(), Idle: tp.GetIdle(), IdleConnection: tp.GetIdleConnection()}
	}
	keywordLimit.check(ref, p, "spec.protocolVersion", spec.GetProtocolVersion())
	es.Spec.ProtocolVersion = spec.GetProtocolVersion()
	if cb := spec.GetCircuitBreakerPolicy(); cb != nil {
		es.Spec.CircuitBreakerPolicy = decodeCircuitBreakers(cb)
	}
	es.Spec.Options = decodeOptions(spec.GetOptions(), "spec.options", objectFields{ref, p})
	d.objs.ExtensionServices = append(d.objs.ExtensionServices, es)
}

func (d *decoder) service(i int, pb *tributaryv1.Service, p *problems) {
	ref := d.ref(i, apiKinds[source.KindService], pb.GetMetadata())
	svc := source.Service{Meta: d.meta(ref, pb.GetMetadata(), p)}
	spec := pb.GetSpec()
	svc.Type = spec.GetType()
	svc.ExternalName = spec.GetExternalName()
	keywordLimit.check(ref, p, "spec.type", svc.Type)
	dnsNameLimit.check(ref, p, "spec.externalName", svc.ExternalName)
	ports := spec.GetPorts()
	svc.Ports = carve(&d.servicePorts, len(ports))
	for j, sp := range ports {
		checkPort(ref, p, "spec.ports", j, sp.GetPort())
		if portNameLimit.tooLong(sp.GetName()) || targetPortLimit.tooLong(sp.GetTargetPort()) || keywordLimit.tooLong(sp.GetProtocol()) {
			portNameLimit.check(ref, p, fmt.Sprintf("spec.ports[%d].name", j), sp.GetName())
			targetPortLimit.check(ref, p, fmt.Sprintf("spec.ports[%d].targetPort", j), sp.GetTargetPort())
			keywordLimit.check(ref, p, fmt.Sprintf("spec.ports[%d].protocol", j), sp.GetProtocol())
		}
		svc.Ports[j] = source.ServicePort{Name: sp.GetName(), Port: sp.GetPort(), TargetPort: sp.GetTargetPort(), Protocol: sp.GetProtocol()}
	}
	d.objs.Services = append(d.objs.Services, svc)
}

func (d *decoder) endpointSlice(i int, pb *tributaryv1.EndpointSlice, p *problems) {
	ref := d.ref(i, apiKinds[source.KindEndpointSlice], pb.GetMetadata())
	// A slice without the service-name label is decoded like any other:
	// Kubernetes allows it (custom controllers make such slices), and
	// translation ignores it, as Contour does (see
	// source.EndpointSlice.Service). In a Sync session it can still
	// replace, as an upsert, a slice that had the label.
	es := source.EndpointSlice{
		Meta:        d.meta(ref, pb.GetMetadata(), p),
		Service:     pb.GetMetadata().GetLabels()[source.ServiceNameLabel],
		AddressType: pb.GetAddressType(),
	}
	keywordLimit.check(ref, p, "addressType", es.AddressType)
	if d.offWire != nil {
		// The endpoints made as the loop below would make them, and the
		// service-name label's value as the labels would give it, their
		// checks already passed: the fast path declines a request that
		// fails them.
		kept := d.offWire[0]
		d.offWire = d.offWire[1:]
		es.Endpoints, es.Service = kept.endpoints, kept.service
	} else {
		es.Endpoints = d.endpointsOf(ref, pb.GetEndpoints(), p)
	}
	ports := pb.GetPorts()
	es.Ports = carve(&d.endpointPorts, len(ports))
	for j, ep := range ports {
		if ep == nil {
			continue
		}
		if ep.Port != nil {
			checkPort(ref, p, "ports", j, *ep.Port)
		}
		// Each path is formatted only for a field that fails: a request
		// holds tens of thousands of slices, and formatting every port's
		// paths cost more than decoding the port.
		if ep.Name != nil && portNameLimit.tooLong(*ep.Name) {
			portNameLimit.check(ref, p, fmt.Sprintf("ports[%d].name", j), *ep.Name)
		}
		if ep.Protocol != nil && keywordLimit.tooLong(*ep.Protocol) {
			keywordLimit.check(ref, p, fmt.Sprintf("ports[%d].protocol", j), *ep.Protocol)
		}
		es.Ports[j] = source.EndpointPort{Name: ep.Name, Port: ep.Port, Protocol: ep.Protocol}
	}
	d.objs.EndpointSlices = append(d.objs.EndpointSlices, es)
}

// endpointsOf checks the endpoints of the EndpointSlice ref locates and
// packs them.
func (d *decoder) endpointsOf(ref objectRef, endpoints []*tributaryv1.Endpoint, p *problems) source.Endpoints {
	for j, e := range endpoints {
		addresses := e.GetAddresses()
		checkAddresses(ref, p, j, addresses)
		if len(addresses) == 0 {
			continue // nothing to use (Kubernetes requires one)
		}
		// Only the first address and the ready condition are kept: the
		// rest is what translation never reads, and the session would
		// otherwise hold the request's messages for as long as it lives.
		c := e.GetConditions()
		d.packed.Add(addresses[0], c != nil && c.Ready != nil && !*c.Ready)
	}
	return d.packed.Endpoints()
}

func (d *decoder) secret(i int, pb *tributaryv1.Secret, p *problems) {
	ref := d.ref(i, apiKinds[source.KindSecret], pb.GetMetadata())
	s := source.Secret{Meta: d.meta(ref, pb.GetMetadata(), p), Type: pb.GetType()}
	secretTypeLimit.check(ref, p, "type", s.Type)
	if n := len(pb.GetCaCrt()) + len(pb.GetTlsCrt()); n > maxSecretDataBytes {
		ref.report(p, "data", ReasonOutOfRange, fmt.Sprintf(
			"holds %d bytes of ca.crt and tls.crt; Kubernetes stores at most %d bytes of data in a Secret", n, maxSecretDataBytes))
	}
	// Proto3 cannot tell an absent key from an empty one; both read as absent.
	if b := pb.GetCaCrt(); len(b) > 0 {
		s.CACrt = b
	}
	if b := pb.GetTlsCrt(); len(b) > 0 {
		s.TLSCrt = b
	}
	d.objs.Secrets = append(d.objs.Secrets, s)
}

func (d *decoder) delegation(i int, pb *tributaryv1.TLSCertificateDelegation, p *problems) {
	ref := d.ref(i, apiKinds[source.KindTLSCertificateDelegation], pb.GetMetadata())
	td := source.TLSCertificateDelegation{Meta: d.meta(ref, pb.GetMetadata(), p)}
	dels := pb.GetDelegations()
	td.Delegations = carve(&d.certDelegations, len(dels))
	for j, cd := range dels {
		secretNameLimit.check(ref, p, fmt.Sprintf("delegations[%d].secretName", j), cd.GetSecretName())
		for k, ns := range cd.GetTargetNamespaces() {
			if namespaceLimit.tooLong(ns) {
				namespaceLimit.report(ref, p, fmt.Sprintf("delegations[%d].targetNamespaces[%d]", j, k), len(ns))
			}
		}
		td.Delegations[j] = source.CertificateDelegation{SecretName: cd.GetSecretName(), TargetNamespaces: cd.GetTargetNamespaces()}
	}
	d.objs.TLSCertificateDelegations = append(d.objs.TLSCertificateDelegations, td)
}

// checkAddresses checks the addresses of endpoint j of a slice: at most
// maxEndpointAddresses, each at most addressLimit long. Whether they are
// IPs is translation's to say, in a warning.
func checkAddresses(ref objectRef, p *problems, j int, addresses []string) {
	if len(addresses) > maxEndpointAddresses {
		ref.report(p, fmt.Sprintf("endpoints[%d].addresses", j), ReasonOutOfRange, fmt.Sprintf(
			"holds %d addresses; Kubernetes allows at most %d per endpoint", len(addresses), maxEndpointAddresses))
		return
	}
	for k, a := range addresses {
		if addressLimit.tooLong(a) {
			addressLimit.report(ref, p, fmt.Sprintf("endpoints[%d].addresses[%d]", j, k), len(a))
		}
	}
}
