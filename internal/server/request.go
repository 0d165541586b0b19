package server

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
)

// Reasons carried in BadRequest field violations, so clients can tell
// problems apart without parsing messages.
const (
	ReasonRequired          = "REQUIRED"
	ReasonInvalidName       = "INVALID_NAME"
	ReasonDuplicate         = "DUPLICATE"
	ReasonOutOfRange        = "OUT_OF_RANGE"
	ReasonInvalidDuration   = "INVALID_DURATION"
	ReasonInvalidFormat     = "INVALID_FORMAT"
	ReasonInvalidCharacters = "INVALID_CHARACTERS"
)

// maxAuthorityLen is the longest HTTP authority Envoy accepts in
// GrpcService.EnvoyGrpc.authority (its validation rules say 16384 bytes).
const maxAuthorityLen = 16384

// maxReportedViolations bounds the field violations one error carries: a
// request with two million broken endpoints must not produce an error larger
// than the request. The status message still counts every problem.
const maxReportedViolations = 16

// decodeRequest checks req and converts it into the pipeline's input.
//
// It guarantees what package source promises about its input: every object
// has a kind, a namespace that is a DNS-1123 label and a name that is a
// DNS-1123 subdomain (so "namespace/name" is unambiguous and
// "extension/<namespace>/<name>" names exactly one ExtensionService), names
// are unique per kind, every EndpointSlice names its Service, every port
// number that is set lies in 1..65535, and the settings are parsed. Anything
// else is left to translation, which reports it in the ExtensionService's
// status. Any violation gives an InvalidArgument error whose message names
// the first problem and whose BadRequest details list the field paths.
//
// To stay cheap on requests with millions of endpoints, the result aliases
// req's strings, byte slices, maps and optional-field pointers instead of
// copying them, and each repeated kind shares one backing array: req must not
// change while the result is in use.
func decodeRequest(req *tributaryv1.TranslateRequest) (*source.Objects, source.Settings, error) {
	var p problems
	settings := decodeSettings(req.GetSettings(), "settings", &p)
	objs := decodeObjects(req.GetObjects(), "objects", &p)
	if err := p.err(); err != nil {
		return nil, source.Settings{}, err
	}
	return objs, settings, nil
}

// decodeStart checks a SyncStart's settings like a TranslateRequest's,
// reporting problems at "start.settings...". A bad setting fails the whole
// stream with InvalidArgument: without settings there is no session.
func decodeStart(start *tributaryv1.SyncStart) (source.Settings, error) {
	var p problems
	settings := decodeSettings(start.GetSettings(), "start.settings", &p)
	return settings, p.err()
}

// decodeBatch checks a SyncBatch and converts it into a session.Batch;
// problems go to p and the result is then of no use.
//
// Every upsert passes exactly the checks of a Translate request's objects,
// reported at "batch.upserts[i]...". Beyond those: every delete names a kind
// and a valid namespace and name, and no object appears twice in one batch
// (upserted twice, deleted twice, or both upserted and deleted), since the
// batch would then not say what the object becomes. The result gives every
// object arrays of its own (see ownArrays) and aliases pb's strings, maps
// and optional-field pointers: pb must not change afterwards.
//
// decodeBatch does not bound the batch's size: see decodeWithinLimits.
func decodeBatch(pb *tributaryv1.SyncBatch, p *problems) *session.Batch {
	upserts, deletes := pb.GetUpserts(), pb.GetDeletes()
	d := newDecoder(upserts, "batch.upserts", ownArrays)
	d.decode(upserts, p)
	b := &session.Batch{Upserts: d.objs}
	if len(deletes) == 0 {
		return b
	}
	b.Deletes = make([]session.Ref, 0, len(deletes))
	var deleted [numKinds]map[source.NamespacedName]int
	for i, del := range deletes {
		k, known := kindOf(del.GetKind())
		if !known {
			field := fmt.Sprintf("batch.deletes[%d].kind", i)
			if del.GetKind() == tributaryv1.ObjectKind_OBJECT_KIND_UNSPECIFIED {
				p.add(field, ReasonRequired, fmt.Sprintf("batch.deletes[%d]: kind is required (%s)", i, knownObjectKinds))
			} else {
				p.add(field, ReasonOutOfRange, fmt.Sprintf("batch.deletes[%d]: kind %d is not a known kind (%s)", i, del.GetKind(), knownObjectKinds))
			}
			continue
		}
		ref := objectRef{list: "batch.deletes", index: i, kind: k, namespace: del.GetNamespace(), name: del.GetName()}
		if !checkName(ref, p, "namespace", "name") {
			continue
		}
		key := source.NamespacedName{Namespace: ref.namespace, Name: ref.name}
		if j, both := d.seen[k.id][key]; both {
			ref.report(p, "name", ReasonDuplicate, fmt.Sprintf("duplicates batch.upserts[%d]: a batch cannot both upsert and delete an object", j))
			continue
		}
		if deleted[k.id] == nil {
			deleted[k.id] = map[source.NamespacedName]int{}
		}
		if j, twice := deleted[k.id][key]; twice {
			ref.report(p, "name", ReasonDuplicate, fmt.Sprintf("duplicates batch.deletes[%d]: two deletes name the same %s", j, k.name))
			continue
		}
		deleted[k.id][key] = i
		b.Deletes = append(b.Deletes, session.Ref{Kind: k.session, Name: key})
	}
	return b
}

