// Package source holds the input of a translation: plain Go mirrors of the
// Kubernetes objects and translator-wide settings, as the API delivered them.
//
// Nothing here is validated beyond what the API boundary guarantees (every
// object has a namespace and a name, and names are unique per kind);
// package model decides what the objects mean. The types carry no gRPC or
// protobuf dependency so the translation pipeline stays a pure library.
package source

import (
	"cmp"
	"time"
)

// Meta is the object metadata translation reads.
type Meta struct {
	Namespace  string
	Name       string
	Generation int64
	// Annotations holds, for an ExtensionService, the annotations whose key
	// starts with AnnotationPrefix; the API boundary drops the others, and
	// every annotation of other kinds.
	Annotations map[string]string
}

// AnnotationPrefix starts the key of every annotation translation reads.
const AnnotationPrefix = "tributary.dev/"

// NamespacedName is the object's namespace/name.
func (m *Meta) NamespacedName() NamespacedName {
	return NamespacedName{Namespace: m.Namespace, Name: m.Name}
}

// Objects is one complete set of input objects. A slice may be in any order;
// within a kind, namespace/name pairs are unique.
type Objects struct {
	ExtensionServices         []ExtensionService
	Services                  []Service
	EndpointSlices            []EndpointSlice
	Secrets                   []Secret
	TLSCertificateDelegations []TLSCertificateDelegation
}

// ExtensionService mirrors projectcontour.io/v1alpha1 ExtensionService.
type ExtensionService struct {
	Meta
	Spec ExtensionServiceSpec
}

// ExtensionServiceSpec mirrors ExtensionService.spec. A nil pointer is an
// absent field.
type ExtensionServiceSpec struct {
	Services             []ExtensionServiceTarget
	Validation           *UpstreamValidation
	Protocol             *string
	LoadBalancerPolicy   *LoadBalancerPolicy
	TimeoutPolicy        *TimeoutPolicy
	ProtocolVersion      string
	CircuitBreakerPolicy *CircuitBreakers
	// Options is tributary.v1.ExtensionServiceSpec.options, which Contour's
	// CRD does not have; nil when absent.
	Options *ExtensionOptions
}

// ExtensionServiceTarget mirrors one entry of spec.services.
type ExtensionServiceTarget struct {
	Name   string
	Port   int32
	Weight uint32
}

// UpstreamValidation mirrors spec.validation.
type UpstreamValidation struct {
	CASecret     string
	SubjectName  string
	SubjectNames []string
}

// LoadBalancerPolicy mirrors spec.loadBalancerPolicy.
type LoadBalancerPolicy struct {
	Strategy string
}

// TimeoutPolicy mirrors spec.timeoutPolicy; values are unparsed.
type TimeoutPolicy struct {
	Response       string
	Idle           string
	IdleConnection string
}

// CircuitBreakers mirrors v1alpha1 CircuitBreakers; zero means unset.
type CircuitBreakers struct {
	MaxConnections        uint32
	MaxPendingRequests    uint32
	MaxRequests           uint32
	MaxRetries            uint32
	PerHostMaxConnections uint32
}

// Service mirrors the v1 Service fields translation reads.
type Service struct {
	Meta
	Type         string
	ExternalName string
	Ports        []ServicePort
}

// ServicePort mirrors one entry of Service.spec.ports.
type ServicePort struct {
	Name       string
	Port       int32
	TargetPort string
	Protocol   string
}

// ServiceNameLabel is the label that ties an EndpointSlice to its Service.
const ServiceNameLabel = "kubernetes.io/service-name"

// EndpointSlice mirrors the discovery.k8s.io/v1 EndpointSlice fields
// translation reads.
type EndpointSlice struct {
	Meta
	// Service is the value of the slice's ServiceNameLabel, the Service it
	// belongs to; "" when the label is absent or empty, a slice Kubernetes
	// allows (custom controllers make them) and translation ignores, as
	// Contour does. It is the only label translation reads, so the API
	// boundary keeps no other: a map per slice would cost a session
	// several bytes per endpoint.
	Service     string
	AddressType string
	Endpoints   Endpoints
	Ports       []EndpointPort
}

// EndpointPort mirrors one entry of EndpointSlice.ports; nil fields are unset.
type EndpointPort struct {
	Name     *string
	Port     *int32
	Protocol *string
}

// Secret mirrors a v1 Secret reduced to its public keys. CACrt and TLSCrt
// are nil when the key is absent.
type Secret struct {
	Meta
	Type   string
	CACrt  []byte
	TLSCrt []byte
}

// TLSCertificateDelegation mirrors projectcontour.io/v1 TLSCertificateDelegation.
type TLSCertificateDelegation struct {
	Meta
	Delegations []CertificateDelegation
}

// CertificateDelegation mirrors one entry of spec.delegations.
type CertificateDelegation struct {
	SecretName       string
	TargetNamespaces []string
}

// NamespacedName names one object.
type NamespacedName struct {
	Namespace string
	Name      string
}

// String gives "namespace/name", the form Kubernetes messages use.
func (n NamespacedName) String() string { return n.Namespace + "/" + n.Name }

// Compare orders names by namespace, then name: the order of every sorted
// list of objects and statuses.
func (n NamespacedName) Compare(o NamespacedName) int {
	// Not cmp.Or, which would compare the names of every pair, even of
	// two namespaces.
	if c := cmp.Compare(n.Namespace, o.Namespace); c != 0 {
		return c
	}
	return cmp.Compare(n.Name, o.Name)
}

// Settings are the translator-wide options, already parsed. The zero value
// means every default.
type Settings struct {
	// XDSClusterName is the Envoy cluster serving EDS; "" means DefaultXDSClusterName.
	XDSClusterName string
	// ConnectTimeout is Cluster.connect_timeout; 0 means DefaultConnectTimeout.
	// Never negative.
	ConnectTimeout time.Duration
	// GlobalCircuitBreakers apply to ExtensionServices without a
	// circuitBreakerPolicy; nil means none.
	GlobalCircuitBreakers *CircuitBreakers
	// ClientCertificate names the kubernetes.io/tls Secret Envoy presents to
	// h2 extensions; nil means none.
	ClientCertificate *NamespacedName
	// UpstreamTLS holds TLS parameters for h2 extensions; nil means none.
	UpstreamTLS *UpstreamTLS
	// ExtensionDefaults are the option groups of ExtensionServices that set
	// a group neither in spec.options nor in annotations; nil means none.
	// The API boundary has validated them.
	ExtensionDefaults *ExtensionOptions
	// ExternalNameTargets allows ExternalName Services as targets (off by
	// default, as in Contour).
	ExternalNameTargets bool
}

// UpstreamTLS mirrors the upstreamTLS setting; versions are unparsed ("1.2", "1.3").
type UpstreamTLS struct {
	MinimumProtocolVersion string
	MaximumProtocolVersion string
	CipherSuites           []string
}

// Defaults for Settings fields left zero.
const (
	DefaultXDSClusterName = "contour"
	DefaultConnectTimeout = 2 * time.Second
)
