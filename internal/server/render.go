package server

import (
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// jsonRenderer writes Envoy's JSON field names (lowerCamelCase, as Envoy's
// own config dump and bootstrap files use) and resolves the Any values
// nested in a resource (transport sockets, protocol options) through the
// global registry, which holds every Envoy type this binary links.
var jsonRenderer = protojson.MarshalOptions{Resolver: protoregistry.GlobalTypes}

// renderJSON renders one serialised Envoy resource as protojson, for clients
// that have no Envoy types to unpack the Any with (include_json). typeURL
// names the resource's type as in its Any; body is the exact bytes the
// version hashes.
//
// The output is valid JSON that protojson (or any Envoy) reads back into an
// equal message; its whitespace is not stable across protobuf releases, so
// clients must parse it rather than compare it as text. An error means the
// type is not linked into the binary or the bytes do not decode as that
// type: both are server bugs, never the client's fault.
func renderJSON(typeURL string, body []byte) (string, error) {
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(typeURL)
	if err != nil {
		return "", fmt.Errorf("render %s as JSON: %w", typeURL, err)
	}
	m := mt.New().Interface()
	if err := (proto.UnmarshalOptions{Resolver: protoregistry.GlobalTypes}).Unmarshal(body, m); err != nil {
		return "", fmt.Errorf("render %s as JSON: %w", typeURL, err)
	}
	j, err := jsonRenderer.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("render %s as JSON: %w", typeURL, err)
	}
	return string(j), nil
}

// addJSON sets Resource.json on every resource of lists, for a request that
// set include_json (TranslateRequest or SyncStart). It runs after encoding
// and leaves the Any untouched, so the bytes and versions are those of a
// request without JSON. A resource that cannot be rendered fails the call
// with Internal: it is a server bug, and a partial answer would look like
// a complete one.
func addJSON(lists ...[]*tributaryv1.Resource) error {
	for _, list := range lists {
		for _, r := range list {
			j, err := renderJSON(r.GetResource().GetTypeUrl(), r.GetResource().GetValue())
			if err != nil {
				return status.Errorf(codes.Internal, "resource %q: %v", r.GetName(), err)
			}
			r.Json = j
		}
	}
	return nil
}
