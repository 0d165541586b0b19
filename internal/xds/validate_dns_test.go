package xds

import (
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/tributary-dev/tributary/internal/envoy"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/translate"
)

// dnsCluster is the STRICT_DNS Cluster of two ExternalName targets.
func dnsCluster() *clusterv3.Cluster {
	return envoy.BuildCluster(&model.ExtensionCluster{
		Name: "extension/ns/authz", XDSClusterName: "contour", ConnectTimeout: 2 * time.Second,
		Protocol: model.ProtocolH2C,
		DNS: []model.DNSLocality{
			{SubZone: "ns/primary/443", Weight: 80, Hostname: "authz.example.com", Port: 443},
			{SubZone: "ns/fallback/443", Weight: 20, Hostname: "authz-fallback.example.com", Port: 443},
		},
	})
}

// A STRICT_DNS Cluster is served as it is: it has no EDS config to point
// at ADS, and its inline assignment passes the checks.
func TestClusterBodyStrictDNS(t *testing.T) {
	want := dnsCluster()
	body, err := clusterBody(translate.Resource{Name: want.GetName(), Version: "1", Body: envoy.MustMarshal(want)})
	if err != nil {
		t.Fatal(err)
	}
	got := new(clusterv3.Cluster)
	if err := proto.Unmarshal(body, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("served Cluster (-built +served):\n%s", diff)
	}
}

// An inline assignment is held to what a ClusterLoadAssignment is: one
// that ValidateAll lets through but clients would refuse is not served.
func TestClusterBodyRefusesBadInlineAssignment(t *testing.T) {
	c := dnsCluster()
	c.GetLoadAssignment().GetEndpoints()[1].GetLocality().SubZone = "ns/primary/443"
	if err := c.ValidateAll(); err != nil {
		t.Fatalf("the case must pass ValidateAll: %v", err)
	}
	_, err := clusterBody(translate.Resource{Name: c.GetName(), Version: "1", Body: envoy.MustMarshal(c)})
	if err == nil || !strings.HasPrefix(err.Error(), "load_assignment: endpoints[0] and endpoints[1] have the same locality") {
		t.Errorf("got error %v, want the duplicate locality of load_assignment", err)
	}
}