// knownObjectKinds lists the valid ObjectKinds, for messages.
const knownObjectKinds = "one of OBJECT_KIND_EXTENSION_SERVICE, OBJECT_KIND_SERVICE, OBJECT_KIND_ENDPOINT_SLICE, OBJECT_KIND_SECRET, OBJECT_KIND_TLS_CERTIFICATE_DELEGATION"

// decodeSettings checks pb, found at path at of the client's message
// ("settings" in a TranslateRequest, "start.settings" in a SyncRequest).
func decodeSettings(pb *tributaryv1.Settings, at string, p *problems) source.Settings {
	var s source.Settings
	if pb == nil {
		return s
	}
	if name := pb.GetXdsClusterName(); name != "" {
		// The name also becomes the HTTP authority of the EDS gRPC stream,
		// which Envoy rejects when it holds NUL, CR or LF; refusing every
		// control character keeps the stream and the logs readable.
		field := at + ".xdsClusterName"
		if bad := badText(name); bad != "" {
			p.add(field, ReasonInvalidCharacters, fmt.Sprintf("%s %s %s", field, quote(name), bad))
		} else if len(name) > maxAuthorityLen {
			p.add(field, ReasonOutOfRange, fmt.Sprintf("%s is %d bytes long; Envoy takes at most %d in an HTTP authority", field, len(name), maxAuthorityLen))
		}
		s.XDSClusterName = name
	}
	if raw := pb.GetConnectTimeout(); raw != "" {
		field := at + ".connectTimeout"
		d, err := time.ParseDuration(raw)
		switch {
		case err != nil:
			p.add(field, ReasonInvalidDuration, field+": "+truncate(err.Error()))
		case d < 0:
			p.add(field, ReasonOutOfRange, fmt.Sprintf("%s %s is negative", field, quote(raw)))
		default:
			s.ConnectTimeout = d
		}
	}
	if cb := pb.GetGlobalCircuitBreakers(); cb != nil {
		s.GlobalCircuitBreakers = decodeCircuitBreakers(cb)
	}
	if raw := pb.GetClientCertificate(); raw != "" {
		field := at + ".clientCertificate"
		ns, name, ok := strings.Cut(raw, "/")
		switch {
		case !ok || strings.Contains(name, "/"):
			p.add(field, ReasonInvalidFormat, fmt.Sprintf("%s %s is not \"namespace/name\"", field, quote(raw)))
		case !isDNS1123Label(ns):
			p.add(field, ReasonInvalidName, fmt.Sprintf("%s %s: namespace %s is not a valid namespace (%s)", field, quote(raw), quote(ns), dns1123LabelRule))
		case !isDNS1123Subdomain(name):
			p.add(field, ReasonInvalidName, fmt.Sprintf("%s %s: name %s is not a valid name (%s)", field, quote(raw), quote(name), dns1123SubdomainRule))
		default:
			s.ClientCertificate = &source.NamespacedName{Namespace: ns, Name: name}
		}
	}
	if tls := pb.GetUpstreamTls(); tls != nil {
		s.UpstreamTLS = &source.UpstreamTLS{
			MinimumProtocolVersion: tls.GetMinimumProtocolVersion(),
			MaximumProtocolVersion: tls.GetMaximumProtocolVersion(),
			CipherSuites:           tls.GetCipherSuites(),
		}
	}
	return s
}

