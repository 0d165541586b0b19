package server

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// The fixture: ExtensionService ns/plain (h2c) targets Service a, ns/tls
// (h2, validating with CA Secret ns/ca) targets Service b, and ns/broken
// targets a Service that does not exist.
const (
	plainCluster  = "extension/ns/plain"
	tlsCluster    = "extension/ns/tls"
	brokenCluster = "extension/ns/broken"
)

func plainES(protocol string) *tributaryv1.KubernetesObject {
	m := meta("ns", "plain")
	m.Generation = 2
	return extensionServiceObject(m, &tributaryv1.ExtensionServiceSpec{
		Services: []*tributaryv1.ExtensionServiceTarget{{Name: "a", Port: 9000}},
		Protocol: proto.String(protocol),
	})
}

func tlsES() *tributaryv1.KubernetesObject {
	return extensionServiceObject(meta("ns", "tls"), &tributaryv1.ExtensionServiceSpec{
		Services:   []*tributaryv1.ExtensionServiceTarget{{Name: "b", Port: 9000}},
		Validation: &tributaryv1.UpstreamValidation{CaSecret: "ca", SubjectName: "authz.ns.svc"},
	})
}

func brokenES() *tributaryv1.KubernetesObject {
	return extensionServiceObject(meta("ns", "broken"), &tributaryv1.ExtensionServiceSpec{
		Services: []*tributaryv1.ExtensionServiceTarget{{Name: "missing", Port: 9000}},
	})
}

func service(name string) *tributaryv1.KubernetesObject {
	return serviceObject(meta("ns", name), &tributaryv1.ServicePort{Name: "grpc", Port: 9000, TargetPort: "9001", Protocol: "TCP"})
}

// slice is EndpointSlice "<svc>-1" of Service svc with ready endpoints at
// addresses.
func slice(svc string, addresses ...string) *tributaryv1.KubernetesObject {
	endpoints := make([]*tributaryv1.Endpoint, len(addresses))
	for i, a := range addresses {
		endpoints[i] = &tributaryv1.Endpoint{Addresses: []string{a}, Conditions: &tributaryv1.EndpointConditions{Ready: proto.Bool(true)}}
	}
	return endpointSliceObject(sliceMeta("ns", svc+"-1", svc), []*tributaryv1.EndpointPort{tcpPort("grpc", 9001)}, endpoints...)
}

func caSecret(t *testing.T, seed byte) *tributaryv1.KubernetesObject {
	o := secretObject(meta("ns", "ca"))
	o.GetSecret().Type = "Opaque"
	o.GetSecret().CaCrt = certificatePEM(t, seed)
	return o
}

// certificatePEM is a self-signed CA certificate; seeds give distinct ones.
func certificatePEM(t *testing.T, seed byte) []byte {
	t.Helper()
	key := ed25519.NewKeyFromSeed(slices.Repeat([]byte{seed}, ed25519.SeedSize))
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(int64(seed)),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("ca-%d", seed)},
		NotBefore:             time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func fixture(t *testing.T) []*tributaryv1.KubernetesObject {
	return []*tributaryv1.KubernetesObject{
		plainES("h2c"), service("a"), slice("a", "10.0.0.1", "10.0.0.2"),
		tlsES(), service("b"), slice("b", "10.0.1.1"), caSecret(t, 1),
		brokenES(),
	}
}

// pick returns the resources of rs with the given names, in that order.
func pick(t *testing.T, rs []*tributaryv1.Resource, names ...string) []*tributaryv1.Resource {
	t.Helper()
	var out []*tributaryv1.Resource
	for _, name := range names {
		i := slices.IndexFunc(rs, func(r *tributaryv1.Resource) bool { return r.GetName() == name })
		if i < 0 {
			t.Fatalf("the oracle has no resource %q", name)
		}
		out = append(out, rs[i])
	}
	return out
}

// statusOf returns the oracle's status of ExtensionService ns/name.
func statusOf(t *testing.T, oracle *tributaryv1.TranslateResponse, name string) *tributaryv1.ExtensionServiceStatus {
	t.Helper()
	for _, st := range oracle.GetStatuses() {
		if st.GetNamespace() == "ns" && st.GetName() == name {
			return st
		}
	}
	t.Fatalf("the oracle has no status for ns/%s", name)
	return nil
}

// churnAddresses are the 200 addresses of an EndpointSlice in endpoint
// churn: each shift moves every address, so every batch changes the
// ClusterLoadAssignment, and 200 endpoints make it a few kilobytes, so a few
// answers fill a small flow-control window.
func churnAddresses(shift int) []string {
	out := make([]string, 200)
	for i := range out {
		n := i + shift
		out[i] = fmt.Sprintf("10.1.%d.%d", n/250, n%250+1)
	}
	return out
}
