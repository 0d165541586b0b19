package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	contour_v1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	core_v1 "k8s.io/api/core/v1"
	discovery_v1 "k8s.io/api/discovery/v1"
	meta_v1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func at(path string, doc, item int) Position { return Position{Path: path, Document: doc, Item: item} }

func typeMetaOf(apiVersion, kind string) meta_v1.TypeMeta {
	return meta_v1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

const allKinds = `# A header comment is not a document.
---
apiVersion: projectcontour.io/v1alpha1
kind: ExtensionService
metadata:
  namespace: auth
  name: ext
spec:
  protocol: h2c
  services:
  - name: svc
    port: 9001
    weight: 3
---
---
# an empty document between separators is not counted either
---
apiVersion: v1
kind: Service
metadata: {namespace: auth, name: svc}
spec:
  ports:
  - {name: grpc, port: 9001, targetPort: 9000}
--- # a separator may carry a comment
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  namespace: auth
  name: svc-1
  labels: {kubernetes.io/service-name: svc}
addressType: IPv4
endpoints:
- addresses: [10.0.0.1]
  conditions: {ready: false}
- addresses: [10.0.0.2]
ports:
- {name: grpc, port: 9000, protocol: TCP}
---
apiVersion: apps/v1
kind: Deployment
metadata: {namespace: auth, name: authz}
spec: {anything: goes, because: it is skipped}
---
apiVersion: v1
kind: Secret
metadata: {namespace: auth, name: ca}
type: Opaque
data: {ca.crt: Q0E=}
stringData: {tls.crt: CERT}
---
apiVersion: projectcontour.io/v1
kind: TLSCertificateDelegation
metadata: {namespace: certs, name: d}
spec:
  delegations:
  - {secretName: ca, targetNamespaces: ["*"]}
`

func TestDecode(t *testing.T) {
	tcp := core_v1.ProtocolTCP
	tests := []struct {
		name        string
		in          string
		wantObjects []Object
		wantSkipped []Skipped
		wantErr     string
	}{{
		name: "every kind, with comments and empty documents",
		in:   allKinds,
		wantObjects: []Object{
			{at("in", 1, -1), &contour_v1alpha1.ExtensionService{
				TypeMeta:   typeMetaOf("projectcontour.io/v1alpha1", "ExtensionService"),
				ObjectMeta: meta_v1.ObjectMeta{Namespace: "auth", Name: "ext"},
				Spec: contour_v1alpha1.ExtensionServiceSpec{
					Protocol: new("h2c"),
					Services: []contour_v1alpha1.ExtensionServiceTarget{{Name: "svc", Port: 9001, Weight: 3}},
				},
			}},
			{at("in", 2, -1), &core_v1.Service{
				TypeMeta:   typeMetaOf("v1", "Service"),
				ObjectMeta: meta_v1.ObjectMeta{Namespace: "auth", Name: "svc"},
				Spec:       core_v1.ServiceSpec{Ports: []core_v1.ServicePort{{Name: "grpc", Port: 9001, TargetPort: intstr.FromInt32(9000)}}},
			}},
			{at("in", 3, -1), &discovery_v1.EndpointSlice{
				TypeMeta:    typeMetaOf("discovery.k8s.io/v1", "EndpointSlice"),
				ObjectMeta:  meta_v1.ObjectMeta{Namespace: "auth", Name: "svc-1", Labels: map[string]string{"kubernetes.io/service-name": "svc"}},
				AddressType: discovery_v1.AddressTypeIPv4,
				Endpoints: []discovery_v1.Endpoint{
					{Addresses: []string{"10.0.0.1"}, Conditions: discovery_v1.EndpointConditions{Ready: new(false)}},
					{Addresses: []string{"10.0.0.2"}},
				},
				Ports: []discovery_v1.EndpointPort{{Name: new("grpc"), Port: new(int32(9000)), Protocol: &tcp}},
			}},
			{at("in", 5, -1), &core_v1.Secret{
				TypeMeta:   typeMetaOf("v1", "Secret"),
				ObjectMeta: meta_v1.ObjectMeta{Namespace: "auth", Name: "ca"},
				Type:       core_v1.SecretTypeOpaque,
				Data:       map[string][]byte{"ca.crt": []byte("CA")},
				StringData: map[string]string{"tls.crt": "CERT"},
			}},
			{at("in", 6, -1), &contour_v1.TLSCertificateDelegation{
				TypeMeta:   typeMetaOf("projectcontour.io/v1", "TLSCertificateDelegation"),
				ObjectMeta: meta_v1.ObjectMeta{Namespace: "certs", Name: "d"},
				Spec: contour_v1.TLSCertificateDelegationSpec{Delegations: []contour_v1.CertificateDelegation{
					{SecretName: "ca", TargetNamespaces: []string{"*"}},
				}},
			}},
		},
		wantSkipped: []Skipped{{at("in", 4, -1), "apps/v1", "Deployment", "auth", "authz"}},
	}, {
		name: "a JSON stream, as jq prints it",
		in: `{"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "a", "name": "one"}}
{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "a", "name": "cm"}}
null
{"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "a", "name": "two"}}`,
		wantObjects: []Object{
			{at("in", 1, -1), &core_v1.Service{TypeMeta: typeMetaOf("v1", "Service"), ObjectMeta: meta_v1.ObjectMeta{Namespace: "a", Name: "one"}}},
			{at("in", 3, -1), &core_v1.Service{TypeMeta: typeMetaOf("v1", "Service"), ObjectMeta: meta_v1.ObjectMeta{Namespace: "a", Name: "two"}}},
		},
		wantSkipped: []Skipped{{at("in", 2, -1), "v1", "ConfigMap", "a", "cm"}},
	}, {
		name: "a v1 List, as kubectl get -o yaml prints it",
		in: `apiVersion: v1
kind: Service
metadata: {namespace: a, name: first}
---
apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- apiVersion: v1
  kind: Service
  metadata: {namespace: a, name: one}
- apiVersion: v1
  kind: ConfigMap
  metadata: {namespace: a, name: cm}
- apiVersion: v1
  kind: Secret
  metadata: {namespace: a, name: two}
`,
		wantObjects: []Object{
			{at("in", 1, -1), &core_v1.Service{TypeMeta: typeMetaOf("v1", "Service"), ObjectMeta: meta_v1.ObjectMeta{Namespace: "a", Name: "first"}}},
			{at("in", 2, 0), &core_v1.Service{TypeMeta: typeMetaOf("v1", "Service"), ObjectMeta: meta_v1.ObjectMeta{Namespace: "a", Name: "one"}}},
			{at("in", 2, 2), &core_v1.Secret{TypeMeta: typeMetaOf("v1", "Secret"), ObjectMeta: meta_v1.ObjectMeta{Namespace: "a", Name: "two"}}},
		},
		wantSkipped: []Skipped{{at("in", 2, 1), "v1", "ConfigMap", "a", "cm"}},
	}, {
		name:        "a kind translation reads, at another apiVersion, is skipped",
		in:          "apiVersion: projectcontour.io/v1\nkind: ExtensionService\nmetadata: {name: x}\n",
		wantSkipped: []Skipped{{at("in", 1, -1), "projectcontour.io/v1", "ExtensionService", "", "x"}},
	}, {
		name:    "an unknown field names its full path and the object",
		in:      allKinds + "---\napiVersion: v1\nkind: Service\nmetadata: {namespace: auth, name: typo}\nspec:\n  ports:\n  - port: 1\n  - port: 2\n    portName: grpc\n",
		wantErr: `in: document 7: Service "auth/typo": unknown field "spec.ports[1].portName"`,
	}, {
		name:    "field names are case-sensitive",
		in:      "apiVersion: projectcontour.io/v1alpha1\nkind: ExtensionService\nmetadata: {namespace: a, name: e}\nspec:\n  Protocol: h2c\n",
		wantErr: `in: document 1: ExtensionService "a/e": unknown field "spec.Protocol"`,
	}, {
		name:    "every unknown field is reported",
		in:      "apiVersion: v1\nkind: Secret\nmetadata: {name: s, nmespace: a}\ndata: {}\nextra: 1\n",
		wantErr: `in: document 1: Secret "s": unknown field "extra"; unknown field "metadata.nmespace"`,
	}, {
		name:    "a repeated key, with the line in the file",
		in:      "apiVersion: v1\nkind: Service\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: b}\nmetadata: {name: c}\n",
		wantErr: `in: document 2: invalid YAML: line 8: key "metadata" already set in map`,
	}, {
		name:    "a repeated key in JSON",
		in:      `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a", "name": "b"}}`,
		wantErr: `in: document 1: Service "b": duplicate field "metadata.name"`,
	}, {
		name:    "a wrong type",
		in:      "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {namespace: a, name: s}\naddressType: IPv4\nendpoints: []\nports: [{port: nine}]\n",
		wantErr: `in: document 1: EndpointSlice "a/s": cannot unmarshal string into Go struct field EndpointPort.ports.port of type int32`,
	}, {
		name:    "missing kind",
		in:      "apiVersion: v1\nmetadata: {name: a}\n",
		wantErr: `in: document 1: missing "kind"`,
	}, {
		name:    "missing apiVersion",
		in:      "kind: Service\n",
		wantErr: `in: document 1: missing "apiVersion"`,
	}, {
		name:    "a document that is not a mapping",
		in:      "- apiVersion: v1\n  kind: Service\n",
		wantErr: `in: document 1: not a Kubernetes object: expected a mapping with apiVersion and kind`,
	}, {
		name:    "a bad list item",
		in:      "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: a}\n  spec: {typo: 1}\n",
		wantErr: `in: document 1: items[0]: Service "a": unknown field "spec.typo"`,
	}, {
		name:    "a List in a List",
		in:      `{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "List", "items": []}]}`,
		wantErr: `in: document 1: items[0]: a List inside a List is not supported`,
	}, {
		name:    "broken YAML",
		in:      "apiVersion: v1\nkind: Service\nmetadata: [\n",
		wantErr: `in: document 1: invalid YAML: line 3: did not find expected node content`,
	}, {
		name:    "broken JSON after a good document",
		in:      `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}} {"apiVersion": `,
		wantErr: `in: document 2: invalid JSON: unexpected end of input`,
	}, {
		name:    "a JSON syntax error names its line",
		in:      "{\"apiVersion\": \"v1\", \"kind\": \"Service\", \"metadata\": {\"name\": \"a\"}}\n{\"apiVersion\": \"v1\",\n \"kind\" \"Service\"}",
		wantErr: `in: document 2: invalid JSON: line 3: invalid character '"' after object key`,
	}, {
		name: "YAML in flow style is not mistaken for JSON",
		in:   "{apiVersion: v1, kind: Service, metadata: {namespace: a, name: flow}}\n",
		wantObjects: []Object{
			{at("in", 1, -1), &core_v1.Service{TypeMeta: typeMetaOf("v1", "Service"), ObjectMeta: meta_v1.ObjectMeta{Namespace: "a", Name: "flow"}}},
		},
	}, {
		name: "only comments",
		in:   "# nothing here\n---\n# nor here\n",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode("in", strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error:\n got %v\nwant %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.wantObjects, got.Objects); d != "" {
				t.Errorf("objects (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.wantSkipped, got.Skipped); d != "" {
				t.Errorf("skipped (-want +got):\n%s", d)
			}
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func service(name string) string {
	return "apiVersion: v1\nkind: Service\nmetadata: {namespace: a, name: " + name + "}\n"
}

// positions lists where each object came from and its name, in order.
func positions(m *Manifests) []string {
	var out []string
	for _, o := range m.Objects {
		out = append(out, o.String()+" "+o.Object.(meta_v1.Object).GetName())
	}
	return out
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b.yaml"), service("b1")+"---\n"+service("b2"))
	writeFile(t, filepath.Join(dir, "a", "z.json"), `{"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "a", "name": "az"}}`)
	writeFile(t, filepath.Join(dir, "a", "x.yml"), service("ax"))
	writeFile(t, filepath.Join(dir, "a", "notes.txt"), "not a manifest: {")
	writeFile(t, filepath.Join(dir, "C.YAML"), service("c"))
	other := filepath.Join(t.TempDir(), "explicit.txt")
	writeFile(t, other, service("explicit"))

	got, err := Read([]string{other, dir, Stdin}, strings.NewReader(service("stdin")))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		other + ": document 1 explicit",
		filepath.Join(dir, "C.YAML") + ": document 1 c",
		filepath.Join(dir, "a", "x.yml") + ": document 1 ax",
		filepath.Join(dir, "a", "z.json") + ": document 1 az",
		filepath.Join(dir, "b.yaml") + ": document 1 b1",
		filepath.Join(dir, "b.yaml") + ": document 2 b2",
		"<stdin>: document 1 stdin",
	}
	if d := cmp.Diff(want, positions(got)); d != "" {
		t.Errorf("objects in order (-want +got):\n%s", d)
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(empty, "README.md"), "no manifests")
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, service("ok")+"---\napiVersion: v1\nkind: Service\nmetadata: {name: x}\nspce: {}\n")
	missing := filepath.Join(dir, "missing.yaml")

	tests := map[string]struct {
		paths   []string
		wantErr string
	}{
		"missing file":                {[]string{missing}, "stat " + missing + ": no such file or directory"},
		"directory without manifests": {[]string{empty}, empty + ": no .yaml, .yml or .json files in directory"},
		"bad document in a directory": {[]string{dir}, bad + `: document 2: Service "x": unknown field "spce"`},
		"bad document on stdin":       {[]string{Stdin}, `<stdin>: document 1: missing "kind"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Read(tc.paths, strings.NewReader("apiVersion: v1\n"))
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("error:\n got %v\nwant %s", err, tc.wantErr)
			}
		})
	}
}

func TestUnmarshalStrict(t *testing.T) {
	type inner struct {
		B int `json:"b"`
	}
	type config struct {
		A     string `json:"a"`
		Inner *inner `json:"inner"`
	}
	tests := map[string]struct {
		in      string
		want    config
		wantErr string
	}{
		"yaml":          {in: "a: x\ninner: {b: 2}\n", want: config{A: "x", Inner: &inner{B: 2}}},
		"json":          {in: `{"a": "x"}`, want: config{A: "x"}},
		"empty":         {in: "# nothing\n"},
		"unknown field": {in: "a: x\ninner: {c: 2}\n", wantErr: `unknown field "inner.c"`},
		"case matters":  {in: "A: x\n", wantErr: `unknown field "A"`},
		"repeated key":  {in: "a: x\na: y\n", wantErr: `invalid YAML: line 2: key "a" already set in map`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got config
			err := UnmarshalStrict([]byte(tc.in), &got)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error:\n got %v\nwant %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
