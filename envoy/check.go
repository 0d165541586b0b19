package envoy

import endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

// CheckClusterLoadAssignment enforces what ValidateAll does not but real
// clients require (see docs/translation.md): every present
// load_balancing_weight is at least 1; when any locality exists, at least
// one carries a weight; localities are unique per priority; no address:port
// appears twice.
func CheckClusterLoadAssignment(cla *endpointv3.ClusterLoadAssignment) error {
	panic("TODO")
}
