package deploy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// certManagerExample is the cert-manager example the documentation shows
// for the Secret the base mounts.
const certManagerExample = "cert-manager-tributary-tls.yaml"

// cert-manager's Go API types are not a dependency of this module (the
// cert-manager module is large and is not served by the module proxy this
// project uses), so the example is decoded strictly into the minimal types
// below. They list exactly the fields the example uses, with cert-manager's
// JSON names (cert-manager.io/v1); a field the example adds must be added
// here too, and anything else fails the decoding.
type certManagerObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace,omitempty"`
	} `json:"metadata"`
	// Spec is decoded into issuerSpec or certificateSpec by Kind.
	Spec json.RawMessage `json:"spec"`
}

type issuerSpec struct {
	SelfSigned *struct{} `json:"selfSigned,omitempty"`
	CA         *struct {
		SecretName string `json:"secretName"`
	} `json:"ca,omitempty"`
}

type certificateSpec struct {
	SecretName  string `json:"secretName"`
	CommonName  string `json:"commonName,omitempty"`
	IsCA        bool   `json:"isCA,omitempty"`
	Duration    string `json:"duration,omitempty"`
	RenewBefore string `json:"renewBefore,omitempty"`
	PrivateKey  *struct {
		Algorithm      string `json:"algorithm"`
		Size           int    `json:"size"`
		RotationPolicy string `json:"rotationPolicy,omitempty"`
	} `json:"privateKey,omitempty"`
	Usages    []string `json:"usages,omitempty"`
	DNSNames  []string `json:"dnsNames,omitempty"`
	IssuerRef struct {
		Group string `json:"group"`
		Kind  string `json:"kind"`
		Name  string `json:"name"`
	} `json:"issuerRef"`
}

// certManagerFile is the example, decoded.
type certManagerFile struct {
	issuers      map[string]issuerSpec // by kind/namespace/name
	certificates []namedCertificate
}

type namedCertificate struct {
	name, namespace string
	spec            certificateSpec
}

func readCertManagerExample(t *testing.T) certManagerFile {
	t.Helper()
	file := certManagerFile{issuers: map[string]issuerSpec{}}
	for i, doc := range exampleDocuments(t, certManagerExample) {
		var obj certManagerObject
		if err := unmarshalStrict(doc, &obj); err != nil {
			t.Fatalf("%s: document %d: %v", certManagerExample, i+1, err)
		}
		if obj.APIVersion != "cert-manager.io/v1" {
			t.Errorf("%s: document %d: apiVersion %q, want cert-manager.io/v1", certManagerExample, i+1, obj.APIVersion)
		}
		spec := []byte(obj.Spec)
		id := fmt.Sprintf("%s %s/%s", obj.Kind, obj.Metadata.Namespace, obj.Metadata.Name)
		switch obj.Kind {
		case "Issuer", "ClusterIssuer":
			var is issuerSpec
			if err := unmarshalStrict(spec, &is); err != nil {
				t.Fatalf("%s: %s: %v", certManagerExample, id, err)
			}
			if (is.SelfSigned == nil) == (is.CA == nil) {
				t.Errorf("%s: %s: want exactly one of selfSigned and ca", certManagerExample, id)
			}
			if (obj.Kind == "ClusterIssuer") != (obj.Metadata.Namespace == "") {
				t.Errorf("%s: %s: an Issuer has a namespace, a ClusterIssuer none", certManagerExample, id)
			}
			file.issuers[issuerKey(obj.Kind, obj.Metadata.Namespace, obj.Metadata.Name)] = is
		case "Certificate":
			var cs certificateSpec
			if err := unmarshalStrict(spec, &cs); err != nil {
				t.Fatalf("%s: %s: %v", certManagerExample, id, err)
			}
			file.certificates = append(file.certificates, namedCertificate{obj.Metadata.Name, obj.Metadata.Namespace, cs})
		default:
			t.Errorf("%s: document %d is a %s; want Issuer, ClusterIssuer or Certificate", certManagerExample, i+1, obj.Kind)
		}
	}
	return file
}

func issuerKey(kind, namespace, name string) string {
	if kind == "ClusterIssuer" {
		namespace = ""
	}
	return kind + "/" + namespace + "/" + name
}

// issuer returns the Issuer or ClusterIssuer c names, failing the test when
// the example does not define it.
func (f certManagerFile) issuer(t *testing.T, c namedCertificate) issuerSpec {
	t.Helper()
	ref := c.spec.IssuerRef
	if ref.Group != "cert-manager.io" {
		t.Errorf("Certificate %s/%s: issuerRef group %q, want cert-manager.io", c.namespace, c.name, ref.Group)
	}
	is, ok := f.issuers[issuerKey(ref.Kind, c.namespace, ref.Name)]
	if !ok {
		t.Fatalf("Certificate %s/%s is issued by %s %s, which %s does not define", c.namespace, c.name, ref.Kind, ref.Name, certManagerExample)
	}
	return is
}

