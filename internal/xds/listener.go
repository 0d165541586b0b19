package xds

import (
	"fmt"
	"strings"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/tributary-dev/tributary/internal/envoy"
)

// routerFilterName is the name gRPC and Envoy expect for the terminal
// router filter of an HttpConnectionManager.
const routerFilterName = "envoy.filters.http.router"

// BuildListener returns the Listener a proxyless gRPC client needs to dial
// xds:///<clusterName>: named like the Cluster, holding an api_listener
// whose HttpConnectionManager ends with the router filter and routes every
// request (any authority, any path) to the Cluster, which then balances
// across the ClusterLoadAssignment's weighted localities.
//
// The route configuration is inline rather than served over RDS: one
// Listener per Cluster needs nothing more, it keeps the client to three
// resource types, and go-control-plane's Snapshot.Consistent() rejects an
// api_listener that uses RDS (see the xDS client notes). The result and the
// HttpConnectionManager packed in it pass ValidateAll.
func BuildListener(clusterName string) *listenerv3.Listener {
	return &listenerv3.Listener{
		Name: clusterName,
		ApiListener: &listenerv3.ApiListener{
			ApiListener: envoy.MarshalAny(buildConnectionManager(clusterName)),
		},
	}
}

// buildConnectionManager returns the HttpConnectionManager of
// BuildListener. Its stat prefix, which ValidateAll requires, follows the
// Cluster's alt_stat_name convention ("/" would be ambiguous in a stat name).
func buildConnectionManager(clusterName string) *hcmv3.HttpConnectionManager {
	return &hcmv3.HttpConnectionManager{
		StatPrefix: strings.ReplaceAll(clusterName, "/", "_"),
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{
			RouteConfig: &routev3.RouteConfiguration{
				Name: clusterName,
				VirtualHosts: []*routev3.VirtualHost{{
					Name:    clusterName,
					Domains: []string{"*"},
					Routes: []*routev3.Route{{
						Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
						Action: &routev3.Route_Route{Route: &routev3.RouteAction{
							ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: clusterName},
						}},
					}},
				}},
			},
		},
		HttpFilters: []*hcmv3.HttpFilter{{
			Name:       routerFilterName,
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: envoy.MarshalAny(&routerv3.Router{})},
		}},
	}
}

// checkListener validates l and the HttpConnectionManager inside it, which
// ValidateAll alone does not look into (it stops at Any fields).
func checkListener(l *listenerv3.Listener) error {
	if err := l.ValidateAll(); err != nil {
		return err
	}
	hcm := new(hcmv3.HttpConnectionManager)
	if err := l.GetApiListener().GetApiListener().UnmarshalTo(hcm); err != nil {
		return fmt.Errorf("api_listener: %w", err)
	}
	return hcm.ValidateAll()
}