func decodeCircuitBreakers(pb *tributaryv1.CircuitBreakers) *source.CircuitBreakers {
	return &source.CircuitBreakers{
		MaxConnections:        pb.GetMaxConnections(),
		MaxPendingRequests:    pb.GetMaxPendingRequests(),
		MaxRequests:           pb.GetMaxRequests(),
		MaxRetries:            pb.GetMaxRetries(),
		PerHostMaxConnections: pb.GetPerHostMaxConnections(),
	}
}

// kind describes one kind of input object, for messages ("EndpointSlice"),
// field paths ("endpointSlice", its KubernetesObject oneof case) and the
// kind's number in ObjectReference and in package session.
type kind struct {
	id          int
	name, field string
	ref         tributaryv1.ObjectKind
	session     session.Kind
}

// Kind ids index per-kind tables.
const (
	idExtensionService = iota
	idService
	idEndpointSlice
	idSecret
	idTLSCertificateDelegation
	numKinds
)

var (
	kindExtensionService         = kind{idExtensionService, "ExtensionService", "extensionService", tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE, session.KindExtensionService}
	kindService                  = kind{idService, "Service", "service", tributaryv1.ObjectKind_OBJECT_KIND_SERVICE, session.KindService}
	kindEndpointSlice            = kind{idEndpointSlice, "EndpointSlice", "endpointSlice", tributaryv1.ObjectKind_OBJECT_KIND_ENDPOINT_SLICE, session.KindEndpointSlice}
	kindSecret                   = kind{idSecret, "Secret", "secret", tributaryv1.ObjectKind_OBJECT_KIND_SECRET, session.KindSecret}
	kindTLSCertificateDelegation = kind{idTLSCertificateDelegation, "TLSCertificateDelegation", "tlsCertificateDelegation", tributaryv1.ObjectKind_OBJECT_KIND_TLS_CERTIFICATE_DELEGATION, session.KindTLSCertificateDelegation}
)

// kinds lists every kind by id.
var kinds = [numKinds]kind{kindExtensionService, kindService, kindEndpointSlice, kindSecret, kindTLSCertificateDelegation}

// kindOf returns the kind an ObjectReference names, if it names one.
func kindOf(ref tributaryv1.ObjectKind) (kind, bool) {
	for _, k := range kinds {
		if k.ref == ref {
			return k, true
		}
	}
	return kind{}, false
}

// objectRef locates one object of the client's message in messages: the
// list holding it ("objects", "batch.upserts", "batch.deletes") and its
// index there. Its strings are built only when a problem is reported, so
// valid requests pay nothing.
type objectRef struct {
	list  string
	index int
	kind  kind
	// viaKind says the list holds KubernetesObjects, so paths go through the
	// oneof case ("objects[3].service.metadata.name"); ObjectReferences have
	// their fields directly ("batch.deletes[3].name").
	viaKind         bool
	namespace, name string
}

// report records a problem with field (a path below the object, such as
// "spec.ports[0].port"); text completes the sentence that starts with it.
func (r objectRef) report(p *problems, field, reason, text string) {
	p.count++
	if len(p.violations) >= maxReportedViolations {
		return
	}
	label := r.kind.name
	if r.namespace != "" && r.name != "" {
		label += " " + quote(r.namespace+"/"+r.name)
	}
	element := fmt.Sprintf("%s[%d]", r.list, r.index)
	path := element + "." + field
	if r.viaKind {
		path = element + "." + r.kind.field + "." + field
	}
	p.record(path, reason, fmt.Sprintf("%s (%s): %s %s", element, label, field, text))
}

// checkName checks the namespace and name of the object ref locates,
// reporting problems at nsField and nameField; it reports whether both are
// valid.
func checkName(ref objectRef, p *problems, nsField, nameField string) bool {
	ok := true
	switch ns := ref.namespace; {
	case ns == "":
		ref.report(p, nsField, ReasonRequired, "is required")
		ok = false
	case !isDNS1123Label(ns):
		ref.report(p, nsField, ReasonInvalidName, quote(ns)+" is not a valid namespace ("+dns1123LabelRule+")")
		ok = false
	}
	switch name := ref.name; {
	case name == "":
		ref.report(p, nameField, ReasonRequired, "is required")
		ok = false
	case !isDNS1123Subdomain(name):
		ref.report(p, nameField, ReasonInvalidName, quote(name)+" is not a valid name ("+dns1123SubdomainRule+")")
		ok = false
	}
	return ok
}

