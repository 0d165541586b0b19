package contour_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	core_v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/tributary-dev/tributary/client"
	"github.com/tributary-dev/tributary/client/contour"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// The Envoy bootstrap fragments that docs/direct-eds.md quotes.
var bootstrapExamples = []string{
	"envoy-bootstrap-tributary.yaml",
	"envoy-bootstrap-tributary-plaintext.yaml",
}

// TestDirectEDSBootstrapExamples keeps docs/direct-eds.md honest: each
// bootstrap fragment it quotes is quoted verbatim, is a valid Envoy v3
// Bootstrap (strictly decoded, every generated validation rule), defines
// the static cluster that Clusters translated with xdsClusterName:
// tributary name in their EDS config, speaks HTTP/2 to it as gRPC needs,
// and points at the port of the deployment's tributary-xds Service.
func TestDirectEDSBootstrapExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/direct-eds.md")
	if err != nil {
		t.Fatal(err)
	}
	xdsPort := serviceXDSPort(t)
	edsCluster := translatedEDSClusterName(t)
	for _, name := range bootstrapExamples {
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("../../docs/examples", name))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(doc), "```yaml\n"+string(raw)+"```\n") {
				t.Errorf("docs/direct-eds.md does not quote docs/examples/%s verbatim in a yaml block", name)
			}
			js, err := yaml.YAMLToJSON(raw)
			if err != nil {
				t.Fatalf("YAML: %v", err)
			}
			b := &bootstrapv3.Bootstrap{}
			if err := protojson.Unmarshal(js, b); err != nil {
				t.Fatalf("not an Envoy v3 Bootstrap: %v", err)
			}
			if err := b.ValidateAll(); err != nil {
				t.Fatalf("invalid Bootstrap: %v", err)
			}
			clusters := b.GetStaticResources().GetClusters()
			if len(clusters) != 1 {
				t.Fatalf("%d static clusters, want exactly the xDS one", len(clusters))
			}
			c := clusters[0]
			if c.GetName() != edsCluster {
				t.Errorf("static cluster %q, but translated Clusters fetch EDS from %q", c.GetName(), edsCluster)
			}
			// Envoy refuses an xDS config source whose cluster is itself
			// discovered by EDS.
			if typ := c.GetType(); typ != clusterv3.Cluster_STRICT_DNS && typ != clusterv3.Cluster_LOGICAL_DNS && typ != clusterv3.Cluster_STATIC {
				t.Errorf("cluster type %v, want STRICT_DNS, LOGICAL_DNS or STATIC", typ)
			}
			var opts httpv3.HttpProtocolOptions
			anyOpts := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
			if anyOpts == nil || anyOpts.UnmarshalTo(&opts) != nil || opts.GetExplicitHttpConfig().GetHttp2ProtocolOptions() == nil {
				t.Errorf("the cluster does not speak HTTP/2 (explicit_http_config.http2_protocol_options), which gRPC needs")
			}
			for _, lle := range c.GetLoadAssignment().GetEndpoints() {
				for _, lb := range lle.GetLbEndpoints() {
					if got := lb.GetEndpoint().GetAddress().GetSocketAddress().GetPortValue(); got != xdsPort {
						t.Errorf("endpoint port %d, want the tributary-xds Service's %d", got, xdsPort)
					}
				}
			}
		})
	}
}

// serviceXDSPort is the port of the deployment's tributary-xds Service.
func serviceXDSPort(t *testing.T) uint32 {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/base/service-xds.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var svc core_v1.Service
	if err := yaml.UnmarshalStrict(raw, &svc); err != nil {
		t.Fatal(err)
	}
	if svc.Name != "tributary-xds" || len(svc.Spec.Ports) != 1 {
		t.Fatalf("deploy/base/service-xds.yaml: Service %q with %d ports, want tributary-xds with one", svc.Name, len(svc.Spec.Ports))
	}
	return uint32(svc.Spec.Ports[0].Port)
}

// translatedEDSClusterName is the cluster a Cluster translated with
// xdsClusterName: tributary names in its EDS config.
func translatedEDSClusterName(t *testing.T) string {
	t.Helper()
	es := extAuthz(1, 1, 0)
	es.Spec.Services = es.Spec.Services[:1]
	es.Spec.UpstreamValidation = nil
	req := &tributaryv1.TranslateRequest{Settings: contour.Settings(&contour.Config{XDSClusterName: "tributary"})}
	for _, obj := range []runtime.Object{es, authzService("authz-stable")} {
		o, _ := contour.Object(obj)
		req.Objects = append(req.Objects, o)
	}
	tr, err := client.New(dial(t)).Translate(t.Context(), req)
	if err != nil {
		t.Fatalf("Translate: %v", err)
	}
	if len(tr.Clusters) != 1 {
		t.Fatalf("%d Clusters, want 1", len(tr.Clusters))
	}
	services := tr.Clusters[0].GetEdsClusterConfig().GetEdsConfig().GetApiConfigSource().GetGrpcServices()
	if len(services) != 1 {
		t.Fatalf("EDS config with %d gRPC services, want 1", len(services))
	}
	return services[0].GetEnvoyGrpc().GetClusterName()
}
