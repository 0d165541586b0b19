// Package client is a small Go client for TranslationService: it calls
// Translate and hands back typed Envoy resources instead of Any values.
//
// Use it over any connection, for example to a server on the default
// address of tributary serve:
//
//	conn, err := grpc.NewClient("127.0.0.1:8081", grpc.WithTransportCredentials(insecure.NewCredentials()))
//	...
//	tr, err := client.New(conn).Translate(ctx, req)
package client

import (
	"context"
	"errors"
	"fmt"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// DefaultMaxMsgSize is the largest request the client sends and the largest
// response it accepts unless call options say otherwise. It matches the
// server's default, because gRPC's 4 MiB default receive limit would reject
// the response to any sizeable cluster.
const DefaultMaxMsgSize = 64 << 20

// Type URLs the server puts in its Any values.
var (
	ClusterTypeURL               = typeURL(&clusterv3.Cluster{})
	ClusterLoadAssignmentTypeURL = typeURL(&endpointv3.ClusterLoadAssignment{})
)

func typeURL(m proto.Message) string {
	return "type.googleapis.com/" + string(m.ProtoReflect().Descriptor().FullName())
}

// Client calls TranslationService. It is safe for concurrent use.
type Client struct {
	rpc tributaryv1.TranslationServiceClient
}

// New returns a Client over conn, typically a *grpc.ClientConn.
func New(conn grpc.ClientConnInterface) *Client {
	return &Client{rpc: tributaryv1.NewTranslationServiceClient(conn)}
}

// Translation is a TranslateResponse with its resources unpacked. Each list
// keeps the response's order (sorted by name). A Cluster and the
// ClusterLoadAssignment of the same ExtensionService share a name.
type Translation struct {
	Clusters               []*clusterv3.Cluster
	ClusterLoadAssignments []*endpointv3.ClusterLoadAssignment
	Statuses               []*tributaryv1.ExtensionServiceStatus
	// ClusterVersions and ClusterLoadAssignmentVersions map each resource's
	// name to its version: equal versions mean equal bytes, so a caller can
	// skip pushing what has not changed.
	ClusterVersions               map[string]string
	ClusterLoadAssignmentVersions map[string]string
}

// Translate calls TranslationService.Translate and unpacks the response.
// Errors from the call are gRPC status errors (status.Code reads them;
// InvalidArgument carries BadRequest details). A response that cannot be
// unpacked (an unexpected type URL, bytes that do not decode, a name that
// disagrees with its resource, or a name listed twice) gives an error
// wrapping ErrMalformedResponse.
func (c *Client) Translate(ctx context.Context, req *tributaryv1.TranslateRequest, opts ...TranslateOption) (*Translation, error) {
	var o translateOptions
	for _, opt := range opts {
		opt.applyToTranslate(&o)
	}
	resp, err := c.rpc.Translate(ctx, req, callOptions(o.callOptions)...)
	if err != nil {
		return nil, err
	}
	return Unpack(resp)
}

// ErrMalformedResponse is wrapped by errors Unpack returns.
var ErrMalformedResponse = errors.New("malformed TranslateResponse")

// Unpack converts a TranslateResponse into a Translation, checking every
// resource's type URL and that its name matches the resource it holds.
func Unpack(resp *tributaryv1.TranslateResponse) (*Translation, error) {
	t := &Translation{
		Clusters:                      make([]*clusterv3.Cluster, len(resp.GetClusters())),
		ClusterLoadAssignments:        make([]*endpointv3.ClusterLoadAssignment, len(resp.GetClusterLoadAssignments())),
		Statuses:                      resp.GetStatuses(),
		ClusterVersions:               make(map[string]string, len(resp.GetClusters())),
		ClusterLoadAssignmentVersions: make(map[string]string, len(resp.GetClusterLoadAssignments())),
	}
	for i, r := range resp.GetClusters() {
		c := &clusterv3.Cluster{}
		if err := unpackResource(r, c, ClusterTypeURL, t.ClusterVersions); err != nil {
			return nil, fmt.Errorf("%w: clusters[%d]: %w", ErrMalformedResponse, i, err)
		}
		if c.GetName() != r.GetName() {
			return nil, fmt.Errorf("%w: clusters[%d]: listed as %q but the Cluster is named %q", ErrMalformedResponse, i, r.GetName(), c.GetName())
		}
		t.Clusters[i] = c
	}
	for i, r := range resp.GetClusterLoadAssignments() {
		cla := &endpointv3.ClusterLoadAssignment{}
		if err := unpackResource(r, cla, ClusterLoadAssignmentTypeURL, t.ClusterLoadAssignmentVersions); err != nil {
			return nil, fmt.Errorf("%w: clusterLoadAssignments[%d]: %w", ErrMalformedResponse, i, err)
		}
		if cla.GetClusterName() != r.GetName() {
			return nil, fmt.Errorf("%w: clusterLoadAssignments[%d]: listed as %q but the ClusterLoadAssignment is for cluster %q", ErrMalformedResponse, i, r.GetName(), cla.GetClusterName())
		}
		t.ClusterLoadAssignments[i] = cla
	}
	return t, nil
}

// unpackResource decodes r into m after checking its type URL, and records
// its version under its name, which must be new.
func unpackResource(r *tributaryv1.Resource, m proto.Message, wantType string, versions map[string]string) error {
	a := r.GetResource()
	if a == nil {
		return fmt.Errorf("%q has no resource", r.GetName())
	}
	if a.GetTypeUrl() != wantType {
		return fmt.Errorf("%q has type %q, want %q", r.GetName(), a.GetTypeUrl(), wantType)
	}
	if err := proto.Unmarshal(a.GetValue(), m); err != nil {
		return fmt.Errorf("%q does not decode as %s: %w", r.GetName(), m.ProtoReflect().Descriptor().FullName(), err)
	}
	if _, dup := versions[r.GetName()]; dup {
		return fmt.Errorf("%q is listed twice", r.GetName())
	}
	versions[r.GetName()] = r.GetVersion()
	return nil
}

// callOptions puts the client's defaults (message sizes matching the
// server's) before opts, so that opts override them.
func callOptions(opts []grpc.CallOption) []grpc.CallOption {
	return append([]grpc.CallOption{grpc.MaxCallRecvMsgSize(DefaultMaxMsgSize), grpc.MaxCallSendMsgSize(DefaultMaxMsgSize)}, opts...)
}
