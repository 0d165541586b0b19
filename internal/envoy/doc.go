// Package envoy builds Envoy v3 resources from validated model.ExtensionClusters.
//
// Each concern has its own file: cluster.go (the Cluster), tls.go (its
// upstream TLS transport socket), endpoints.go (the ClusterLoadAssignment as
// a proto) and wire.go (the same ClusterLoadAssignment encoded straight to
// protobuf wire bytes, the fast path translation uses). The proto builders
// are the reference: tests prove the fast path yields exactly their bytes.
//
// The builders never fail: model guarantees every value they place is one
// Envoy accepts, and tests run ValidateAll and Check on every output.
package envoy
