package envoy

import (
	"fmt"
	"net/netip"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
)

// CheckClusterLoadAssignment enforces what ValidateAll does not but real
// clients require (see the spec's "Every emitted resource is valid" and the
// xDS client notes): every present load_balancing_weight is at least 1;
// when any locality exists, at least one carries a weight (gRPC fails every
// request otherwise); localities are unique per priority and no address:port
// appears twice (gRPC NACKs either). It returns the first problem found.
//
// Addresses that parse as IPs are compared as IPs, so two spellings of one
// IPv6 address count as the same endpoint.
func CheckClusterLoadAssignment(cla *endpointv3.ClusterLoadAssignment) error {
	type localityKey struct {
		priority              uint32
		region, zone, subZone string
	}
	localities := make(map[localityKey]int, len(cla.GetEndpoints()))
	sockets := make(map[string]int)
	weighted := false
	for i, lle := range cla.GetEndpoints() {
		if w := lle.GetLoadBalancingWeight(); w != nil {
			if w.GetValue() < 1 {
				return fmt.Errorf("endpoints[%d] (%s): load_balancing_weight is present but 0; a present weight must be at least 1",
					i, describeLocality(lle.GetLocality()))
			}
			weighted = true
		}

		loc := lle.GetLocality()
		key := localityKey{lle.GetPriority(), loc.GetRegion(), loc.GetZone(), loc.GetSubZone()}
		if first, ok := localities[key]; ok {
			return fmt.Errorf("endpoints[%d] and endpoints[%d] have the same locality (%s) at priority %d",
				first, i, describeLocality(loc), key.priority)
		}
		localities[key] = i

		for j, lbe := range lle.GetLbEndpoints() {
			socket := lbe.GetEndpoint().GetAddress().GetSocketAddress()
			if socket == nil {
				continue
			}
			id := socketID(socket)
			if first, ok := sockets[id]; ok {
				return fmt.Errorf("address %s appears twice: in endpoints[%d] and in endpoints[%d].lb_endpoints[%d]",
					id, first, i, j)
			}
			sockets[id] = i
		}
	}
	if len(localities) > 0 && !weighted {
		return fmt.Errorf("none of the %d localities has a load_balancing_weight, so clients would send no traffic", len(localities))
	}
	return nil
}

// socketID names an address:port the way a client compares them.
func socketID(s *corev3.SocketAddress) string {
	port := s.GetNamedPort()
	if _, ok := s.GetPortSpecifier().(*corev3.SocketAddress_PortValue); ok {
		port = strconv.FormatUint(uint64(s.GetPortValue()), 10)
	}
	host := s.GetAddress()
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.String()
	}
	if s.GetProtocol() != corev3.SocketAddress_TCP {
		port += "/" + s.GetProtocol().String()
	}
	return "[" + host + "]:" + port
}

// describeLocality renders a locality for an error message.
func describeLocality(l *corev3.Locality) string {
	return fmt.Sprintf("region %q, zone %q, sub_zone %q", l.GetRegion(), l.GetZone(), l.GetSubZone())
}
