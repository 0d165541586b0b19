package endpoints

import (
	"cmp"
	"fmt"
	"maps"
	mathrand "math/rand/v2"
	"slices"

	"github.com/tributary-dev/tributary/internal/source"
)

// chooser is where generated choices come from: fuzz input or a seeded
// random source (the shape of internal/session's generator, whose test
// files this package cannot import).
type chooser interface {
	// intn returns a number in [0, n).
	intn(n int) int
}

// byteChooser reads choices from fuzz input a byte at a time, then zeros.
type byteChooser struct {
	data []byte
	pos  int
}

func (b *byteChooser) intn(n int) int {
	if b.pos >= len(b.data) {
		return 0
	}
	b.pos++
	return int(b.data[b.pos-1]) % n
}

type randChooser struct{ r *mathrand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }

func pick[T any](c chooser, choices ...T) T { return choices[c.intn(len(choices))] }

// The small universe generated objects draw from, so that Services share
// slices, slices share addresses, and every rule has something to bite on.
var (
	genServices = []string{"s0", "s1", "s2", "s3"} // s3 rarely has a slice
	genSlices   = []string{"sl0", "sl1", "sl2", "sl3", "sl4"}
	// Mostly valid addresses of either family, with spellings of one
	// address (2001:db8::1), a 4-in-6 address, a zone, and strings netip
	// refuses or reads as the other family.
	genAddresses = []string{
		"10.0.0.1", "10.0.0.2", "10.0.0.10", "10.0.0.1", "192.168.0.1", "0.0.0.0", "255.255.255.255",
		"2001:db8::1", "2001:DB8::1", "2001:db8:0::1", "::1", "fd00::2", "::ffff:10.0.0.1", "fe80::1%eth0",
		"not-an-ip", "10.0.0.010", "1.2.3", "", "10.0.0.1.5", " 10.0.0.2",
	}
	genFamilies  = []string{"IPv4", "IPv4", "IPv4", "IPv6", "IPv6", "FQDN", ""}
	genPortNames = []*string{nil, ptr(""), ptr("http"), ptr("http"), ptr("grpc")}
	genPorts     = []*int32{nil, ptr[int32](8080), ptr[int32](8080), ptr[int32](8081), ptr[int32](9090), ptr[int32](0), ptr[int32](70000), ptr[int32](-1)}
	genProtocols = []*string{nil, ptr("TCP"), ptr("TCP"), ptr("TCP"), ptr("TCP"), ptr("UDP"), ptr("SCTP"), ptr("tcp")}
	genBools     = []*bool{nil, nil, ptr(true), ptr(false)}
)

// generateSlices draws up to five EndpointSlices with distinct names.
func generateSlices(c chooser) []source.EndpointSlice {
	var out []source.EndpointSlice
	for _, name := range genSlices[:c.intn(len(genSlices)+1)] {
		out = append(out, generateSlice(c, name))
	}
	return out
}

// generateSlice draws one slice: labelled for a Service (now and then for
// none, or in another namespace), with random ports and endpoints.
func generateSlice(c chooser, name string) source.EndpointSlice {
	es := source.EndpointSlice{
		Meta:        source.Meta{Namespace: testNamespace, Name: name},
		AddressType: pick(c, genFamilies...),
	}
	switch c.intn(10) {
	case 0: // belongs to no Service
	case 1:
		es.Namespace = "other"
		fallthrough
	default:
		es.Labels = map[string]string{source.ServiceNameLabel: pick(c, genServices[:3]...)}
	}
	for range c.intn(4) {
		es.Ports = append(es.Ports, source.EndpointPort{
			Name: pick(c, genPortNames...), Port: pick(c, genPorts...), Protocol: pick(c, genProtocols...),
		})
	}
	for range c.intn(8) {
		es.Endpoints = append(es.Endpoints, generateEndpoint(c))
	}
	return es
}

// generateEndpoint draws an endpoint with up to three addresses (or none)
// and each condition set, unset or false.
func generateEndpoint(c chooser) source.Endpoint {
	ep := source.Endpoint{Ready: pick(c, genBools...), Serving: pick(c, genBools...), Terminating: pick(c, genBools...)}
	for range pick(c, 1, 1, 1, 1, 2, 3, 0) {
		ep.Addresses = append(ep.Addresses, pick(c, genAddresses...))
	}
	return ep
}

// generateTargets draws one to four targets, repeats and all: a Service
// port named twice is the model's to merge, but nothing stops two Service
// ports of one name (or both unnamed) from reaching a Collector.
func generateTargets(c chooser) []Target {
	targets := make([]Target, 1+c.intn(4))
	for i := range targets {
		targets[i] = Target{
			Service:  pick(c, genServices...),
			PortName: pick(c, "", "http", "http", "grpc"),
			Port:     pick[int32](c, 80, 90),
		}
	}
	return targets
}

// editSlices changes the slices of x as a cluster does: endpoints appended
// (the common case the cache takes a shortcut for), changed, removed,
// readiness flipped; ports changed; slices added, relabelled, deleted.
func editSlices(c chooser, x *testIndex) {
	// Sorted, so that a fuzz input replays the same edits.
	names := slices.SortedFunc(maps.Keys(x.byName), func(a, b source.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	if len(names) == 0 || c.intn(8) == 0 {
		es := generateSlice(c, fmt.Sprintf("new-%d", c.intn(3)))
		x.put(&es)
		return
	}
	old := x.byName[pick(c, names...)]
	es := *old
	es.Endpoints = slices.Clone(old.Endpoints)
	switch c.intn(8) {
	case 0, 1:
		for range 1 + c.intn(3) {
			es.Endpoints = append(es.Endpoints, generateEndpoint(c))
		}
	case 2:
		if len(es.Endpoints) > 0 {
			es.Endpoints[c.intn(len(es.Endpoints))] = generateEndpoint(c)
		}
	case 3:
		if len(es.Endpoints) > 0 {
			at := c.intn(len(es.Endpoints))
			es.Endpoints = slices.Delete(es.Endpoints, at, at+1)
		}
	case 4:
		if len(es.Endpoints) > 0 {
			ep := &es.Endpoints[c.intn(len(es.Endpoints))]
			ep.Ready = ptr(ep.Ready != nil && !*ep.Ready)
		}
	case 5:
		es.Ports = generateSlice(c, es.Name).Ports
	case 6:
		es.Labels = map[string]string{source.ServiceNameLabel: pick(c, genServices...)}
	case 7:
		x.delete(old.NamespacedName())
		return
	}
	x.put(&es)
}
