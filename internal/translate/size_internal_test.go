package translate

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
)

// TestIPEndpointFixedBytes: an IP endpoint is its address and a fixed
// part, exactly, at every address length an IP slice counts and every
// port width (a port out of range is a ten-byte varint); and the identity
// first breaks where a length needs a second byte, beyond any IP address.
func TestIPEndpointFixedBytes(t *testing.T) {
	for port := 1; port <= protowire.SizeVarint(1<<63); port++ {
		for n := 0; n <= maxIPv6Bytes; n++ {
			if got, want := int64(n)+ipEndpointFixedBytes(port), lbEndpoint(n, port, 0); got != want {
				t.Errorf("address of %d bytes, port of %d: %d bytes, lbEndpoint says %d", n, port, got, want)
			}
		}
		n := 0
		for int64(n)+ipEndpointFixedBytes(port) == lbEndpoint(n, port, 0) {
			n++
		}
		// The LbEndpoint message, the one inside the outermost length,
		// reaches 128 bytes.
		if inner := lbEndpoint(n, port, 0) - 3; inner != 128 {
			t.Errorf("port of %d: the identity breaks at an address of %d bytes, where the LbEndpoint is %d bytes; want it to break at 128", port, n, inner)
		}
	}
}

// TestClusterNameBytes holds clusterNameBytes to model.ClusterName.
func TestClusterNameBytes(t *testing.T) {
	for _, c := range []struct{ namespace, name string }{
		{"", ""}, {"ns", "ext"}, {"team-007", "ext-00042"}, {strings.Repeat("n", 63), strings.Repeat("e", 253)}, {"é", "名前"},
	} {
		if got, want := clusterNameBytes(c.namespace, c.name), len(model.ClusterName(c.namespace, c.name)); got != want {
			t.Errorf("%q, %q: %d bytes, model.ClusterName is %d", c.namespace, c.name, got, want)
		}
	}
}

// TestCountTargetIsPerEndpointSum holds the per-slice counts of a target
// to their definitions, sums over every slice port and every endpoint of
// that endpoint's lbEndpoint: precisely, over the endpoints whose first
// address the slice's type allows, at its length; for Quick, over every
// endpoint, at the longest address of the type. Addresses are of every
// length from 0 to past the longest IPv6 one, ports of every width and
// none, slices of every type and of several ports.
func TestCountTargetIsPerEndpointSum(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 0x636f756e74))
		objs := &source.Objects{}
		for i := range 1 + r.IntN(4) {
			slice := source.EndpointSlice{
				Meta:        source.Meta{Namespace: "ns", Name: fmt.Sprintf("s-%d", i)},
				Service:     "s",
				AddressType: []string{"IPv4", "IPv6", "FQDN", ""}[r.IntN(4)],
			}
			for range r.IntN(4) {
				p := source.EndpointPort{}
				if r.IntN(5) > 0 {
					p.Port = new([]int32{1, 127, 128, 16383, 16384, 65535, -1}[r.IntN(7)])
				}
				slice.Ports = append(slice.Ports, p)
			}
			var eps source.EndpointsBuilder
			for range r.IntN(300) {
				// Dotted quads, held as four bytes, and spellings of any
				// length around the longest an address may have.
				address := strings.Repeat("1", r.IntN(maxIPv6Bytes+8))
				if r.IntN(2) == 0 {
					address = fmt.Sprintf("%d.%d.%d.%d", r.IntN(256), r.IntN(256), r.IntN(256), r.IntN(256))
				}
				eps.Add(address, r.IntN(2) == 0)
			}
			slice.Endpoints = eps.Endpoints()
			objs.EndpointSlices = append(objs.EndpointSlices, slice)
		}
		idx := model.NewIndex(objs)
		slices := idx.EndpointSlices(source.NamespacedName{Namespace: "ns", Name: "s"})
		var want targetEstimate
		for i := range objs.EndpointSlices {
			slice := &objs.EndpointSlices[i]
			longest, ok := maxAddressBytes(slice.AddressType)
			if !ok {
				continue
			}
			for _, p := range slice.Ports {
				if p.Port == nil {
					continue
				}
				port := protowire.SizeVarint(uint64(*p.Port))
				for _, ep := range slice.Endpoints.Unpack() {
					want.quick.endpoints++
					want.quick.bytes += lbEndpoint(longest, port, 0)
					if len(ep.Address) <= longest {
						want.precise.endpoints++
						want.precise.bytes += lbEndpoint(len(ep.Address), port, 0)
					}
				}
			}
		}
		if got := countTarget(slices, true); got != want {
			t.Errorf("seed %d: counted %+v, the sums over endpoints are %+v", seed, got, want)
		}
		if got := countTarget(slices, false); got.quick != want.quick || got.precise != (endpointCount{}) {
			t.Errorf("seed %d: Quick alone counted %+v, the sum over endpoints is %+v", seed, got, want.quick)
		}
	}
}
