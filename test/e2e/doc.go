// Package e2e holds the end-to-end proof that Tributary's output steers real
// traffic: its tests build the tributary binary and the helper programs
// under e2e/cmd, run them as separate processes on loopback, feed
// ExtensionServices through a Sync session, and count where gRPC-Go's own
// xDS client sends ext_authz Check calls. The package has no code of its
// own outside tests; the helpers are separate programs so that
// google.golang.org/grpc/xds stays out of the tributary binary.
package e2e
