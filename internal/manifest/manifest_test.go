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
		name:    "JSON that is not a Kubernetes object",
		in:      `{"objects": [{"service": {}}]}`,
		wantErr: `in: document 1: not a Kubernetes object: missing "apiVersion" and "kind"`,
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
		name:    "a JSON syntax error names its line and column",
		in:      "{\"apiVersion\": \"v1\", \"kind\": \"Service\", \"metadata\": {\"name\": \"a\"}}\n{\"apiVersion\": \"v1\",\n \"kind\" \"Service\"}",
		wantErr: `in: document 2: invalid JSON: line 3, column 9: invalid character '"' after object key`,
	}, {
		// Before, a first JSON value that failed to parse was retried as
		// flow-style YAML and reported as "invalid YAML".
		name:    "a JSON syntax error in the first document is reported as JSON",
		in:      "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Service\"\n  \"metadata\": {\"name\": \"a\"}\n}\n",
		wantErr: `in: document 1: invalid JSON: line 4, column 3: invalid character '"' after object key:value pair`,
	}, {
		name:    "broken YAML in flow style is reported as YAML",
		in:      "{apiVersion: v1, kind: Service, metadata: {name: a}\n",
		wantErr: `in: document 1: invalid YAML: line 1: did not find expected ',' or '}'`,
	}, {
		// The YAML library numbers its parser's lines from 0: each of these
		// was reported one line too early.
		name:    "a YAML parser error names its line",
		in:      "apiVersion: v1\nkind: Service\nmetadata:\n  - x\n  name: a\n",
		wantErr: `in: document 1: invalid YAML: line 5: did not find expected '-' indicator`,
	}, {
		name:    "a YAML parser error on the first line of a document names it",
		in:      service("a") + "---\n" + "[a, b} \nkind: Service\n",
		wantErr: `in: document 2: invalid YAML: line 5: did not find expected ',' or ']'`,
	}, {
		name:    "a YAML error in the second document",
		in:      service("a") + "---\n" + "apiVersion: v1\nkind: Service\nmetadata:\n  name: b\n namespace: a\n",
		wantErr: `in: document 2: invalid YAML: line 9: did not find expected key`,
	}, {
		name:    "a YAML error in the second document, after a leading separator",
		in:      "---\n" + service("a") + "---\n" + "apiVersion: v1\nkind: Service\nmetadata:\n  name: b\n namespace: a\n",
		wantErr: `in: document 2: invalid YAML: line 10: did not find expected key`,
	}, {
		name:    "a YAML error in the third document",
		in:      service("a") + "---\n" + service("b") + "--- # c\n" + "apiVersion: v1\nkind: Service\nmetadata:\n  - x\n  name: c\n",
		wantErr: `in: document 3: invalid YAML: line 13: did not find expected '-' indicator`,
	}, {
		name:    "a YAML error in the third document, after a leading separator and a comment",
		in:      "# c\n---\n" + service("a") + "---\n" + service("b") + "---\n" + "apiVersion: v1\nkind: Service\nmetadata: {name: c\n",
		wantErr: `in: document 3: invalid YAML: line 13: did not find expected ',' or '}'`,
	}, {
		name:    "a YAML scanner error names its line",
		in:      service("a") + "---\n" + "apiVersion: v1\nkind: Service\n\tmetadata: {name: b}\n",
		wantErr: `in: document 2: invalid YAML: line 7: found a tab character that violates indentation`,
	}, {
		name:    "every repeated key is reported with its line",
		in:      service("a") + "---\n" + service("b") + "metadata: {name: c}\nspec: {}\nspec: {}\n",
		wantErr: `in: document 2: invalid YAML: line 8: key "metadata" already set in map; line 10: key "spec" already set in map`,
	}, {
		name: "duplicate objects name both positions",
		in: service("x") + "---\n" + service("other") + "---\n" + service("x") + "---\n" +
			"apiVersion: v1\nkind: Secret\nmetadata: {namespace: a, name: x}\n---\n" + service("x"),
		wantErr: `in: document 3: Service "a/x" is already defined at in: document 1` + "\n" +
			`in: document 5: Service "a/x" is already defined at in: document 1`,
	}, {
		name: "the same name in another namespace or of another kind is not a duplicate",
		in: service("x") + "---\napiVersion: v1\nkind: Service\nmetadata: {namespace: b, name: x}\n---\n" +
			"apiVersion: v1\nkind: Secret\nmetadata: {namespace: a, name: x}\n",
		wantObjects: []Object{
			{at("in", 1, -1), &core_v1.Service{TypeMeta: typeMetaOf("v1", "Service"), ObjectMeta: meta_v1.ObjectMeta{Namespace: "a", Name: "x"}}},
			{at("in", 2, -1), &core_v1.Service{TypeMeta: typeMetaOf("v1", "Service"), ObjectMeta: meta_v1.ObjectMeta{Namespace: "b", Name: "x"}}},
			{at("in", 3, -1), &core_v1.Secret{TypeMeta: typeMetaOf("v1", "Secret"), ObjectMeta: meta_v1.ObjectMeta{Namespace: "a", Name: "x"}}},
		},
	}, {
		name:    "a duplicate inside a List names its item",
		in:      service("x") + "---\napiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(service("x"), "\n", "\n  "),
		wantErr: `in: document 2: items[0]: Service "a/x" is already defined at in: document 1`,
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

// manifestTree writes a directory the way a repository holds manifests:
// files directly in it, a subdirectory, and files that are not manifests.
func manifestTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b.yaml"), service("b1")+"---\n"+service("b2"))
	writeFile(t, filepath.Join(dir, "a.json"), `{"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "a", "name": "a"}}`)
	writeFile(t, filepath.Join(dir, "c.yml"), service("c"))
	writeFile(t, filepath.Join(dir, "sub", "z.json"), `{"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "a", "name": "sub-z"}}`)
	writeFile(t, filepath.Join(dir, "sub", "x.yml"), service("sub-x"))
	writeFile(t, filepath.Join(dir, "sub", "deeper", "y.yaml"), service("deeper-y"))
	// Neither kubectl nor Read reads these from a directory: other
	// extensions, and the extensions in another case.
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a manifest: {")
	writeFile(t, filepath.Join(dir, "script.js"), "console.log(1)")
	writeFile(t, filepath.Join(dir, "README"), "# manifests")
	writeFile(t, filepath.Join(dir, "UPPER.YAML"), "not: [read")
	writeFile(t, filepath.Join(dir, "sub", "notes.txt"), "not a manifest: {")
	return dir
}

func TestRead(t *testing.T) {
	dir := manifestTree(t)
	// A file named explicitly is read whatever its name, as kubectl does.
	explicit := filepath.Join(t.TempDir(), "explicit.txt")
	writeFile(t, explicit, service("explicit"))

	tests := map[string]struct {
		paths []string
		opts  Options
		want  []string
	}{
		"a directory reads only the manifests directly in it": {
			paths: []string{dir},
			want: []string{
				filepath.Join(dir, "a.json") + ": document 1 a",
				filepath.Join(dir, "b.yaml") + ": document 1 b1",
				filepath.Join(dir, "b.yaml") + ": document 2 b2",
				filepath.Join(dir, "c.yml") + ": document 1 c",
			},
		},
		"recursive reads subdirectories at every depth, in lexical order": {
			paths: []string{dir},
			opts:  Options{Recursive: true},
			want: []string{
				filepath.Join(dir, "a.json") + ": document 1 a",
				filepath.Join(dir, "b.yaml") + ": document 1 b1",
				filepath.Join(dir, "b.yaml") + ": document 2 b2",
				filepath.Join(dir, "c.yml") + ": document 1 c",
				filepath.Join(dir, "sub", "deeper", "y.yaml") + ": document 1 deeper-y",
				filepath.Join(dir, "sub", "x.yml") + ": document 1 sub-x",
				filepath.Join(dir, "sub", "z.json") + ": document 1 sub-z",
			},
		},
		"files, directories and stdin in the order given": {
			paths: []string{explicit, filepath.Join(dir, "sub"), Stdin, filepath.Join(dir, "c.yml")},
			want: []string{
				explicit + ": document 1 explicit",
				filepath.Join(dir, "sub", "x.yml") + ": document 1 sub-x",
				filepath.Join(dir, "sub", "z.json") + ": document 1 sub-z",
				"<stdin>: document 1 stdin",
				filepath.Join(dir, "c.yml") + ": document 1 c",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Read(tc.paths, strings.NewReader(service("stdin")), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, positions(got)); d != "" {
				t.Errorf("objects in order (-want +got):\n%s", d)
			}
			if len(got.Skipped) != 0 {
				t.Errorf("skipped %v, want none", got.Skipped)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	writeFile(t, filepath.Join(empty, "README.md"), "no manifests")
	nested := filepath.Join(dir, "nested")
	writeFile(t, filepath.Join(nested, "sub", "a.yaml"), service("a"))
	writeFile(t, filepath.Join(nested, "sub", "notes.txt"), "no manifests")

	broken := filepath.Join(dir, "broken")
	bad := filepath.Join(broken, "bad.yaml")
	writeFile(t, bad, service("ok")+"---\napiVersion: v1\nkind: Service\nmetadata: {name: x}\nspce: {}\n")

	// A JSON file that is not a manifest, such as a gRPC request, is an
	// error naming the file, as in kubectl, and only when it is read.
	requests := filepath.Join(dir, "requests")
	writeFile(t, filepath.Join(requests, "a.yaml"), service("a"))
	request := filepath.Join(requests, "grpc", "request.json")
	writeFile(t, request, `{"objects": [{"service": {"metadata": {"name": "a"}}}]}`)

	dups := filepath.Join(dir, "dups")
	writeFile(t, filepath.Join(dups, "a.yaml"), service("a")+"---\n"+service("x"))
	writeFile(t, filepath.Join(dups, "b.json"), `{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "a", "name": "b"}},
  {"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "a", "name": "x"}}]}`)
	missing := filepath.Join(dir, "missing.yaml")

	tests := map[string]struct {
		paths   []string
		opts    Options
		wantErr string
	}{
		"missing file":                {paths: []string{missing}, wantErr: "stat " + missing + ": no such file or directory"},
		"directory without manifests": {paths: []string{empty}, wantErr: empty + ": no .json, .yaml or .yml files in directory"},
		"manifests only in a subdirectory": {
			paths:   []string{nested},
			wantErr: nested + ": no .json, .yaml or .yml files directly in directory (subdirectories are read only when recursive)",
		},
		"bad document in a directory": {paths: []string{broken}, wantErr: bad + `: document 2: Service "x": unknown field "spce"`},
		"bad document on stdin":       {paths: []string{Stdin}, wantErr: `<stdin>: document 1: missing "kind"`},
		"not a manifest, read recursively": {
			paths:   []string{requests},
			opts:    Options{Recursive: true},
			wantErr: request + `: document 1: not a Kubernetes object: missing "apiVersion" and "kind"`,
		},
		"the same object in two files": {
			paths:   []string{dups},
			wantErr: filepath.Join(dups, "b.json") + `: document 1: items[1]: Service "a/x" is already defined at ` + filepath.Join(dups, "a.yaml") + ": document 2",
		},
		"the same file twice": {
			paths: []string{filepath.Join(requests, "a.yaml"), requests},
			wantErr: filepath.Join(requests, "a.yaml") + `: document 1: Service "a/a" is already defined at ` +
				filepath.Join(requests, "a.yaml") + ": document 1",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Read(tc.paths, strings.NewReader("apiVersion: v1\n"), tc.opts)
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("error:\n got %v\nwant %s", err, tc.wantErr)
			}
		})
	}

	// Without recursion the same directory reads, the request unread.
	got, err := Read([]string{requests}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{filepath.Join(requests, "a.yaml") + ": document 1 a"}, positions(got)); d != "" {
		t.Errorf("objects (-want +got):\n%s", d)
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
