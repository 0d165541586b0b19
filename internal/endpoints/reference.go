package endpoints

import (
	"maps"
	"net/netip"
	"slices"

	"github.com/tributary-dev/tributary/internal/source"
)

// Reference states the endpoint rules, plainly: Collector is held to give
// exactly its result, and it is too slow for anything else. It returns, for
// each target in order, the target's endpoints (nil when it has none), and
// the warnings in the order they arise.
//
// A target's endpoints come from the EndpointSlices labelled for its
// Service, in name order:
//   - Only IPv4 and IPv6 slices count: Envoy cannot take a host name in EDS.
//   - A slice port serves the target when its number and protocol are set
//     and the protocol is TCP, and, if the Service port has a name, the
//     slice port has the same name or none. Its number (the pod's port) is
//     the endpoints' port. A number outside 1..65535 is skipped, with one
//     warning per slice naming the first.
//   - An endpoint counts unless its ready condition is false (unset means
//     ready; serving and terminating are not looked at), and only by its
//     first address: Kubernetes calls an endpoint's addresses fungible.
//   - That address must be an IP of the slice's family, without a zone
//     (Envoy cannot parse one); other addresses are skipped, with one
//     warning per slice counting them and quoting the first.
//   - Each address:port is kept once, spelled as first met.
//   - Endpoints are sorted by address as IPs (IPv4 before IPv6), then port.
//   - An address:port an earlier target holds is left out, since clients
//     reject an address in two localities; one warning per target counts
//     them and names the lowest.
func Reference(index Slices, namespace string, targets []Target) ([][]Endpoint, []Warning) {
	var warnings []Warning
	runs := make([][]Endpoint, len(targets))
	taken := map[netip.AddrPort]bool{} // by earlier targets
	for i, t := range targets {
		spelling := map[netip.AddrPort]string{}
		for _, es := range index.EndpointSlices(source.NamespacedName{Namespace: namespace, Name: t.Service}) {
			if es.AddressType != "IPv4" && es.AddressType != "IPv6" {
				continue
			}
			ports, outOfRange := servingPorts(es, t.PortName)
			if len(outOfRange) > 0 {
				warnings = append(warnings, invalidPortWarning(es, outOfRange[0]))
			}
			if len(ports) == 0 {
				continue
			}
			var invalid []string
			for j := range es.Endpoints.Len() {
				if es.Endpoints.NotReady(j) {
					continue
				}
				text := es.Endpoints.Address(j).String()
				addr, err := netip.ParseAddr(text)
				if err != nil || addr.Zone() != "" || addr.Is4() != (es.AddressType == "IPv4") {
					invalid = append(invalid, text)
					continue
				}
				for _, port := range ports {
					ap := netip.AddrPortFrom(addr, port)
					if _, seen := spelling[ap]; !seen {
						spelling[ap] = text
					}
				}
			}
			if len(invalid) > 0 {
				warnings = append(warnings, invalidAddressWarning(es, len(invalid), source.MakeAddress(invalid[0])))
			}
		}

		var dropped []netip.AddrPort
		for ap := range spelling {
			if taken[ap] {
				dropped = append(dropped, ap)
				delete(spelling, ap)
			}
		}
		if len(dropped) > 0 {
			lowest := slices.MinFunc(dropped, netip.AddrPort.Compare)
			warnings = append(warnings, duplicateEndpointsWarning(namespace, &t, len(dropped), lowest))
		}
		for _, ap := range slices.SortedFunc(maps.Keys(spelling), netip.AddrPort.Compare) {
			runs[i] = append(runs[i], Endpoint{Address: source.MakeAddress(spelling[ap]), Port: uint32(ap.Port())})
			taken[ap] = true
		}
	}
	return runs, warnings
}

// servingPorts returns the numbers of es's ports that serve a Service port
// named portName, and those of its serving ports outside 1..65535.
func servingPorts(es *source.EndpointSlice, portName string) (ports []uint16, outOfRange []int32) {
	for _, p := range es.Ports {
		if p.Port == nil || p.Protocol == nil || *p.Protocol != "TCP" {
			continue
		}
		if portName != "" && p.Name != nil && *p.Name != "" && *p.Name != portName {
			continue
		}
		if *p.Port < 1 || *p.Port > 65535 {
			outOfRange = append(outOfRange, *p.Port)
			continue
		}
		ports = append(ports, uint16(*p.Port))
	}
	return ports, outOfRange
}
