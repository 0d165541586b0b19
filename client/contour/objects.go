package contour

import (
	"maps"
	"math"
	"slices"
	"strings"

	contour_v1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	core_v1 "k8s.io/api/core/v1"
	discovery_v1 "k8s.io/api/discovery/v1"
	meta_v1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// Keys of a Secret's data that translation reads. Every other key, tls.key
// above all, is left behind: the service never needs private material.
const (
	SecretCACertKey  = "ca.crt"
	SecretTLSCertKey = "tls.crt"
)

// ExtensionService converts a Contour ExtensionService; nil gives nil.
// Absent optional fields (protocol, validation, policies) stay absent.
func ExtensionService(es *contour_v1alpha1.ExtensionService) *tributaryv1.ExtensionService {
	if es == nil {
		return nil
	}
	spec := &es.Spec
	out := &tributaryv1.ExtensionService{
		Metadata: extensionServiceMeta(&es.ObjectMeta),
		Spec: &tributaryv1.ExtensionServiceSpec{
			Protocol:        clonePtr(spec.Protocol),
			ProtocolVersion: string(spec.ProtocolVersion),
		},
	}
	for _, t := range spec.Services {
		out.Spec.Services = append(out.Spec.Services, &tributaryv1.ExtensionServiceTarget{
			Name:   t.Name,
			Port:   saturateInt32(t.Port),
			Weight: t.Weight,
		})
	}
	if v := spec.UpstreamValidation; v != nil {
		out.Spec.Validation = &tributaryv1.UpstreamValidation{
			CaSecret:     v.CACertificate,
			SubjectName:  v.SubjectName,
			SubjectNames: slices.Clone(v.SubjectNames),
		}
	}
	if lb := spec.LoadBalancerPolicy; lb != nil {
		// requestHashPolicies change nothing for an extension (see the
		// contract), so they are not carried.
		out.Spec.LoadBalancerPolicy = &tributaryv1.LoadBalancerPolicy{Strategy: lb.Strategy}
	}
	if tp := spec.TimeoutPolicy; tp != nil {
		out.Spec.TimeoutPolicy = &tributaryv1.TimeoutPolicy{
			Response:       tp.Response,
			Idle:           tp.Idle,
			IdleConnection: tp.IdleConnection,
		}
	}
	out.Spec.CircuitBreakerPolicy = circuitBreakers(spec.CircuitBreakerPolicy)
	return out
}

// Service converts a v1 Service; nil gives nil. Annotations are not carried:
// they never change the translation (the protocol comes from the
// ExtensionService alone).
func Service(svc *core_v1.Service) *tributaryv1.Service {
	if svc == nil {
		return nil
	}
	out := &tributaryv1.Service{
		Metadata: objectMeta(&svc.ObjectMeta),
		Spec: &tributaryv1.ServiceSpec{
			Type:         string(svc.Spec.Type),
			ExternalName: svc.Spec.ExternalName,
		},
	}
	for _, p := range svc.Spec.Ports {
		out.Spec.Ports = append(out.Spec.Ports, &tributaryv1.ServicePort{
			Name:       p.Name,
			Port:       p.Port,
			TargetPort: targetPort(p.TargetPort),
			Protocol:   string(p.Protocol),
		})
	}
	return out
}

// targetPort renders a target port as text. The zero IntOrString is how an
// unset targetPort decodes, so it becomes "" rather than a made-up "0".
func targetPort(p intstr.IntOrString) string {
	if p == (intstr.IntOrString{}) {
		return ""
	}
	return p.String()
}

// EndpointSlice converts a discovery.k8s.io/v1 EndpointSlice; nil gives nil.
// Unset conditions and unset port fields stay unset: Kubernetes gives unset
// a meaning of its own (an endpoint with no ready condition is ready).
func EndpointSlice(slice *discovery_v1.EndpointSlice) *tributaryv1.EndpointSlice {
	if slice == nil {
		return nil
	}
	out := &tributaryv1.EndpointSlice{
		Metadata:    objectMeta(&slice.ObjectMeta),
		AddressType: string(slice.AddressType),
	}
	for _, ep := range slice.Endpoints {
		e := &tributaryv1.Endpoint{Addresses: slices.Clone(ep.Addresses)}
		c := ep.Conditions
		if c.Ready != nil || c.Serving != nil || c.Terminating != nil {
			e.Conditions = &tributaryv1.EndpointConditions{
				Ready:       clonePtr(c.Ready),
				Serving:     clonePtr(c.Serving),
				Terminating: clonePtr(c.Terminating),
			}
		}
		out.Endpoints = append(out.Endpoints, e)
	}
	for _, p := range slice.Ports {
		port := &tributaryv1.EndpointPort{Name: clonePtr(p.Name)}
		if p.Port != nil {
			port.Port = new(*p.Port)
		}
		if p.Protocol != nil {
			port.Protocol = new(string(*p.Protocol))
		}
		out.Ports = append(out.Ports, port)
	}
	return out
}

// Secret converts a v1 Secret, keeping only its ca.crt and tls.crt keys;
// nil gives nil. stringData, which the API server merges into data on write
// (and which only appears in objects that never went through it, such as
// manifests on disk), wins over data as it would there.
func Secret(s *core_v1.Secret) *tributaryv1.Secret {
	if s == nil {
		return nil
	}
	return &tributaryv1.Secret{
		Metadata: objectMeta(&s.ObjectMeta),
		Type:     string(s.Type),
		CaCrt:    secretKey(s, SecretCACertKey),
		TlsCrt:   secretKey(s, SecretTLSCertKey),
	}
}

func secretKey(s *core_v1.Secret, key string) []byte {
	if v, ok := s.StringData[key]; ok {
		return []byte(v)
	}
	if v, ok := s.Data[key]; ok {
		// An empty key is present and empty, not absent.
		return append([]byte{}, v...)
	}
	return nil
}

// TLSCertificateDelegation converts a Contour TLSCertificateDelegation; nil
// gives nil.
func TLSCertificateDelegation(d *contour_v1.TLSCertificateDelegation) *tributaryv1.TLSCertificateDelegation {
	if d == nil {
		return nil
	}
	out := &tributaryv1.TLSCertificateDelegation{Metadata: objectMeta(&d.ObjectMeta)}
	for _, cd := range d.Spec.Delegations {
		out.Delegations = append(out.Delegations, &tributaryv1.CertificateDelegation{
			SecretName:       cd.SecretName,
			TargetNamespaces: slices.Clone(cd.TargetNamespaces),
		})
	}
	return out
}

func objectMeta(m *meta_v1.ObjectMeta) *tributaryv1.ObjectMeta {
	out := &tributaryv1.ObjectMeta{
		Namespace:  m.Namespace,
		Name:       m.Name,
		Generation: m.Generation,
	}
	if len(m.Labels) > 0 {
		out.Labels = maps.Clone(m.Labels)
	}
	return out
}

// annotationPrefix starts the key of every annotation translation reads:
// the options of an ExtensionService that Contour's CRD has no field for.
const annotationPrefix = "tributary.dev/"

// extensionServiceMeta is objectMeta plus the ExtensionService's
// annotationPrefix annotations. No other annotation is carried, on this
// kind or any other: translation reads none, and some are large (kubectl's
// last-applied-configuration repeats the whole object), which would make
// every message bigger for nothing.
func extensionServiceMeta(m *meta_v1.ObjectMeta) *tributaryv1.ObjectMeta {
	out := objectMeta(m)
	for k, v := range m.Annotations {
		if strings.HasPrefix(k, annotationPrefix) {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out
}

func circuitBreakers(cb *contour_v1alpha1.CircuitBreakers) *tributaryv1.CircuitBreakers {
	if cb == nil {
		return nil
	}
	return &tributaryv1.CircuitBreakers{
		MaxConnections:        cb.MaxConnections,
		MaxPendingRequests:    cb.MaxPendingRequests,
		MaxRequests:           cb.MaxRequests,
		MaxRetries:            cb.MaxRetries,
		PerHostMaxConnections: cb.PerHostMaxConnections,
	}
}

// saturateInt32 narrows a Contour port (a Go int) to the API's int32. A value
// out of range saturates instead of wrapping, so a nonsense port stays a
// nonsense port that the service reports, rather than turning into a valid one.
func saturateInt32(v int) int32 {
	return int32(min(max(v, math.MinInt32), math.MaxInt32))
}

// clonePtr copies *p, so the message shares nothing with the informer's
// object; nil stays nil (unset).
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	return new(*p)
}