// sizes counts what decodeObjects allocates, so every kind and every
// repeated field gets one exactly sized backing array.
type sizes struct {
	extensionServices, services, endpointSlices, secrets, delegations int
	targets, servicePorts, endpoints, endpointPorts, certDelegations  int
}

func countObjects(objects []*tributaryv1.KubernetesObject) sizes {
	var n sizes
	for _, o := range objects {
		switch k := o.GetKind().(type) {
		case *tributaryv1.KubernetesObject_ExtensionService:
			n.extensionServices++
			n.targets += len(k.ExtensionService.GetSpec().GetServices())
		case *tributaryv1.KubernetesObject_Service:
			n.services++
			n.servicePorts += len(k.Service.GetSpec().GetPorts())
		case *tributaryv1.KubernetesObject_EndpointSlice:
			n.endpointSlices++
			n.endpoints += len(k.EndpointSlice.GetEndpoints())
			n.endpointPorts += len(k.EndpointSlice.GetPorts())
		case *tributaryv1.KubernetesObject_Secret:
			n.secrets++
		case *tributaryv1.KubernetesObject_TlsCertificateDelegation:
			n.delegations++
			n.certDelegations += len(k.TlsCertificateDelegation.GetDelegations())
		}
	}
	return n
}

// arrayLayout says where a decoder puts the repeated fields inside objects
// (targets, ports, endpoints, delegations).
type arrayLayout bool

const (
	// sharedArrays carves each repeated field out of one exactly sized array
	// per field: the objects of a Translate request live and die together,
	// and millions of endpoints cost one allocation.
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
	endpoints       []source.Endpoint
	endpointPorts   []source.EndpointPort
	certDelegations []source.CertificateDelegation
	// seen maps, per kind id, each namespace/name to the index of the
	// object that first used it.
	seen [numKinds]map[source.NamespacedName]int
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
func decodeObjects(objects []*tributaryv1.KubernetesObject, list string, p *problems) *source.Objects {
	d := newDecoder(objects, list, sharedArrays)
	d.decode(objects, p)
	return &d.objs
}

func newDecoder(objects []*tributaryv1.KubernetesObject, list string, layout arrayLayout) *decoder {
	n := countObjects(objects)
	d := &decoder{
		list: list,
		objs: source.Objects{
			ExtensionServices:         make([]source.ExtensionService, 0, n.extensionServices),
			Services:                  make([]source.Service, 0, n.services),
			EndpointSlices:            make([]source.EndpointSlice, 0, n.endpointSlices),
			Secrets:                   make([]source.Secret, 0, n.secrets),
			TLSCertificateDelegations: make([]source.TLSCertificateDelegation, 0, n.delegations),
		},
		seen: [numKinds]map[source.NamespacedName]int{
			idExtensionService:         make(map[source.NamespacedName]int, n.extensionServices),
			idService:                  make(map[source.NamespacedName]int, n.services),
			idEndpointSlice:            make(map[source.NamespacedName]int, n.endpointSlices),
			idSecret:                   make(map[source.NamespacedName]int, n.secrets),
			idTLSCertificateDelegation: make(map[source.NamespacedName]int, n.delegations),
		},
	}
	if layout == sharedArrays {
		d.targets = make([]source.ExtensionServiceTarget, n.targets)
		d.servicePorts = make([]source.ServicePort, n.servicePorts)
		d.endpoints = make([]source.Endpoint, n.endpoints)
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
				"%s[%d]: kind is required (one of extensionService, service, endpointSlice, secret, tlsCertificateDelegation)", d.list, i))
		}
	}
}

// ref locates object i, of kind k and metadata m.
func (d *decoder) ref(i int, k kind, m *tributaryv1.ObjectMeta) objectRef {
	return objectRef{list: d.list, index: i, kind: k, viaKind: true, namespace: m.GetNamespace(), name: m.GetName()}
}

