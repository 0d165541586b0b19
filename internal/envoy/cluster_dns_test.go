package envoy

import (
	"bytes"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tributary-dev/tributary/internal/model"
)

// dnsTestExtension is an h2c ExtensionCluster of two ExternalName targets,
// the second of weight 0.
func dnsTestExtension() *model.ExtensionCluster {
	ec := clusterTestExtension()
	ec.Protocol = model.ProtocolH2C
	ec.DNS = []model.DNSLocality{
		{SubZone: "ns/primary/443", Weight: 80, Hostname: "authz.example.com", Port: 443},
		{SubZone: "ns/fallback/8443", Weight: 0, Hostname: "authz-fallback.example.net.", Port: 8443},
	}
	return ec
}

// dnsTestEndpoint is the one endpoint of a DNS locality.
func dnsTestEndpoint(host string, port uint32, hc *endpointv3.Endpoint_HealthCheckConfig) []*endpointv3.LbEndpoint {
	return []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
		}}},
		HealthCheckConfig: hc,
	}}}}
}

// TestBuildClusterExternalName checks the whole STRICT_DNS Cluster: no EDS
// config, the IPv4-first lookup, and the inline assignment with one
// weighted locality per target (weight 0 left unset), everything else as
// for an EDS Cluster.
func TestBuildClusterExternalName(t *testing.T) {
	want := clusterTestBase()
	want.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
	want.EdsClusterConfig = nil
	want.DnsLookupFamily = clusterv3.Cluster_V4_PREFERRED
	want.TypedExtensionProtocolOptions = map[string]*anypb.Any{httpProtocolOptionsKey: clusterTestAny(t, clusterTestHTTP2(nil))}
	want.LoadAssignment = &endpointv3.ClusterLoadAssignment{
		ClusterName: "extension/ns/authz",
		Endpoints: []*endpointv3.LocalityLbEndpoints{
			{
				Locality:            &corev3.Locality{SubZone: "ns/primary/443"},
				LoadBalancingWeight: wrapperspb.UInt32(80),
				LbEndpoints:         dnsTestEndpoint("authz.example.com", 443, nil),
			},
			{
				Locality:    &corev3.Locality{SubZone: "ns/fallback/8443"},
				LbEndpoints: dnsTestEndpoint("authz-fallback.example.net.", 8443, nil),
			},
		},
	}

	got := BuildCluster(dnsTestExtension())
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("Cluster (-want +got):\n%s", diff)
	}
	validateCluster(t, got)
	if err := CheckClusterLoadAssignment(got.GetLoadAssignment()); err != nil {
		t.Errorf("inline assignment: %v", err)
	}
}

// TestBuildClusterExternalNameHealthCheckPort checks that a health check
// on a port of its own reaches every DNS endpoint, the one place Envoy
// reads that port from, and that a health check on the serving port
// leaves the endpoints alone.
func TestBuildClusterExternalNameHealthCheckPort(t *testing.T) {
	for _, port := range []uint32{0, 8081} {
		ec := dnsTestExtension()
		ec.HealthCheck = &model.HealthCheck{
			ServiceName: "authz", Interval: 5 * time.Second, Timeout: time.Second,
			UnhealthyThreshold: 3, HealthyThreshold: 1, Port: port,
		}
		var hc *endpointv3.Endpoint_HealthCheckConfig
		if port != 0 {
			hc = &endpointv3.Endpoint_HealthCheckConfig{PortValue: port}
		}
		got := BuildCluster(ec)
		want := []*endpointv3.LocalityLbEndpoints{
			{
				Locality:            &corev3.Locality{SubZone: "ns/primary/443"},
				LoadBalancingWeight: wrapperspb.UInt32(80),
				LbEndpoints:         dnsTestEndpoint("authz.example.com", 443, hc),
			},
			{
				Locality:    &corev3.Locality{SubZone: "ns/fallback/8443"},
				LbEndpoints: dnsTestEndpoint("authz-fallback.example.net.", 8443, hc),
			},
		}
		if diff := cmp.Diff(want, got.GetLoadAssignment().GetEndpoints(), protocmp.Transform()); diff != "" {
			t.Errorf("port %d: endpoints (-want +got):\n%s", port, diff)
		}
		validateCluster(t, got)
	}
}

// TestBuildClusterWithoutDNSStaysEDS checks that applyExternalName leaves
// an EDS Cluster untouched.
func TestBuildClusterWithoutDNSStaysEDS(t *testing.T) {
	c := BuildCluster(clusterTestExtension())
	if c.GetType() != clusterv3.Cluster_EDS || c.GetEdsClusterConfig() == nil || c.GetLoadAssignment() != nil ||
		c.GetDnsLookupFamily() != clusterv3.Cluster_AUTO {
		t.Errorf("EDS Cluster changed: %v", c)
	}
}

// TestClusterEncoderExternalName checks that the production encoder gives
// the reference bytes for a STRICT_DNS Cluster, after an EDS Cluster of
// the same shape has made a template (which must not be reused).
func TestClusterEncoderExternalName(t *testing.T) {
	e := NewClusterEncoder()
	eds := clusterTestExtension()
	eds.Protocol = model.ProtocolH2C
	if got, want := e.Append(nil, eds), MustMarshal(BuildCluster(eds)); !bytes.Equal(got, want) {
		t.Fatal("EDS Cluster differs from the reference encoding")
	}
	dns := dnsTestExtension()
	if got, want := e.Append(nil, dns), MustMarshal(BuildCluster(dns)); !bytes.Equal(got, want) {
		t.Error("STRICT_DNS Cluster differs from the reference encoding")
	}
}
