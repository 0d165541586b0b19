package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	// The types Clusters carry in Any fields; protojson needs them linked to
	// print those fields.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// outputType is what --type selects.
type outputType string

const (
	outputAll      outputType = "all"
	outputCluster  outputType = "cluster"
	outputEndpoint outputType = "endpoint"
	outputStatus   outputType = "status"
	// outputAvailability: see output_availability.go.
	outputAvailability outputType = "availability"
)

// outputTypes maps every spelling --type accepts to what it selects: the
// singular, and the plural kubectl users type out of habit.
var outputTypes = map[string]outputType{
	"all":       outputAll,
	"cluster":   outputCluster,
	"clusters":  outputCluster,
	"endpoint":  outputEndpoint,
	"endpoints": outputEndpoint,
	"status":    outputStatus,
	"statuses":  outputStatus,
	// "availability" has no plural.
	"availability": outputAvailability,
}

// outputTypeChoices lists the --type values for help and errors.
const outputTypeChoices = "all, cluster, endpoint, status or availability"

// parseOutputType reads --type.
func parseOutputType(s string) (outputType, error) {
	if t, ok := outputTypes[s]; ok {
		return t, nil
	}
	return "", usageErrorf("invalid --type %q: want %s", s, outputTypeChoices)
}

// The shapes `tributary translate` prints follow what tools already read
// rather than a format of Tributary's own:
//
//   - Envoy resources are an envoy.admin.v3.ConfigDump, as Envoy's
//     /config_dump and `egctl x translate` print them: a ClustersConfigDump
//     and an EndpointsConfigDump whose dynamic entries carry each resource's
//     version and the resource as an Any with its @type. A tool that reads
//     a config dump (or a person used to one) reads this unchanged;
//     --type cluster or endpoint keeps only that section.
//   - Statuses are ExtensionServices carrying only their .status, in the
//     shape Contour writes, inside a Kubernetes v1 List as `kubectl get -o
//     yaml` prints several objects; --type status prints that List alone.
//   - --type all (the default) holds both under the names --type gives
//     them, since neither shape can hold the other.
//
// The JSON depends only on the response: protojson's whitespace, which
// varies on purpose from build to build, is normalised away by re-indenting
// it with encoding/json, and the YAML is that JSON with its keys sorted.

// translation is what --type all prints.
type translation struct {
	ConfigDump json.RawMessage `json:"configDump"`
	Statuses   statusList      `json:"statuses"`
}

// statusList is a Kubernetes v1 List of ExtensionServices. Items is never
// null, so scripts can index it without checking.
type statusList struct {
	APIVersion string                 `json:"apiVersion"`
	Kind       string                 `json:"kind"`
	Items      []extensionServiceJSON `json:"items"`
}

// extensionServiceJSON is an ExtensionService with its metadata's name and
// namespace and its status: the object a status update of Contour's
// patches. The spec is the user's own and is not repeated.
type extensionServiceJSON struct {
	APIVersion string                     `json:"apiVersion"`
	Kind       string                     `json:"kind"`
	Metadata   objectMetaJSON             `json:"metadata"`
	Status     extensionServiceStatusJSON `json:"status"`
}

type objectMetaJSON struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// extensionServiceStatusJSON is Contour's ExtensionServiceStatus. The API's
// clusterName and responseTimeout are not part of it: the Cluster is in the
// config dump, named extension/<namespace>/<name>, and the response
// timeout is the ExtensionService's own spec.timeoutPolicy.response.
type extensionServiceStatusJSON struct {
	Conditions []conditionJSON `json:"conditions"`
}

