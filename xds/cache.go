package xds

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/log"
	"google.golang.org/protobuf/proto"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// NodeGroup is the group an xDS client belongs to: its node.cluster, or its
// node.id when node.cluster is empty. A Sync session publishes to a group,
// so every replica of one proxy deployment (same node.cluster, distinct
// node.id) sees the same resources, while a lone client can be addressed by
// its id alone.
func NodeGroup(node *corev3.Node) string {
	if c := node.GetCluster(); c != "" {
		return c
	}
	return node.GetId()
}

// groupHash is NodeGroup as go-control-plane's NodeHash.
type groupHash struct{}

func (groupHash) ID(node *corev3.Node) string { return NodeGroup(node) }

var _ cachev3.NodeHash = groupHash{}

// groupCache is the cache behind the xDS server: one go-control-plane
// LinearCache per node group and resource type, created when first
// published to or watched.
//
// Why LinearCache rather than the SnapshotCache: a snapshot has one version
// per type, so a State-of-the-World client is sent every resource of a type
// whenever any one changes (every ClusterLoadAssignment after one endpoint
// moved), and a NACKed snapshot is sent again at once, in a loop (about
// 3,000 NACKs a second on loopback, see the xDS client notes). A
// LinearCache versions each resource and tracks what each stream was sent,
// so both State-of-the-World (for the types that are not full-state, i.e.
// EDS) and Delta send exactly the resources that changed, and a stream is
// never sent again what it was already sent, NACKed or not. It holds one
// type, hence one per type; it knows no nodes, hence one per group.
//
// groupCache adds one guard LinearCache lacks: a State-of-the-World client
// that NACKs the very first response of a type reports no accepted version,
// which a LinearCache takes as "send everything", so it would resend the
// rejected resources in a loop. See CreateWatch.
type groupCache struct {
	// versionPrefix is prepended to every State-of-the-World version, so
	// that a restarted server never hands out a version an old client
	// already has (LinearCache versions are counters from 1).
	versionPrefix string
	logger        log.Logger

	mu     sync.Mutex
	groups map[string]map[string]*cachev3.LinearCache // group → type URL →
}

func newGroupCache(versionPrefix string, logger log.Logger) *groupCache {
	return &groupCache{versionPrefix: versionPrefix, logger: logger, groups: map[string]map[string]*cachev3.LinearCache{}}
}

var _ cachev3.Cache = (*groupCache)(nil)

// linear returns the cache of group and typeURL, creating it. Only the
// types go-control-plane knows are served (an empty cache answers a
// request for a type nothing publishes), so a client cannot make the server
// keep caches for arbitrary type URLs.
func (g *groupCache) linear(group, typeURL string) (*cachev3.LinearCache, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.linearLocked(group, typeURL)
}

func (g *groupCache) linearLocked(group, typeURL string) (*cachev3.LinearCache, error) {
	if cachev3.GetResponseType(typeURL) == types.UnknownType {
		return nil, fmt.Errorf("type %q is not served", typeURL)
	}
	byType := g.groups[group]
	if byType == nil {
		byType = map[string]*cachev3.LinearCache{}
		g.groups[group] = byType
	}
	c := byType[typeURL]
	if c == nil {
		c = cachev3.NewLinearCache(typeURL, cachev3.WithVersionPrefix(g.versionPrefix), cachev3.WithLogger(g.logger))
		byType[typeURL] = c
	}
	return c, nil
}

// forget drops group's caches when they hold nothing and nobody watches
// them, so clients that came and went leave nothing behind.
func (g *groupCache) forget(group string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.groups[group] {
		if c.NumResources() > 0 || c.NumCacheWatches() > 0 {
			return
		}
	}
	delete(g.groups, group)
}

// CreateWatch routes a State-of-the-World watch to its group's cache.
//
// A NACK (error_detail set) that carries no version_info rejects the first
// response of its type on the stream. The subscription already records
// that response's resources as sent, so nothing is to be sent until they
// change; but LinearCache sends everything to a request without a version.
// The request is therefore handed on as if it named a version of this
// server (a copy: the server keeps the original), which makes the cache
// wait for a change instead of repeating the rejected response.
func (g *groupCache) CreateWatch(req *cachev3.Request, sub cachev3.Subscription, out chan cachev3.Response) (func(), error) {
	// The watch is created under g.mu, so forget cannot drop the cache
	// between its lookup and the watch.
	g.mu.Lock()
	defer g.mu.Unlock()
	c, err := g.linearLocked(NodeGroup(req.GetNode()), req.GetTypeUrl())
	if err != nil {
		return nil, err
	}
	if req.GetErrorDetail() != nil && req.GetVersionInfo() == "" {
		req = proto.Clone(req).(*cachev3.Request)
		req.VersionInfo = g.versionPrefix + "rejected"
	}
	return c.CreateWatch(req, sub, out)
}

// CreateDeltaWatch routes a Delta watch to its group's cache. Delta needs
// no guard: LinearCache answers a Delta request that carries a nonce (as
// every NACK does) only with changes.
func (g *groupCache) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, out chan cachev3.DeltaResponse) (func(), error) {
	g.mu.Lock() // as in CreateWatch
	defer g.mu.Unlock()
	c, err := g.linearLocked(NodeGroup(req.GetNode()), req.GetTypeUrl())
	if err != nil {
		return nil, err
	}
	return c.CreateDeltaWatch(req, sub, out)
}

// Fetch is not served: the REST (polling) xDS variant is not registered.
func (g *groupCache) Fetch(context.Context, *cachev3.Request) (cachev3.Response, error) {
	return nil, errors.New("fetch is not served")
}
