package loadtest

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/workload"
)

// tenant is one Sync session's objects: the standard workload, moved into
// namespaces of its own, kept both as the pipeline's input (source, which
// translate.Translate reads to say what the session must end with) and as
// the API objects sent. Churn changes the source objects and returns the
// API objects to upsert, so the two never drift apart.
type tenant struct {
	objs *source.Objects
	rnd  *rand.Rand
	// nextPod is the next pod number for a new endpoint address: past the
	// workload's own pods, and distinct per tenant.
	nextPod uint32
}

// newTenant returns tenant id's workload of extensionServices
// ExtensionServices with endpoints endpoints per Service, in namespaces
// "t<id>-team-NNN".
func newTenant(id, extensionServices, endpoints int) *tenant {
	objs := workload.Standard(extensionServices, endpoints)
	prefix := fmt.Sprintf("t%03d-", id)
	for i := range objs.ExtensionServices {
		objs.ExtensionServices[i].Namespace = prefix + objs.ExtensionServices[i].Namespace
	}
	for i := range objs.Services {
		objs.Services[i].Namespace = prefix + objs.Services[i].Namespace
	}
	for i := range objs.EndpointSlices {
		objs.EndpointSlices[i].Namespace = prefix + objs.EndpointSlices[i].Namespace
	}
	return &tenant{
		objs:    objs,
		rnd:     rand.New(rand.NewPCG(uint64(id), 0x10ad7e57)),
		nextPod: uint32(1<<20 + id<<12), // 4096 new pods per tenant before overlapping the next one's: plenty, and overlap would still be valid input
	}
}

// all returns every object, as API objects.
func (w *tenant) all() []*tributaryv1.KubernetesObject {
	var out []*tributaryv1.KubernetesObject
	for i := range w.objs.ExtensionServices {
		out = append(out, workload.ExtensionServiceObject(&w.objs.ExtensionServices[i]))
	}
	for i := range w.objs.Services {
		out = append(out, workload.ServiceObject(&w.objs.Services[i]))
	}
	for i := range w.objs.EndpointSlices {
		out = append(out, workload.EndpointSliceObject(&w.objs.EndpointSlices[i]))
	}
	return out
}

// churn changes one random EndpointSlice as a cluster's pods do (a pod
// replaced by a new one at a new address, a pod turning ready or not, a
// scale up, a scale down, possibly to zero) and returns it as an API object.
// Fields are replaced, never written through: the pointers and arrays are
// shared with objects sent earlier, which the client keeps.
func (w *tenant) churn() *tributaryv1.KubernetesObject {
	slice := &w.objs.EndpointSlices[w.rnd.IntN(len(w.objs.EndpointSlices))]
	eps := slice.Endpoints.Unpack()
	op := w.rnd.IntN(4)
	if len(eps) == 0 {
		op = 2
	}
	switch op {
	case 0: // a pod replaced
		i := w.rnd.IntN(len(eps))
		eps[i] = workload.ReadyEndpoint(w.newPod())
	case 1: // readiness flips
		i := w.rnd.IntN(len(eps))
		eps[i].NotReady = !eps[i].NotReady
	case 2: // scale up
		eps = append(eps, workload.ReadyEndpoint(w.newPod()))
	case 3: // scale down
		eps = eps[:len(eps)-1]
	}
	slice.Endpoints = source.MakeEndpoints(eps...)
	return workload.EndpointSliceObject(slice)
}

func (w *tenant) newPod() string {
	w.nextPod++
	return workload.PodAddress(w.nextPod).String()
}