// conditionJSON is Contour's DetailedCondition. lastTransitionTime is left
// out: Contour stamps it when a condition changes in the cluster, and a
// one-off translation changes nothing there; a made-up time would also make
// the output differ from run to run.
type conditionJSON struct {
	Type   string `json:"type"`
	Status string `json:"status"`
	// A number, as Kubernetes writes it, not protojson's int64 string.
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

// render prints the part of resp that what selects, as indented JSON or as
// YAML.
func render(resp *tributaryv1.TranslateResponse, format string, what outputType) ([]byte, error) {
	var v any
	switch what {
	case outputStatus:
		v = statusListOf(resp)
	case outputAvailability:
		v = availabilityOf(resp)
	case outputCluster, outputEndpoint:
		dump, err := configDump(resp, what)
		if err != nil {
			return nil, err
		}
		v = dump
	default:
		dump, err := configDump(resp, outputAll)
		if err != nil {
			return nil, err
		}
		v = translation{ConfigDump: dump, Statuses: statusListOf(resp)}
	}
	out, err := indentedJSON(v)
	if err != nil {
		return nil, err
	}
	if format == "yaml" {
		return yaml.JSONToYAML(out)
	}
	return out, nil
}

// indentedJSON is how every command prints JSON: indented by two spaces,
// with a final newline. encoding/json compacts the protojson it embeds
// before indenting it.
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

// configDump is the ConfigDump of resp's Clusters (unless what is
// outputEndpoint) and ClusterLoadAssignments (unless what is
// outputCluster), in protojson. Each section is present even when it holds
// no resources, so a reader always finds the one it looks for.
func configDump(resp *tributaryv1.TranslateResponse, what outputType) (json.RawMessage, error) {
	dump := &adminv3.ConfigDump{}
	if what != outputEndpoint {
		entries, err := dumpEntries(resp.GetClusters(), &clusterv3.Cluster{},
			func(version string, res *anypb.Any) *adminv3.ClustersConfigDump_DynamicCluster {
				return &adminv3.ClustersConfigDump_DynamicCluster{VersionInfo: version, Cluster: res}
			})
		if err != nil {
			return nil, err
		}
		if err := appendConfig(dump, &adminv3.ClustersConfigDump{DynamicActiveClusters: entries}); err != nil {
			return nil, err
		}
	}
	if what != outputCluster {
		entries, err := dumpEntries(resp.GetClusterLoadAssignments(), &endpointv3.ClusterLoadAssignment{},
			func(version string, res *anypb.Any) *adminv3.EndpointsConfigDump_DynamicEndpointConfig {
				return &adminv3.EndpointsConfigDump_DynamicEndpointConfig{VersionInfo: version, EndpointConfig: res}
			})
		if err != nil {
			return nil, err
		}
		if err := appendConfig(dump, &adminv3.EndpointsConfigDump{DynamicEndpointConfigs: entries}); err != nil {
			return nil, err
		}
	}
	return protojson.Marshal(dump)
}

// dumpEntries wraps each resource, checked to be of want's type, in the
// ConfigDump entry entry makes of its version and its Any.
func dumpEntries[E any](resources []*tributaryv1.Resource, want proto.Message, entry func(version string, res *anypb.Any) E) ([]E, error) {
	var entries []E
	for _, r := range resources {
		res, err := envoyResource(r, want)
		if err != nil {
			return nil, err
		}
		entries = append(entries, entry(r.GetVersion(), res))
	}
	return entries, nil
}

// appendConfig adds one section to dump, packed as Envoy packs it.
func appendConfig(dump *adminv3.ConfigDump, section proto.Message) error {
	a, err := anypb.New(section)
	if err != nil {
		return err
	}
	dump.Configs = append(dump.Configs, a)
	return nil
}

// envoyResource is r's resource after checking that it is of the type of
// want: a response holding anything else is a bug to report, not to print.
func envoyResource(r *tributaryv1.Resource, want proto.Message) (*anypb.Any, error) {
	if !r.GetResource().MessageIs(want) {
		return nil, fmt.Errorf("resource %q is a %s, want %s", r.GetName(), r.GetResource().GetTypeUrl(), want.ProtoReflect().Descriptor().FullName())
	}
	return r.GetResource(), nil
}

// ExtensionService's apiVersion and kind, as Contour's CRD names them.
const (
	extensionServiceAPIVersion = "projectcontour.io/v1alpha1"
	extensionServiceKind       = "ExtensionService"
)

func statusListOf(resp *tributaryv1.TranslateResponse) statusList {
	list := statusList{APIVersion: "v1", Kind: "List", Items: []extensionServiceJSON{}}
	for _, s := range resp.GetStatuses() {
		list.Items = append(list.Items, extensionServiceOf(s))
	}
	return list
}

func extensionServiceOf(s *tributaryv1.ExtensionServiceStatus) extensionServiceJSON {
	out := extensionServiceJSON{
		APIVersion: extensionServiceAPIVersion,
		Kind:       extensionServiceKind,
		Metadata:   objectMetaJSON{Name: s.GetName(), Namespace: s.GetNamespace()},
		Status:     extensionServiceStatusJSON{Conditions: []conditionJSON{}},
	}
	for _, c := range s.GetConditions() {
		out.Status.Conditions = append(out.Status.Conditions, conditionJSON{
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

// The Valid condition every ExtensionService status holds, and its value
// when the ExtensionService translated.
const (
	conditionValid = "Valid"
	conditionTrue  = "True"
)

// invalidReason says why s is not valid in one line ("ServiceUnresolvedReference:
// unresolved service ...", several errors joined by "; "), or "" when it is
// valid. A status without a Valid condition is not valid: nothing says it is.
func invalidReason(s *tributaryv1.ExtensionServiceStatus) string {
	for _, c := range s.GetConditions() {
		if c.GetType() != conditionValid {
			continue
		}
		if c.GetStatus() == conditionTrue {
			return ""
		}
		// The condition's own message only points at its errors ("see
		// Errors for details"), so the errors are the reason when there
		// are any.
		var parts []string
		for _, e := range c.GetErrors() {
			parts = append(parts, e.GetReason()+": "+e.GetMessage())
		}
		if len(parts) == 0 {
			parts = append(parts, c.GetReason()+": "+c.GetMessage())
		}
		return strings.Join(parts, "; ")
	}
	return "no " + conditionValid + " condition"
}
