// Package contour converts the Go types Contour already holds (its own API
// types and Kubernetes' core and discovery types) into the messages of
// TranslationService, so that Contour, or anything else that watches a
// cluster, can call Tributary without writing the mapping itself.
//
// Every function is a pure conversion: it copies, never validates, and never
// keeps a reference to its argument. Validation is the service's job, and a
// conversion that silently "fixed" an object would hide from the user the
// very problem the ExtensionService status is meant to report. What the
// conversions do guarantee is fidelity: a field Kubernetes leaves unset stays
// unset (an EndpointSlice endpoint with no ready condition is ready, which is
// not the same as ready: false), and nothing private (a Secret's tls.key)
// ever reaches a message.
package contour

import (
	contour_v1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	core_v1 "k8s.io/api/core/v1"
	discovery_v1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// Object converts any object of a kind translation reads. It reports false,
// and returns nil, for every other kind (and for a nil pointer of a known
// kind), so a caller can hand it everything it watches and keep what comes
// back.
func Object(obj runtime.Object) (*tributaryv1.KubernetesObject, bool) {
	switch o := obj.(type) {
	case *contour_v1alpha1.ExtensionService:
		if o != nil {
			return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_ExtensionService{ExtensionService: ExtensionService(o)}}, true
		}
	case *core_v1.Service:
		if o != nil {
			return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Service{Service: Service(o)}}, true
		}
	case *discovery_v1.EndpointSlice:
		if o != nil {
			return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_EndpointSlice{EndpointSlice: EndpointSlice(o)}}, true
		}
	case *core_v1.Secret:
		if o != nil {
			return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_Secret{Secret: Secret(o)}}, true
		}
	case *contour_v1.TLSCertificateDelegation:
		if o != nil {
			return &tributaryv1.KubernetesObject{Kind: &tributaryv1.KubernetesObject_TlsCertificateDelegation{TlsCertificateDelegation: TLSCertificateDelegation(o)}}, true
		}
	}
	return nil, false
}
