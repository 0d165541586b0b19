// Package xds serves Sync sessions' Envoy resources to xDS clients (Envoy,
// and gRPC's proxyless xDS client) with go-control-plane's server and a
// cache of its own.
//
// A Publisher holds resources per node group (see NodeGroup); a
// Publication is one session's right to change one group, fed with the
// changes the session computes. Every resource version is validated once
// before it is published, only changed resources are sent, each to the
// streams subscribed to it, a NACKed response is never sent again to the
// client that rejected it, and a group's resources outlive the session that
// published them by a grace period.
//
// The cache (cache.go, watch.go, subscription.go, response.go,
// callbacks.go) replaces go-control-plane's LinearCache so that a change
// costs in proportion to the streams subscribed to what changed, not to the
// names each stream holds; Limits bound what clients can make it hold, and
// Streams and Groups report its state.
//
// The package knows nothing of the Sync protocol: package server maps
// sessions and their deltas onto Publications.
package xds
