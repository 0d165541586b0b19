package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	strictjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// adapterSettings mirrors client/contour.Config, the settings file of
// `tributary translate --settings` (this module does not import the
// service's). The binary reads the file strictly too, so a field renamed on
// either side fails TestContourOverlayAgrees.
type adapterSettings struct {
	XDSClusterName        string                           `json:"xdsClusterName,omitempty"`
	ConnectTimeout        string                           `json:"connectTimeout,omitempty"`
	GlobalCircuitBreakers *contourv1alpha1.CircuitBreakers `json:"globalCircuitBreakers,omitempty"`
	ClientCertificate     string                           `json:"clientCertificate,omitempty"`
	UpstreamTLS           *contourv1alpha1.EnvoyTLS        `json:"upstreamTLS,omitempty"`
}

// contourConfigurationExample is the ContourConfiguration the
// documentation shows beside the Contour overlay, outside any
// kustomization.
const contourConfigurationExample = "contour-configuration.yaml"

// TestContourOverlayAgrees checks the Contour overlay against Contour's
// configuration (the example in docs/examples) and against the binary: the
// adapter's settings carry the values the configuration gives Contour, it
// looks replicas up at the headless Service, and `tributary translate`
// builds Clusters with them.
func TestContourOverlayAgrees(t *testing.T) {
	const namespace = "projectcontour"
	objs := build(t, "overlays/contour")
	docs := exampleDocuments(t, contourConfigurationExample)
	if len(docs) != 1 {
		t.Fatalf("%s holds %d documents, want one ContourConfiguration", contourConfigurationExample, len(docs))
	}
	decoded, err := decodeStrict(docs[0])
	if err != nil {
		t.Fatalf("%s: %v", contourConfigurationExample, err)
	}
	cc, ok := decoded.(*contourv1alpha1.ContourConfiguration)
	if !ok || cc.Namespace != namespace {
		t.Fatalf("%s holds %T in namespace %q, want a ContourConfiguration in %s", contourConfigurationExample, decoded, decoded.GetNamespace(), namespace)
	}
	adapter := one[*corev1.ConfigMap](t, objs, "tributary-adapter")
	sync := one[*corev1.Service](t, objs, "tributary-sync")

	if want := fmt.Sprintf("%s.%s.svc.cluster.local", sync.Name, namespace); adapter.Data["replicasService"] != want {
		t.Errorf("the adapter looks replicas up at %q, want the headless Service %q", adapter.Data["replicasService"], want)
	}
	// LookupReplicas takes a Service port's name (SRV records) or number.
	if port := adapter.Data["replicasPort"]; port != sync.Spec.Ports[0].Name && port != fmt.Sprint(sync.Spec.Ports[0].Port) {
		t.Errorf("the adapter's replicasPort %q is neither the name nor the number of the Service's port", port)
	}

	data, err := yaml.YAMLToJSONStrict([]byte(adapter.Data["settings.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	var got adapterSettings
	if strictErrs, err := strictjson.UnmarshalStrict(data, &got); err != nil || len(strictErrs) > 0 {
		t.Fatalf("settings.yaml: %v %v", err, strictErrs)
	}
	envoy := cc.Spec.Envoy
	if envoy == nil || envoy.Cluster == nil || envoy.Timeouts == nil || envoy.ClientCertificate == nil {
		t.Fatal("the ContourConfiguration lacks envoy.cluster, envoy.timeouts or envoy.clientCertificate")
	}
	want := adapterSettings{
		// Contour's xDS cluster in the Envoy bootstrap is named contour.
		XDSClusterName:        "contour",
		ConnectTimeout:        deref(envoy.Timeouts.ConnectTimeout),
		GlobalCircuitBreakers: envoy.Cluster.GlobalCircuitBreakerDefaults,
		ClientCertificate:     envoy.ClientCertificate.Namespace + "/" + envoy.ClientCertificate.Name,
		UpstreamTLS:           envoy.Cluster.UpstreamTLS,
	}
	if !reflect.DeepEqual(got, want) {
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(want)
		t.Errorf("the adapter's settings\n  %s\ndiffer from Contour's configuration\n  %s", gotJSON, wantJSON)
	}

	// The binary accepts the file and translates with it.
	settingsFile := filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.WriteFile(settingsFile, []byte(adapter.Data["settings.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	// The client certificate setting names a Secret, which Contour would
	// see through its informers; the translation needs it among its input.
	clientCert := clientCertificateSecret(t, envoy.ClientCertificate.Namespace, envoy.ClientCertificate.Name)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(tributaryBinary(t), "translate", "--settings", settingsFile,
		"-f", "../../examples/extauth.yaml", "-f", clientCert)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("tributary translate --settings: %v\n%s", err, stderr.String())
	}
	out, err := parseTranslateOutput(stdout.Bytes())
	if err != nil {
		t.Fatalf("tributary translate output: %v\n%s", err, stdout.String())
	}
	for _, st := range out.Statuses {
		for _, c := range st.Conditions {
			if c.Type == "Valid" && c.Status != "True" {
				t.Errorf("ExtensionService %s is not valid under the adapter's settings: %s", st.Name, stdout.String())
			}
		}
	}
	if len(out.Clusters) == 0 {
		t.Fatalf("tributary translate built no Cluster from ../examples/extauth.yaml:\n%s", stdout.String())
	}
	wantTimeout, err := time.ParseDuration(want.ConnectTimeout)
	if err != nil {
		t.Fatalf("envoy.timeouts.connectTimeout: %v", err)
	}
	for _, c := range out.Clusters {
		// Protobuf's JSON spells durations as seconds ("2s", "0.250s"),
		// which Go parses too.
		if d, err := time.ParseDuration(c.ConnectTimeout); err != nil || d != wantTimeout {
			t.Errorf("Cluster connect timeout %q, want %s", c.ConnectTimeout, want.ConnectTimeout)
		}
		if s := c.EDSClusterConfig.EDSConfig.APIConfigSource.GRPCServices; len(s) != 1 || s[0].EnvoyGRPC.ClusterName != want.XDSClusterName {
			t.Errorf("Cluster EDS source %+v, want the Envoy cluster %s", s, want.XDSClusterName)
		}
		if th := c.CircuitBreakers.Thresholds; len(th) != 1 ||
			th[0].MaxConnections != want.GlobalCircuitBreakers.MaxConnections || th[0].MaxRequests != want.GlobalCircuitBreakers.MaxRequests {
			t.Errorf("Cluster circuit breakers %+v, want %+v", th, want.GlobalCircuitBreakers)
		}
	}
}

// contourAPIGroups are the API groups whose objects Contour acts on: its
// own configuration and routing (projectcontour.io) and the Gateway API it
// implements.
var contourAPIGroups = map[string]bool{"projectcontour.io": true, "gateway.networking.k8s.io": true}

// TestContourOverlayLeavesContourAlone checks that applying the Contour
// overlay cannot change how Contour behaves: it renders Tributary's own
// objects only, none of a kind Contour reads its configuration or routes
// from, and none with a name that could replace one of Contour's (its
// ConfigMap contour, Deployment contour, DaemonSet envoy). Contour's
// configuration is an example in docs/examples, applied by hand or not at
// all.
func TestContourOverlayLeavesContourAlone(t *testing.T) {
	for _, o := range build(t, "overlays/contour") {
		gvk := o.GetObjectKind().GroupVersionKind()
		id := fmt.Sprintf("%s/%s", gvk.Kind, o.GetName())
		if contourAPIGroups[gvk.Group] {
			t.Errorf("%s (%s) is Contour configuration or routing; it belongs in docs/examples", id, gvk.GroupVersion())
		}
		if gvk.Group == "networking.k8s.io" && (gvk.Kind == "Ingress" || gvk.Kind == "IngressClass") {
			t.Errorf("%s is routing that Contour would serve", id)
		}
		if name := o.GetName(); name != "tributary" && !strings.HasPrefix(name, "tributary-") {
			t.Errorf("%s is not named tributary or tributary-*: it could replace an object of Contour's", id)
		}
	}
}

// translatedCluster holds the fields of a translated Cluster this test
// compares with the settings.
type translatedCluster struct {
	ConnectTimeout   string `json:"connectTimeout"`
	EDSClusterConfig struct {
		EDSConfig struct {
			APIConfigSource struct {
				GRPCServices []struct {
					EnvoyGRPC struct {
						ClusterName string `json:"clusterName"`
					} `json:"envoyGrpc"`
				} `json:"grpcServices"`
			} `json:"apiConfigSource"`
		} `json:"edsConfig"`
	} `json:"edsClusterConfig"`
	CircuitBreakers struct {
		Thresholds []struct {
			MaxConnections uint32 `json:"maxConnections"`
			MaxRequests    uint32 `json:"maxRequests"`
		} `json:"thresholds"`
	} `json:"circuitBreakers"`
}

// translatedStatus is an ExtensionService's name and conditions.
type translatedStatus struct {
	Name       string
	Conditions []struct {
		Type, Status, Message string
	}
}

type translateOutput struct {
	Clusters []translatedCluster
	Statuses []translatedStatus
}

// parseTranslateOutput reads `tributary translate`'s JSON output: the
// Clusters in an admin ConfigDump under configDump, the statuses as a
// Kubernetes List of ExtensionServices.
func parseTranslateOutput(data []byte) (translateOutput, error) {
	var raw struct {
		ConfigDump struct {
			Configs []struct {
				Type     string `json:"@type"`
				Clusters []struct {
					Cluster translatedCluster `json:"cluster"`
				} `json:"dynamicActiveClusters"`
			} `json:"configs"`
		} `json:"configDump"`
		Statuses json.RawMessage `json:"statuses"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return translateOutput{}, err
	}
	var out translateOutput
	for _, c := range raw.ConfigDump.Configs {
		if c.Type == "type.googleapis.com/envoy.admin.v3.ClustersConfigDump" {
			for _, dc := range c.Clusters {
				out.Clusters = append(out.Clusters, dc.Cluster)
			}
		}
	}
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Status struct {
				Conditions []struct {
					Type, Status, Message string
				} `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw.Statuses, &list); err != nil {
		return translateOutput{}, fmt.Errorf("statuses: %w", err)
	}
	if list.Kind != "List" {
		return translateOutput{}, fmt.Errorf("statuses are a %q, want a Kubernetes List", list.Kind)
	}
	for _, item := range list.Items {
		out.Statuses = append(out.Statuses, translatedStatus{Name: item.Metadata.Name, Conditions: item.Status.Conditions})
	}
	return out, nil
}

// clientCertificateSecret writes a kubernetes.io/tls Secret manifest with
// a generated certificate and returns its path.
func clientCertificateSecret(t *testing.T, namespace, name string) string {
	t.Helper()
	dir := writeTLSFiles(t)
	data := map[string][]byte{}
	for _, key := range []string{"tls.crt", "tls.key"} {
		b, err := os.ReadFile(filepath.Join(dir, key))
		if err != nil {
			t.Fatal(err)
		}
		data[key] = b
	}
	manifest, err := yaml.Marshal(corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       corev1.SecretTypeTLS,
		Data:       data,
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "client-certificate.yaml")
	if err := os.WriteFile(path, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseTranslateOutput(t *testing.T) {
	const cluster = `{"connectTimeout":"2s","edsClusterConfig":{"edsConfig":{"apiConfigSource":{"grpcServices":[{"envoyGrpc":{"clusterName":"contour"}}]}}}}`
	const doc = `{"configDump":{"configs":[` +
		`{"@type":"type.googleapis.com/envoy.admin.v3.ClustersConfigDump","dynamicActiveClusters":[{"versionInfo":"1","cluster":` + cluster + `}]},` +
		`{"@type":"type.googleapis.com/envoy.admin.v3.EndpointsConfigDump","dynamicEndpointConfigs":[]}]},` +
		`"statuses":{"apiVersion":"v1","kind":"List","items":[{"metadata":{"name":"ext-authz","namespace":"auth"},` +
		`"status":{"conditions":[{"type":"Valid","status":"False","message":"no Service"}]}}]}}`
	out, err := parseTranslateOutput([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Clusters) != 1 || out.Clusters[0].ConnectTimeout != "2s" ||
		out.Clusters[0].EDSClusterConfig.EDSConfig.APIConfigSource.GRPCServices[0].EnvoyGRPC.ClusterName != "contour" {
		t.Errorf("clusters %+v", out.Clusters)
	}
	if len(out.Statuses) != 1 || out.Statuses[0].Name != "ext-authz" || len(out.Statuses[0].Conditions) != 1 ||
		out.Statuses[0].Conditions[0].Status != "False" || out.Statuses[0].Conditions[0].Message != "no Service" {
		t.Errorf("statuses %+v", out.Statuses)
	}
}