// meta checks an object's metadata and its uniqueness within its kind.
func (d *decoder) meta(ref objectRef, m *tributaryv1.ObjectMeta, p *problems) source.Meta {
	if m == nil {
		ref.report(p, "metadata", ReasonRequired, "is required")
		return source.Meta{}
	}
	ok := checkName(ref, p, "metadata.namespace", "metadata.name")
	meta := source.Meta{Namespace: m.GetNamespace(), Name: m.GetName(), Generation: m.GetGeneration(), Labels: m.GetLabels()}
	if ok {
		key := source.NamespacedName{Namespace: meta.Namespace, Name: meta.Name}
		seen := d.seen[ref.kind.id]
		if first, dup := seen[key]; dup {
			ref.report(p, "metadata.name", ReasonDuplicate, fmt.Sprintf("duplicates %s[%d]: two %ss have the same namespace and name", d.list, first, ref.kind.name))
		} else {
			seen[key] = ref.index
		}
	}
	return meta
}

// checkPort checks the port number of list[index] the way Kubernetes does:
// 1..65535. The field path is formatted only for a bad port.
func checkPort(ref objectRef, p *problems, list string, index int, value int32) {
	if value < 1 || value > 65535 {
		ref.report(p, fmt.Sprintf("%s[%d].port", list, index), ReasonOutOfRange, fmt.Sprintf("%d is outside 1..65535", value))
	}
}

func (d *decoder) extensionService(i int, pb *tributaryv1.ExtensionService, p *problems) {
	ref := d.ref(i, kindExtensionService, pb.GetMetadata())
	es := source.ExtensionService{Meta: d.meta(ref, pb.GetMetadata(), p)}
	spec := pb.GetSpec()
	targets := spec.GetServices()
	es.Spec.Services = carve(&d.targets, len(targets))
	for j, t := range targets {
		checkPort(ref, p, "spec.services", j, t.GetPort())
		es.Spec.Services[j] = source.ExtensionServiceTarget{Name: t.GetName(), Port: t.GetPort(), Weight: t.GetWeight()}
	}
	if v := spec.GetValidation(); v != nil {
		es.Spec.Validation = &source.UpstreamValidation{CASecret: v.GetCaSecret(), SubjectName: v.GetSubjectName(), SubjectNames: v.GetSubjectNames()}
	}
	if spec != nil {
		es.Spec.Protocol = spec.Protocol
	}
	if lb := spec.GetLoadBalancerPolicy(); lb != nil {
		es.Spec.LoadBalancerPolicy = &source.LoadBalancerPolicy{Strategy: lb.GetStrategy()}
	}
	if tp := spec.GetTimeoutPolicy(); tp != nil {
		es.Spec.TimeoutPolicy = &source.TimeoutPolicy{Response: tp.GetResponse(), Idle: tp.GetIdle(), IdleConnection: tp.GetIdleConnection()}
	}
	es.Spec.ProtocolVersion = spec.GetProtocolVersion()
	if cb := spec.GetCircuitBreakerPolicy(); cb != nil {
		es.Spec.CircuitBreakerPolicy = decodeCircuitBreakers(cb)
	}
	d.objs.ExtensionServices = append(d.objs.ExtensionServices, es)
}

func (d *decoder) service(i int, pb *tributaryv1.Service, p *problems) {
	ref := d.ref(i, kindService, pb.GetMetadata())
	svc := source.Service{Meta: d.meta(ref, pb.GetMetadata(), p)}
	spec := pb.GetSpec()
	svc.Type = spec.GetType()
	svc.ExternalName = spec.GetExternalName()
	ports := spec.GetPorts()
	svc.Ports = carve(&d.servicePorts, len(ports))
	for j, sp := range ports {
		checkPort(ref, p, "spec.ports", j, sp.GetPort())
		svc.Ports[j] = source.ServicePort{Name: sp.GetName(), Port: sp.GetPort(), TargetPort: sp.GetTargetPort(), Protocol: sp.GetProtocol()}
	}
	d.objs.Services = append(d.objs.Services, svc)
}

