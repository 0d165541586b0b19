// Package xds serves Sync sessions' Envoy resources to xDS clients (Envoy,
// and gRPC's proxyless xDS client) with go-control-plane's server.
//
// A Publisher holds resources per node group (see NodeGroup); a
// Publication is one session's right to change one group, fed with the
// changes the session computes. Every resource is validated before it is
// published, only changed resources are sent, a NACKed response is never
// sent again to the client that rejected it, and a group's resources
// outlive the session that published them by a grace period.
//
// The package knows nothing of the Sync protocol: package server maps
// sessions and their deltas onto Publications.
package xds
