package xdstest

import (
	"fmt"

	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

func (w *Watcher) runSotW(st discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient, node *corev3.Node) error {
	initial := initialRequests(w, node, func(node *corev3.Node, typeURL string, names []string) *discoveryv3.DiscoveryRequest {
		return &discoveryv3.DiscoveryRequest{Node: node, TypeUrl: typeURL, ResourceNames: names}
	})
	return exchange(st, initial, func(resp *discoveryv3.DiscoveryResponse) (*discoveryv3.DiscoveryRequest, func(), error) {
		typeURL := resp.GetTypeUrl()
		decoded, err := decodeAll(typeURL, resp.GetResources(), w.keepEncoded)
		ack := &discoveryv3.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: w.subscriptions[typeURL], ResponseNonce: resp.GetNonce(), VersionInfo: resp.GetVersionInfo()}
		if err != nil {
			ack.VersionInfo = w.lastVersion(typeURL)
			ack.ErrorDetail = &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: err.Error()}
			return ack, nil, fmt.Errorf("NACKed %s version %s: %w", typeURL, resp.GetVersionInfo(), err)
		}
		// State of the World sends Listeners and Clusters whole: a name
		// left out is gone. ClusterLoadAssignments are sent only when they
		// change.
		return ack, func() { w.update(typeURL, decoded, nil, typeURL != resourcev3.EndpointType, resp.GetVersionInfo()) }, nil
	})
}

func (w *Watcher) runDelta(st discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesClient, node *corev3.Node) error {
	initial := initialRequests(w, node, func(node *corev3.Node, typeURL string, names []string) *discoveryv3.DeltaDiscoveryRequest {
		return &discoveryv3.DeltaDiscoveryRequest{Node: node, TypeUrl: typeURL, ResourceNamesSubscribe: names}
	})
	return exchange(st, initial, func(resp *discoveryv3.DeltaDiscoveryResponse) (*discoveryv3.DeltaDiscoveryRequest, func(), error) {
		typeURL := resp.GetTypeUrl()
		var decoded map[string]proto.Message
		var err error
		if w.undecoded {
			decoded, err = named(typeURL, resp.GetResources())
		} else {
			anys := make([]*anypb.Any, len(resp.GetResources()))
			for i, r := range resp.GetResources() {
				anys[i] = r.GetResource()
			}
			decoded, err = decodeAll(typeURL, anys, w.keepEncoded)
		}
		ack := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: typeURL, ResponseNonce: resp.GetNonce()}
		if err != nil {
			ack.ErrorDetail = &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: err.Error()}
			return ack, nil, fmt.Errorf("NACKed %s version %s: %w", typeURL, resp.GetSystemVersionInfo(), err)
		}
		return ack, func() { w.update(typeURL, decoded, resp.GetRemovedResources(), false, resp.GetSystemVersionInfo()) }, nil
	})
}

// initialRequests builds the initial subscriptions, one request per type;
// only the first names the node, as a client does.
func initialRequests[Req any](w *Watcher, node *corev3.Node, build func(node *corev3.Node, typeURL string, names []string) *Req) []*Req {
	var out []*Req
	for _, typeURL := range w.subscribedTypes() {
		out = append(out, build(node, typeURL, w.subscriptions[typeURL]))
		node = nil
	}
	return out
}

// exchange runs the client's side of an ADS stream of either variant: it
// sends initial, then answers each response with the ACK or NACK that
// answer builds. After an ACK is sent it calls accept, so the state changes
// only once the server has been told; after a NACK it returns refusal.
func exchange[Req, Resp any](st grpc.BidiStreamingClient[Req, Resp], initial []*Req, answer func(*Resp) (ack *Req, accept func(), refusal error)) error {
	for _, req := range initial {
		if err := st.Send(req); err != nil {
			return err
		}
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			return err
		}
		ack, accept, refusal := answer(resp)
		if err := st.Send(ack); err != nil {
			return err
		}
		if refusal != nil {
			return refusal
		}
		accept()
	}
}

// decodeAll unpacks resources of typeURL, keyed by name, and validates
// them as a client would. With keepEncoded it returns the Anys themselves,
// once decoded and validated.
func decodeAll(typeURL string, resources []*anypb.Any, keepEncoded bool) (map[string]proto.Message, error) {
	out := make(map[string]proto.Message, len(resources))
	for _, a := range resources {
		if a.GetTypeUrl() != typeURL {
			return nil, fmt.Errorf("a %s in a %s response", a.GetTypeUrl(), typeURL)
		}
		m, err := a.UnmarshalNew()
		if err != nil {
			return nil, err
		}
		if v, ok := m.(interface{ ValidateAll() error }); ok {
			if err := v.ValidateAll(); err != nil {
				return nil, err
			}
		}
		name := cachev3.GetResourceName(m)
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s %q twice in one response", typeURL, name)
		}
		out[name] = m
		if keepEncoded {
			out[name] = a
		}
	}
	return out, nil
}

// named keys a Delta response's resources by the names it gives them,
// undecoded, checking only their type.
func named(typeURL string, resources []*discoveryv3.Resource) (map[string]proto.Message, error) {
	out := make(map[string]proto.Message, len(resources))
	for _, r := range resources {
		if t := r.GetResource().GetTypeUrl(); t != typeURL {
			return nil, fmt.Errorf("a %s in a %s response", t, typeURL)
		}
		if _, dup := out[r.GetName()]; dup {
			return nil, fmt.Errorf("%s %q twice in one response", typeURL, r.GetName())
		}
		out[r.GetName()] = r.GetResource()
	}
	return out, nil
}
