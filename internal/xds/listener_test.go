package xds

import (
	"testing"

	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/tributary-dev/tributary/internal/envoy"
)

// The Listener passes ValidateAll, inside its Any too, is named like the
// Cluster, ends its filters with a typed Router, and routes every path of
// every authority to the Cluster inline (no RDS).
func TestBuildListener(t *testing.T) {
	const name = "extension/ns/authz"
	l := BuildListener(name)
	if err := checkListener(l); err != nil {
		t.Fatalf("checkListener: %v", err)
	}
	if l.GetName() != name {
		t.Errorf("name %q, want %q", l.GetName(), name)
	}
	hcm := new(hcmv3.HttpConnectionManager)
	if err := l.GetApiListener().GetApiListener().UnmarshalTo(hcm); err != nil {
		t.Fatal(err)
	}
	filters := hcm.GetHttpFilters()
	last := filters[len(filters)-1]
	if last.GetName() != "envoy.filters.http.router" || !last.GetTypedConfig().MessageIs(&routerv3.Router{}) {
		t.Errorf("last filter %v, want a typed envoy.filters.http.router", last)
	}
	if hcm.GetRds() != nil {
		t.Error("the route configuration is served over RDS, want it inline")
	}
	vhosts := hcm.GetRouteConfig().GetVirtualHosts()
	if len(vhosts) != 1 || len(vhosts[0].GetDomains()) != 1 || vhosts[0].GetDomains()[0] != "*" {
		t.Fatalf("virtual hosts %v, want one for every domain", vhosts)
	}
	routes := vhosts[0].GetRoutes()
	if len(routes) != 1 || routes[0].GetMatch().GetPrefix() != "/" || routes[0].GetRoute().GetCluster() != name {
		t.Errorf("routes %v, want every path to %s", routes, name)
	}
}

// checkListener looks inside the api_listener, which ValidateAll does not.
func TestCheckListenerLooksInside(t *testing.T) {
	l := BuildListener("extension/ns/authz")
	hcm := buildConnectionManager("extension/ns/authz")
	hcm.StatPrefix = "" // ValidateAll requires one
	l.ApiListener.ApiListener = envoy.MarshalAny(hcm)
	if err := l.ValidateAll(); err != nil {
		t.Fatalf("test setup: the Listener itself should pass ValidateAll: %v", err)
	}
	if err := checkListener(l); err == nil {
		t.Error("checkListener accepted an HttpConnectionManager without a stat prefix")
	}
}
