package contour_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	contour_v1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/wrapperspb"
	core_v1 "k8s.io/api/core/v1"
	discovery_v1 "k8s.io/api/discovery/v1"
	meta_v1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// newCA returns a self-signed CA certificate in PEM.
func newCA(t *testing.T, name string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// The objects of the scenario, as the informers would hand them over.

func objectMeta(name string, generation int64, labels map[string]string) meta_v1.ObjectMeta {
	return meta_v1.ObjectMeta{Namespace: "auth", Name: name, Generation: generation, Labels: labels, ResourceVersion: "1"}
}

func extAuthz(generation int64, stableWeight, canaryWeight uint32) *contour_v1alpha1.ExtensionService {
	return &contour_v1alpha1.ExtensionService{
		ObjectMeta: objectMeta("ext-authz", generation, nil),
		Spec: contour_v1alpha1.ExtensionServiceSpec{
			Services: []contour_v1alpha1.ExtensionServiceTarget{
				{Name: "authz-stable", Port: 9001, Weight: stableWeight},
				{Name: "authz-canary", Port: 9001, Weight: canaryWeight},
			},
			UpstreamValidation: &contour_v1.UpstreamValidation{CACertificate: "authz-ca", SubjectName: "authz.auth.svc.cluster.local"},
			TimeoutPolicy:      &contour_v1.TimeoutPolicy{Response: "500ms"},
		},
	}
}

func authzService(name string) *core_v1.Service {
	return &core_v1.Service{
		ObjectMeta: objectMeta(name, 0, map[string]string{"app.kubernetes.io/name": "authz"}),
		Spec: core_v1.ServiceSpec{
			Type:  core_v1.ServiceTypeClusterIP,
			Ports: []core_v1.ServicePort{{Name: "grpc", Port: 9001, TargetPort: intstr.FromInt32(9000), Protocol: core_v1.ProtocolTCP}},
		},
	}
}

// pod is one endpoint: its address and whether it is ready; terminating
// pods are not ready but still serving, as Kubernetes reports them.
type pod struct {
	ip          string
	ready       bool
	terminating bool
}

func endpointSlice(name, svc string, pods ...pod) *discovery_v1.EndpointSlice {
	s := &discovery_v1.EndpointSlice{
		ObjectMeta: objectMeta(name, 0, map[string]string{
			discovery_v1.LabelServiceName: svc,
			discovery_v1.LabelManagedBy:   "endpointslice-controller.k8s.io",
		}),
		AddressType: discovery_v1.AddressTypeIPv4,
		Ports:       []discovery_v1.EndpointPort{{Name: new("grpc"), Port: new(int32(9000)), Protocol: new(core_v1.ProtocolTCP)}},
	}
	for _, p := range pods {
		s.Endpoints = append(s.Endpoints, discovery_v1.Endpoint{
			Addresses:  []string{p.ip},
			Conditions: discovery_v1.EndpointConditions{Ready: new(p.ready), Serving: new(p.ready || p.terminating), Terminating: new(p.terminating)},
			NodeName:   new("worker-1"),
		})
	}
	return s
}

func caSecret(bundle []byte) *core_v1.Secret {
	return &core_v1.Secret{
		ObjectMeta: objectMeta("authz-ca", 0, nil),
		Type:       core_v1.SecretTypeOpaque,
		Data:       map[string][]byte{"ca.crt": bundle},
	}
}

// Expected outputs.

// wantCluster is the Cluster of ext-authz trusting caBundle, written out in
// full from the contract.
func wantCluster(t *testing.T, caBundle []byte) *clusterv3.Cluster {
	t.Helper()
	xds := `{"resourceApiVersion": "V3", "apiConfigSource": {"apiType": "GRPC", "transportApiVersion": "V3",
		"grpcServices": [{"envoyGrpc": {"clusterName": "contour", "authority": "contour"}}]}}`
	js := `{
	  "name": "extension/auth/ext-authz",
	  "altStatName": "extension_auth_ext-authz",
	  "type": "EDS",
	  "edsClusterConfig": {"serviceName": "extension/auth/ext-authz", "edsConfig": ` + xds + `},
	  "connectTimeout": "2s",
	  "commonLbConfig": {"healthyPanicThreshold": {}, "localityWeightedLbConfig": {}},
	  "transportSocket": {
	    "name": "envoy.transport_sockets.tls",
	    "typedConfig": {
	      "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
	      "sni": "authz.auth.svc.cluster.local",
	      "commonTlsContext": {
	        "alpnProtocols": ["h2"],
	        "validationContext": {
	          "trustedCa": {"inlineBytes": "` + base64.StdEncoding.EncodeToString(caBundle) + `"},
	          "matchTypedSubjectAltNames": [{"sanType": "DNS", "matcher": {"exact": "authz.auth.svc.cluster.local"}}]
	        }
	      }
	    }
	  },
	  "typedExtensionProtocolOptions": {
	    "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
	      "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
	      "explicitHttpConfig": {"http2ProtocolOptions": {}}
	    }
	  }
	}`
	c := &clusterv3.Cluster{}
	if err := protojson.Unmarshal([]byte(js), c); err != nil {
		t.Fatalf("expected Cluster: %v", err)
	}
	return c
}

// locality is one target's share of the ClusterLoadAssignment.
type locality struct {
	service string
	weight  uint32
	ips     []string
}

func wantCLA(localities ...locality) *endpointv3.ClusterLoadAssignment {
	cla := &endpointv3.ClusterLoadAssignment{ClusterName: clusterName}
	for _, l := range localities {
		lle := &endpointv3.LocalityLbEndpoints{Locality: &corev3.Locality{SubZone: "auth/" + l.service + "/9001"}}
		if l.weight > 0 {
			lle.LoadBalancingWeight = wrapUint32(l.weight)
		}
		for _, ip := range l.ips {
			lle.LbEndpoints = append(lle.LbEndpoints, &endpointv3.LbEndpoint{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address: ip, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 9000},
				}}},
			}}})
		}
		cla.Endpoints = append(cla.Endpoints, lle)
	}
	return cla
}

// validStatus is the status of a valid ext-authz whose targets carry the
// localities' ready endpoints and weights: its availability, beside the
// conditions.
func validStatus(generation int64, localities ...locality) *tributaryv1.ExtensionServiceStatus {
	st := &tributaryv1.ExtensionServiceStatus{
		Namespace: "auth", Name: "ext-authz",
		Conditions: []*tributaryv1.DetailedCondition{{
			Type: "Valid", Status: "True", ObservedGeneration: generation, Reason: "Valid", Message: "Valid ExtensionService",
		}},
		ClusterName:     clusterName,
		ResponseTimeout: "500ms",
	}
	for _, l := range localities {
		st.Availability = append(st.Availability, &tributaryv1.TargetAvailability{
			Service: l.service, Port: 9001, ReadyEndpoints: uint32(len(l.ips)), Weight: l.weight,
		})
	}
	return st
}

// state is what the caches hold after a step.
type state struct {
	clusters map[string]*clusterv3.Cluster
	clas     map[string]*endpointv3.ClusterLoadAssignment
	statuses map[string]*tributaryv1.ExtensionServiceStatus
}

func clone[M ~map[string]V, V any](m M) M {
	out := make(M, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func wrapUint32(v uint32) *wrapperspb.UInt32Value { return wrapperspb.UInt32(v) }
