package translate_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/envoy"
	"github.com/tributary-dev/tributary/model"
	"github.com/tributary-dev/tributary/source"
	"github.com/tributary-dev/tributary/translate"
)

// workloadNamespaces is how many namespaces the ExtensionServices of a
// standard workload spread over.
const workloadNamespaces = 100

// workloadTargetPort is the Service port (and pod port) of every target.
const workloadTargetPort = 9000

// standardWorkload returns the standard benchmark input: n ExtensionServices
// speaking h2c, each splitting traffic 80/20 between two Services of its own
// ("<name>-primary", "<name>-canary") with one EndpointSlice of m ready IPv4
// endpoints each, 2·n·m endpoints in all.
//
// It is deterministic. Pod addresses are distinct across the whole workload
// and scattered over 10.0.0.0/8 the way a cluster's pod CIDR fills up, so
// neither a slice nor the workload lists them in order and sorting does
// real work. Objects are listed in an order unrelated to their names.
func standardWorkload(n, m int) *source.Objects {
	objs := &source.Objects{
		ExtensionServices: make([]source.ExtensionService, 0, n),
		Services:          make([]source.Service, 0, 2*n),
		EndpointSlices:    make([]source.EndpointSlice, 0, 2*n),
	}
	h2c := "h2c"
	ready, notTerminating := true, false
	tcp, portName, port := "TCP", "grpc", int32(workloadTargetPort)
	slicePorts := []source.EndpointPort{{Name: &portName, Port: &port, Protocol: &tcp}}

	next := uint32(0) // the next pod, before scattering
	for i := range n {
		// Visit the ExtensionServices out of name order.
		e := int(uint64(i) * 7919 % uint64(n))
		if n%7919 == 0 {
			e = i
		}
		ns := fmt.Sprintf("team-%03d", e%workloadNamespaces)
		name := fmt.Sprintf("ext-%05d", e)
		es := source.ExtensionService{
			Meta: source.Meta{Namespace: ns, Name: name, Generation: 1},
			Spec: source.ExtensionServiceSpec{Protocol: &h2c},
		}
		for t, weight := range []uint32{80, 20} {
			svcName := name + []string{"-primary", "-canary"}[t]
			es.Spec.Services = append(es.Spec.Services, source.ExtensionServiceTarget{Name: svcName, Port: workloadTargetPort, Weight: weight})
			objs.Services = append(objs.Services, source.Service{
				Meta: source.Meta{Namespace: ns, Name: svcName},
				Type: "ClusterIP",
				Ports: []source.ServicePort{{
					Name: portName, Port: workloadTargetPort, TargetPort: fmt.Sprint(workloadTargetPort), Protocol: tcp,
				}},
			})
			slice := source.EndpointSlice{
				Meta: source.Meta{Namespace: ns, Name: svcName + "-x7k2q", Labels: map[string]string{
					source.ServiceNameLabel:                  svcName,
					"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
				}},
				AddressType: "IPv4",
				Ports:       slicePorts,
				Endpoints:   make([]source.Endpoint, m),
			}
			for j := range slice.Endpoints {
				slice.Endpoints[j] = source.Endpoint{
					Addresses:   []string{workloadPodAddress(next).String()},
					Ready:       &ready,
					Serving:     &ready,
					Terminating: &notTerminating,
				}
				next++
			}
			objs.EndpointSlices = append(objs.EndpointSlices, slice)
		}
		objs.ExtensionServices = append(objs.ExtensionServices, es)
	}
	return objs
}

// workloadPodAddress scatters pod number i over 10.0.0.0/8. Multiplying by
// an odd constant is a bijection modulo 2^24, so distinct pods get distinct
// addresses (for the first 2^24 of them).
func workloadPodAddress(i uint32) netip.Addr {
	h := i * 0x9E3779B1 & (1<<24 - 1)
	return netip.AddrFrom4([4]byte{10, byte(h >> 16), byte(h >> 8), byte(h)})
}

// TestStandardWorkload checks the benchmark input means what it claims:
// every ExtensionService is valid and yields a CLA with two localities
// weighted 80/20 of m endpoints each, which passes ValidateAll and the
// extra checks, and the fast path matches the reference encoding.
func TestStandardWorkload(t *testing.T) {
	const n, m = 50, 30
	objs := standardWorkload(n, m)
	got := translate.Translate(objs, source.Settings{})
	if len(got.Statuses) != n || len(got.Clusters) != n || len(got.ClusterLoadAssignments) != n {
		t.Fatalf("got %d statuses, %d clusters, %d CLAs; want %d each",
			len(got.Statuses), len(got.Clusters), len(got.ClusterLoadAssignments), n)
	}
	for _, st := range got.Statuses {
		if st.Condition.Status != model.ConditionTrue || len(st.Condition.Warnings) != 0 {
			t.Errorf("%s/%s: condition %+v, want valid without warnings", st.Namespace, st.Name, st.Condition)
		}
	}
	for _, r := range got.ClusterLoadAssignments {
		cla := new(endpointv3.ClusterLoadAssignment)
		if err := proto.Unmarshal(r.Body, cla); err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		if err := cla.ValidateAll(); err != nil {
			t.Errorf("%s: ValidateAll: %v", r.Name, err)
		}
		if err := envoy.CheckClusterLoadAssignment(cla); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
		var shape []string
		for _, lle := range cla.GetEndpoints() {
			shape = append(shape, fmt.Sprintf("%s weight %d, %d endpoints",
				lle.GetLocality().GetSubZone(), lle.GetLoadBalancingWeight().GetValue(), len(lle.GetLbEndpoints())))
		}
		ns, name := splitClusterName(t, r.Name)
		want := []string{
			fmt.Sprintf("%s/%s-primary/%d weight 80, %d endpoints", ns, name, workloadTargetPort, m),
			fmt.Sprintf("%s/%s-canary/%d weight 20, %d endpoints", ns, name, workloadTargetPort, m),
		}
		if diff := cmp.Diff(want, shape); diff != "" {
			t.Errorf("%s localities (-want +got):\n%s", r.Name, diff)
		}
	}
	if diff := cmp.Diff(translate.TranslateReference(objs, source.Settings{}), got); diff != "" {
		t.Errorf("fast path differs from the reference encoding (-reference +fast):\n%s", diff)
	}
}

func splitClusterName(t *testing.T, cluster string) (namespace, name string) {
	t.Helper()
	rest, ok := strings.CutPrefix(cluster, "extension/")
	if ok {
		namespace, name, ok = strings.Cut(rest, "/")
	}
	if !ok {
		t.Fatalf("cluster name %q is not extension/<namespace>/<name>", cluster)
	}
	return namespace, name
}