// withDNSName returns the certificates of the example that carry name.
func (f certManagerFile) withDNSName(name string) []namedCertificate {
	var found []namedCertificate
	for _, c := range f.certificates {
		if slices.Contains(c.spec.DNSNames, name) {
			found = append(found, c)
		}
	}
	return found
}

// TestCertManagerExample checks the example against the manifests: it
// issues the Secret the base mounts, in the base's namespace, with the DNS
// names clients reach Tributary by; a CA issuer signs it, so that ca.crt
// (which Tributary takes as its client CA) is the CA; and the same CA
// signs client certificates with the SANs the Contour overlay admits.
func TestCertManagerExample(t *testing.T) {
	file := readCertManagerExample(t)
	base := build(t, "base")
	d := one[*appsv1.Deployment](t, base, "tributary")
	secret := volume(d, "tls").Secret.SecretName

	var serving []namedCertificate
	for _, c := range file.certificates {
		if c.spec.SecretName == secret {
			serving = append(serving, c)
		}
	}
	if len(serving) != 1 {
		t.Fatalf("%d Certificates issue the Secret %s, want 1", len(serving), secret)
	}
	server := serving[0]
	if server.namespace != d.Namespace {
		t.Errorf("Certificate %s is in namespace %q; the Deployment mounts %s in %q", server.name, server.namespace, secret, d.Namespace)
	}
	if server.spec.IsCA || !slices.Contains(server.spec.Usages, "server auth") {
		t.Errorf("Certificate %s: isCA %v, usages %v; want a leaf for server auth", server.name, server.spec.IsCA, server.spec.Usages)
	}
	// "tributary" is the name the Envoy bootstrap and the adapter verify
	// (docs/direct-eds.md); each Service's name, and for a headless one
	// each pod's name under it, is the name a client dialing it by DNS
	// verifies.
	want := []string{"tributary"}
	for _, o := range base {
		if svc, ok := o.(*corev1.Service); ok {
			name := fmt.Sprintf("%s.%s.svc.cluster.local", svc.Name, svc.Namespace)
			want = append(want, name)
			if svc.Spec.ClusterIP == corev1.ClusterIPNone {
				want = append(want, "*."+name)
			}
		}
	}
	for _, name := range want {
		if !slices.Contains(server.spec.DNSNames, name) {
			t.Errorf("Certificate %s lacks the DNS name %s (it has %v)", server.name, name, server.spec.DNSNames)
		}
	}
	ca := file.issuer(t, server)
	if ca.CA == nil {
		t.Fatalf("Certificate %s is issued by a %s %s that is not a CA issuer: its ca.crt would not be the CA that signs the clients", server.name, server.spec.IssuerRef.Kind, server.spec.IssuerRef.Name)
	}
	// The CA issuer's Secret comes from a Certificate of the example that
	// is a CA: in cert-manager's namespace for a ClusterIssuer.
	caNamespace := server.namespace
	if server.spec.IssuerRef.Kind == "ClusterIssuer" {
		caNamespace = "cert-manager"
	}
	var caCert *namedCertificate
	for i, c := range file.certificates {
		if c.spec.SecretName == ca.CA.SecretName && c.namespace == caNamespace {
			caCert = &file.certificates[i]
		}
	}
	if caCert == nil || !caCert.spec.IsCA {
		t.Errorf("no CA Certificate issues the Secret %s/%s that the issuer %s signs with", caNamespace, ca.CA.SecretName, server.spec.IssuerRef.Name)
	}

	// Every client SAN the Contour overlay admits has a client certificate
	// from the same CA.
	args := serveArgs(t, one[*appsv1.Deployment](t, build(t, "overlays/contour"), "tributary"))
	var sans []string
	for _, flag := range []string{"tls-allowed-client-sans", "xds-tls-allowed-client-sans"} {
		sans = append(sans, strings.Split(args[flag], ",")...)
	}
	for _, san := range sans {
		clients := file.withDNSName(san)
		if len(clients) != 1 {
			t.Errorf("%d Certificates carry the client SAN %q the Contour overlay admits, want 1", len(clients), san)
			continue
		}
		c := clients[0]
		if !slices.Contains(c.spec.Usages, "client auth") {
			t.Errorf("Certificate %s/%s: usages %v lack client auth", c.namespace, c.name, c.spec.Usages)
		}
		if c.spec.IssuerRef != server.spec.IssuerRef {
			t.Errorf("Certificate %s/%s is issued by %+v, Tributary's by %+v: Tributary would refuse it", c.namespace, c.name, c.spec.IssuerRef, server.spec.IssuerRef)
		}
	}
}
