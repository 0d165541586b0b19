// Package client is a small Go client for TranslationService.
package client

import (
	"context"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/grpc"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// Client calls TranslationService.
type Client struct {
	rpc tributaryv1.TranslationServiceClient
}

// New returns a Client over conn.
func New(conn grpc.ClientConnInterface) *Client {
	return &Client{rpc: tributaryv1.NewTranslationServiceClient(conn)}
}

// Translation is a TranslateResponse with its resources unpacked.
type Translation struct {
	Clusters               []*clusterv3.Cluster
	ClusterLoadAssignments []*endpointv3.ClusterLoadAssignment
	Statuses               []*tributaryv1.ExtensionServiceStatus
	// ClusterVersions and ClusterLoadAssignmentVersions map resource names to versions.
	ClusterVersions               map[string]string
	ClusterLoadAssignmentVersions map[string]string
}

// Translate calls TranslationService.Translate.
func (c *Client) Translate(ctx context.Context, req *tributaryv1.TranslateRequest, opts ...grpc.CallOption) (*Translation, error) {
	panic("TODO")
}
