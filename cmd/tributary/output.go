package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	// The types Clusters carry in Any fields; protojson needs them linked to
	// print those fields.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// translation is what `tributary translate` prints. Lists are never null,
// so scripts can index them without checking.
type translation struct {
	// Clusters and ClusterLoadAssignments are Envoy's protojson.
	Clusters               []json.RawMessage `json:"clusters"`
	ClusterLoadAssignments []json.RawMessage `json:"clusterLoadAssignments"`
	Statuses               []statusJSON      `json:"statuses"`
}

// statusJSON is an ExtensionServiceStatus in the shape Kubernetes status
// takes (observedGeneration is a number, not protojson's int64 string).
type statusJSON struct {
	Namespace       string          `json:"namespace"`
	Name            string          `json:"name"`
	ClusterName     string          `json:"clusterName,omitempty"`
	ResponseTimeout string          `json:"responseTimeout,omitempty"`
	Conditions      []conditionJSON `json:"conditions"`
}

type conditionJSON struct {
	Type               string             `json:"type"`
	Status             string             `json:"status"`
	ObservedGeneration int64              `json:"observedGeneration"`
	Reason             string             `json:"reason"`
	Message            string             `json:"message"`
	Errors             []subConditionJSON `json:"errors,omitempty"`
	Warnings           []subConditionJSON `json:"warnings,omitempty"`
}

type subConditionJSON struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// render prints resp as indented JSON or as YAML. The output depends only
// on resp: protojson's whitespace, which varies on purpose from build to
// build, is normalised away, and the YAML keys are sorted.
func render(resp *tributaryv1.TranslateResponse, format string) ([]byte, error) {
	t := translation{
		Clusters:               []json.RawMessage{},
		ClusterLoadAssignments: []json.RawMessage{},
		Statuses:               []statusJSON{},
	}
	for _, r := range resp.GetClusters() {
		j, err := resourceJSON(r, &clusterv3.Cluster{})
		if err != nil {
			return nil, err
		}
		t.Clusters = append(t.Clusters, j)
	}
	for _, r := range resp.GetClusterLoadAssignments() {
		j, err := resourceJSON(r, &endpointv3.ClusterLoadAssignment{})
		if err != nil {
			return nil, err
		}
		t.ClusterLoadAssignments = append(t.ClusterLoadAssignments, j)
	}
	for _, s := range resp.GetStatuses() {
		t.Statuses = append(t.Statuses, statusOf(s))
	}

	out, err := indentedJSON(t)
	if err != nil {
		return nil, err
	}
	if format == "yaml" {
		return yaml.JSONToYAML(out)
	}
	return out, nil
}

// indentedJSON is how every command prints JSON: indented by two spaces,
// with a final newline.
func indentedJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Certificates and messages stay readable: no \u003c for '<'.
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// resourceJSON unpacks r into into (checking its type) and prints it as
// protojson. encoding/json compacts the result when it is embedded.
func resourceJSON(r *tributaryv1.Resource, into proto.Message) (json.RawMessage, error) {
	if err := r.GetResource().UnmarshalTo(into); err != nil {
		return nil, fmt.Errorf("resource %q: %w", r.GetName(), err)
	}
	j, err := protojson.Marshal(into)
	if err != nil {
		return nil, fmt.Errorf("resource %q: %w", r.GetName(), err)
	}
	return j, nil
}

func statusOf(s *tributaryv1.ExtensionServiceStatus) statusJSON {
	out := statusJSON{
		Namespace:       s.GetNamespace(),
		Name:            s.GetName(),
		ClusterName:     s.GetClusterName(),
		ResponseTimeout: s.GetResponseTimeout(),
		Conditions:      []conditionJSON{},
	}
	for _, c := range s.GetConditions() {
		out.Conditions = append(out.Conditions, conditionJSON{
			Type:               c.GetType(),
			Status:             c.GetStatus(),
			ObservedGeneration: c.GetObservedGeneration(),
			Reason:             c.GetReason(),
			Message:            c.GetMessage(),
			Errors:             subConditions(c.GetErrors()),
			Warnings:           subConditions(c.GetWarnings()),
		})
	}
	return out
}

func subConditions(scs []*tributaryv1.SubCondition) []subConditionJSON {
	var out []subConditionJSON
	for _, sc := range scs {
		out = append(out, subConditionJSON{Type: sc.GetType(), Status: sc.GetStatus(), Reason: sc.GetReason(), Message: sc.GetMessage()})
	}
	return out
}