// viewMismatch compares a session's accumulated output with a fresh
// translation of objs (under default settings) and describes the first few
// differences, or returns "" when they are equal: the same resources by
// name, each with the translation's version, and the same statuses. A
// resource the session still holds but the translation lacks is stale; one
// it lacks was lost.
//
// A resource's version is a hash of its bytes, computed alike by the server
// and by translate.Translate, so equal versions mean the server sent exactly
// the translation's bytes. withContent also unpacks the translation's bytes
// and compares them with the messages the client holds, which proves the
// client unpacked what it was sent; under the race detector that costs
// about 30 ms per 100 ExtensionServices, so the soak does it for a sample.
func viewMismatch(v client.View, objs *source.Objects, withContent bool) string {
	want := translate.Translate(objs, source.Settings{})
	var problems []string
	problems = append(problems, compareResources("Cluster", v.Clusters, v.ClusterVersions, want.Clusters, withContent, func() *clusterv3.Cluster { return &clusterv3.Cluster{} })...)
	problems = append(problems, compareResources("ClusterLoadAssignment", v.ClusterLoadAssignments, v.ClusterLoadAssignmentVersions, want.ClusterLoadAssignments, withContent, func() *endpointv3.ClusterLoadAssignment { return &endpointv3.ClusterLoadAssignment{} })...)
	wantStatuses := map[client.NamespacedName]*tributaryv1.ExtensionServiceStatus{}
	for _, st := range want.Statuses {
		wantStatuses[client.NamespacedName{Namespace: st.Namespace, Name: st.Name}] = statusMessage(st)
	}
	for _, n := range slices.SortedFunc(maps.Keys(v.Statuses), client.NamespacedName.Compare) {
		if _, ok := wantStatuses[n]; !ok {
			problems = append(problems, fmt.Sprintf("status of %s is stale: the translation has none", n))
		}
	}
	for _, n := range slices.SortedFunc(maps.Keys(wantStatuses), client.NamespacedName.Compare) {
		got, ok := v.Statuses[n]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("status of %s is lost", n))
		case !proto.Equal(got, wantStatuses[n]):
			problems = append(problems, fmt.Sprintf("status of %s differs (-got +want):\n%s", n, cmp.Diff(got, wantStatuses[n], protocmp.Transform())))
		}
	}
	if len(problems) == 0 {
		return ""
	}
	const shown = 5
	more := ""
	if len(problems) > shown {
		more = fmt.Sprintf("\n... and %d more", len(problems)-shown)
		problems = problems[:shown]
	}
	return strings.Join(problems, "\n") + more
}

// compareResources compares one kind of resource of a View with a
// translation's.
func compareResources[T proto.Message](kind string, got map[string]T, gotVersions map[string]string, want []translate.Resource, withContent bool, newMsg func() T) []string {
	var problems []string
	wanted := make(map[string]bool, len(want))
	for _, r := range want {
		wanted[r.Name] = true
		msg, ok := got[r.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s %s is lost", kind, r.Name))
			continue
		}
		if gotVersions[r.Name] != r.Version {
			problems = append(problems, fmt.Sprintf("%s %s has version %s, the translation %s", kind, r.Name, gotVersions[r.Name], r.Version))
		}
		if !withContent {
			continue
		}
		w := newMsg()
		if err := proto.Unmarshal(r.Body, w); err != nil {
			problems = append(problems, fmt.Sprintf("%s %s: the translation does not decode: %v", kind, r.Name, err))
			continue
		}
		if !proto.Equal(msg, w) {
			problems = append(problems, fmt.Sprintf("%s %s differs (-got +want):\n%s", kind, r.Name, cmp.Diff(msg, w, protocmp.Transform())))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if !wanted[name] {
			problems = append(problems, fmt.Sprintf("%s %s is stale: the translation has none", kind, name))
		}
	}
	return problems
}

// statusMessage is the API form of a status, as the server encodes it.
func statusMessage(st model.Status) *tributaryv1.ExtensionServiceStatus {
	c := st.Condition
	sub := func(scs []model.SubCondition) []*tributaryv1.SubCondition {
		var out []*tributaryv1.SubCondition
		for _, sc := range scs {
			out = append(out, &tributaryv1.SubCondition{Type: sc.Type, Status: sc.Status, Reason: sc.Reason, Message: sc.Message})
		}
		return out
	}
	return &tributaryv1.ExtensionServiceStatus{
		Namespace: st.Namespace,
		Name:      st.Name,
		Conditions: []*tributaryv1.DetailedCondition{{
			Type: c.Type, Status: c.Status, ObservedGeneration: c.ObservedGeneration,
			Reason: c.Reason, Message: c.Message, Errors: sub(c.Errors), Warnings: sub(c.Warnings),
		}},
		ClusterName:     st.ClusterName,
		ResponseTimeout: st.ResponseTimeout,
		Availability:    availabilityMessages(st.Availability),
	}
}

// availabilityMessages is the API form of a status's per-target
// availability, beside the conditions.
func availabilityMessages(as []model.TargetAvailability) []*tributaryv1.TargetAvailability {
	var out []*tributaryv1.TargetAvailability
	for _, a := range as {
		out = append(out, &tributaryv1.TargetAvailability{
			Service: a.Service, Port: a.Port, ReadyEndpoints: a.ReadyEndpoints, Weight: a.Weight, Reason: a.Reason,
		})
	}
	return out
}
