package xds

import (
	"fmt"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/internal/envoy"
	"github.com/tributary-dev/tributary/internal/translate"
)

// clusterBody decodes r, checks it as every served resource must be
// checked, points its EDS at this server's ADS stream, and returns it
// encoded again. The Publisher calls it once per Cluster version (see
// Publisher.prepare).
//
// The translator's Cluster names the Envoy cluster that serves its
// endpoints (Settings.xds_cluster_name, Contour's by default): right when
// Contour serves it, wrong when this server does, since that cluster has no
// such ClusterLoadAssignment. A client of this server gets the Cluster and
// its ClusterLoadAssignment over one ADS stream, so eds_config says "ads".
// gRPC's xDS client requires exactly that, and NACKs any other EDS config
// source ("CDS's EDS config source is not ADS or Self").
func clusterBody(r translate.Resource) ([]byte, error) {
	c := new(clusterv3.Cluster)
	if err := proto.Unmarshal(r.Body, c); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if c.GetName() != r.Name {
		return nil, fmt.Errorf("listed as %q but named %q", r.Name, c.GetName())
	}
	if eds := c.GetEdsClusterConfig(); eds != nil {
		eds.EdsConfig = &corev3.ConfigSource{
			ResourceApiVersion:    corev3.ApiVersion_V3,
			ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		}
	}
	if err := c.ValidateAll(); err != nil {
		return nil, err
	}
	// A STRICT_DNS Cluster (ExternalName targets) carries its endpoints
	// inline, and has no ClusterLoadAssignment to check: its assignment
	// is held to the same checks here.
	if la := c.GetLoadAssignment(); la != nil {
		if err := envoy.CheckClusterLoadAssignment(la); err != nil {
			return nil, fmt.Errorf("load_assignment: %w", err)
		}
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(c)
}

// clusterLoadAssignmentBody decodes r and checks it with ValidateAll and
// envoy.CheckClusterLoadAssignment, which catches what real clients NACK but
// the generated validators let through (duplicate localities or addresses,
// no weighted locality). It returns r's own bytes: they are served as they
// are, shared with the session that made them (never changed once made).
func clusterLoadAssignmentBody(r translate.Resource) ([]byte, error) {
	cla := new(endpointv3.ClusterLoadAssignment)
	if err := proto.Unmarshal(r.Body, cla); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if cla.GetClusterName() != r.Name {
		return nil, fmt.Errorf("listed as %q but named %q", r.Name, cla.GetClusterName())
	}
	if err := cla.ValidateAll(); err != nil {
		return nil, err
	}
	if err := envoy.CheckClusterLoadAssignment(cla); err != nil {
		return nil, err
	}
	return r.Body, nil
}