func (d *decoder) endpointSlice(i int, pb *tributaryv1.EndpointSlice, p *problems) {
	ref := d.ref(i, kindEndpointSlice, pb.GetMetadata())
	es := source.EndpointSlice{Meta: d.meta(ref, pb.GetMetadata(), p), AddressType: pb.GetAddressType()}
	if pb.GetMetadata() != nil && es.Labels[source.ServiceNameLabel] == "" {
		ref.report(p, `metadata.labels["`+source.ServiceNameLabel+`"]`, ReasonRequired, "is required")
	}
	endpoints := pb.GetEndpoints()
	es.Endpoints = carve(&d.endpoints, len(endpoints))
	for j, e := range endpoints {
		// Optional fields are pointers in both types: sharing them costs no
		// allocation per endpoint.
		c := e.GetConditions()
		dst := &es.Endpoints[j]
		dst.Addresses = e.GetAddresses()
		if c != nil {
			dst.Ready, dst.Serving, dst.Terminating = c.Ready, c.Serving, c.Terminating
		}
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
		es.Ports[j] = source.EndpointPort{Name: ep.Name, Port: ep.Port, Protocol: ep.Protocol}
	}
	d.objs.EndpointSlices = append(d.objs.EndpointSlices, es)
}

func (d *decoder) secret(i int, pb *tributaryv1.Secret, p *problems) {
	ref := d.ref(i, kindSecret, pb.GetMetadata())
	s := source.Secret{Meta: d.meta(ref, pb.GetMetadata(), p), Type: pb.GetType()}
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
	ref := d.ref(i, kindTLSCertificateDelegation, pb.GetMetadata())
	td := source.TLSCertificateDelegation{Meta: d.meta(ref, pb.GetMetadata(), p)}
	dels := pb.GetDelegations()
	td.Delegations = carve(&d.certDelegations, len(dels))
	for j, cd := range dels {
		td.Delegations[j] = source.CertificateDelegation{SecretName: cd.GetSecretName(), TargetNamespaces: cd.GetTargetNamespaces()}
	}
	d.objs.TLSCertificateDelegations = append(d.objs.TLSCertificateDelegations, td)
}

// problems collects what is wrong with a request.
type problems struct {
	count      int
	violations []*errdetails.BadRequest_FieldViolation
}

// add counts and records one problem.
func (p *problems) add(field, reason, message string) {
	p.count++
	p.record(field, reason, message)
}

// record keeps a violation if there is room; the caller has counted it.
func (p *problems) record(field, reason, message string) {
	if len(p.violations) < maxReportedViolations {
		p.violations = append(p.violations, &errdetails.BadRequest_FieldViolation{Field: field, Reason: reason, Description: message})
	}
}

// message names the first problem and counts the others.
func (p *problems) message() string {
	msg := p.violations[0].Description
	if p.count > 1 {
		msg += fmt.Sprintf(" (and %d more problems)", p.count-1)
	}
	return msg
}

// err is nil for a valid request, else InvalidArgument with the first
// problem as message and the recorded ones as BadRequest details.
func (p *problems) err() error {
	if p.count == 0 {
		return nil
	}
	st := status.New(codes.InvalidArgument, p.message())
	if detailed, err := st.WithDetails(&errdetails.BadRequest{FieldViolations: p.violations}); err == nil {
		st = detailed
	}
	return st.Err()
}

const (
	dns1123LabelRule     = "at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit"
	dns1123SubdomainRule = "at most 253 lowercase letters, digits, '-' or '.', each dot-separated part starting and ending with a letter or digit"
)

// isDNS1123Label reports whether s is a Kubernetes namespace-style name.
func isDNS1123Label(s string) bool {
	return len(s) <= 63 && isLabelPart(s)
}

// isDNS1123Subdomain reports whether s is a Kubernetes object-style name.
func isDNS1123Subdomain(s string) bool {
	if len(s) > 253 {
		return false
	}
	for part := range strings.SplitSeq(s, ".") {
		if !isLabelPart(part) {
			return false
		}
	}
	return true
}

// isLabelPart reports whether s is non-empty, made of [a-z0-9-] and starts
// and ends with a letter or digit.
func isLabelPart(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// badText says why s cannot be used as a name in Envoy configuration, or ""
// if it can.
func badText(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "contains a control character"
		}
	}
	return ""
}

// maxQuoted bounds how much of a client-supplied string an error repeats.
const maxQuoted = 100

// quote quotes s for a message, shortened so that errors stay small
// whatever the request holds.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q...", runePrefix(s, maxQuoted))
}

// truncate shortens a message built from client input, on a rune boundary.
func truncate(s string) string {
	if len(s) <= 2*maxQuoted {
		return s
	}
	return runePrefix(s, 2*maxQuoted) + "..."
}

// runePrefix is at most the first n bytes of s (n < len(s)), cut on a rune
// boundary.
func runePrefix(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
