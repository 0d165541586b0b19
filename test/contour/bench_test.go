package contour_test

import (
	"fmt"
	"testing"

	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	discovery_v1 "k8s.io/api/discovery/v1"
)

// BenchmarkAdapterEndpointSliceUpdate is the Adapter's own cost for one
// informer event in a cluster of 10,000 Services (one EndpointSlice of 10
// pods each), of which 100 ExtensionServices name 200: an update of a
// slice no ExtensionService names, which stays in the Adapter, and of one
// that is named, which goes into the session's next batch. Nothing is
// flushed, so the server is not measured.
func BenchmarkAdapterEndpointSliceUpdate(b *testing.B) {
	a := flushedByHand(b, dial(b), nil)
	const services, extensions = 10000, 100
	slices := make([]*discovery_v1.EndpointSlice, services)
	for i := range services {
		name := fmt.Sprintf("svc-%d", i)
		a.OnAdd(authzService(name), true)
		var pods []pod
		for j := range 10 {
			pods = append(pods, pod{ip: fmt.Sprintf("10.%d.%d.%d", i/256, i%256, j+1), ready: true})
		}
		slices[i] = endpointSlice(name+"-1", name, pods...)
		a.OnAdd(slices[i], true)
	}
	for i := range extensions {
		es := extAuthz(1, 1, 1)
		es.Name = fmt.Sprintf("ext-%d", i)
		es.Spec.Services = []contour_v1alpha1.ExtensionServiceTarget{
			{Name: fmt.Sprintf("svc-%d", 2*i), Port: 9001, Weight: 80},
			{Name: fmt.Sprintf("svc-%d", 2*i+1), Port: 9001, Weight: 20},
		}
		a.OnAdd(es, true)
	}
	for _, bc := range []struct {
		name  string
		index int
	}{{"unnamed", services - 1}, {"named", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			// Two versions of the slice to alternate between, so that every
			// update changes it.
			old := slices[bc.index]
			moved := old.DeepCopy()
			moved.Endpoints[0].Addresses = []string{"10.255.255.1"}
			versions := [2]*discovery_v1.EndpointSlice{moved, old}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				a.OnUpdate(versions[(i+1)%2], versions[i%2])
				i++
			}
		})
	}
}
