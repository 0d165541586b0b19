package xds

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// sotwResponse wakes a State-of-the-World watch. Its content is built when
// the server asks for it, right before sending it: the latest version of
// every resource that changed until then.
type sotwResponse struct {
	c    *cache
	w    *watch
	req  *cachev3.Request
	once sync.Once
	resp *discoveryv3.DiscoveryResponse
}

var _ cachev3.Response = (*sotwResponse)(nil)

func (r *sotwResponse) GetDiscoveryResponse() (*discoveryv3.DiscoveryResponse, error) {
	r.once.Do(func() { r.resp = r.c.buildSotW(r.w) })
	return r.resp, nil
}

func (r *sotwResponse) GetRequest() *discoveryv3.DiscoveryRequest { return r.req }

func (r *sotwResponse) GetVersion() (string, error) { return r.GetResponseVersion(), nil }

func (r *sotwResponse) GetResponseVersion() string {
	resp, _ := r.GetDiscoveryResponse()
	return resp.GetVersionInfo()
}

// GetReturnedResources hands the server a map of its own (see
// watch.serverView).
func (r *sotwResponse) GetReturnedResources() map[string]string { return r.w.serverView }

func (r *sotwResponse) GetContext() context.Context { return context.Background() }

// deltaResponse wakes a Delta watch, built as sotwResponse is.
type deltaResponse struct {
	c    *cache
	w    *watch
	req  *cachev3.DeltaRequest
	once sync.Once
	resp *discoveryv3.DeltaDiscoveryResponse
}

var _ cachev3.DeltaResponse = (*deltaResponse)(nil)

func (r *deltaResponse) GetDeltaDiscoveryResponse() (*discoveryv3.DeltaDiscoveryResponse, error) {
	r.once.Do(func() { r.resp = r.c.buildDelta(r.w) })
	return r.resp, nil
}

func (r *deltaResponse) GetDeltaRequest() *discoveryv3.DeltaDiscoveryRequest { return r.req }

func (r *deltaResponse) GetSystemVersion() (string, error) { return r.GetResponseVersion(), nil }

func (r *deltaResponse) GetResponseVersion() string {
	resp, _ := r.GetDeltaDiscoveryResponse()
	return resp.GetSystemVersionInfo()
}

func (r *deltaResponse) GetNextVersionMap() map[string]string { return r.w.serverView }

func (r *deltaResponse) GetReturnedResources() map[string]string { return r.w.serverView }

func (r *deltaResponse) GetContext() context.Context { return context.Background() }

// buildSotW builds w's next State-of-the-World response: for a full-state
// type every resource the stream subscribes to, else those that changed
// and that the stream does not hold in their current version.
func (c *cache) buildSotW(w *watch) *discoveryv3.DiscoveryResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*resource
	t := w.typ
	if fullState(t.typeURL) {
		clear(w.sent)
		if w.wildcard {
			for _, r := range t.resources {
				out = append(out, r)
			}
		} else {
			for name := range w.names {
				if r := t.resources[name]; r != nil {
					out = append(out, r)
				}
			}
		}
	} else {
		for name := range w.changed {
			r := t.resources[name]
			if r == nil || !w.subscribes(name) {
				continue
			}
			if v, held := w.sent[name]; !held || v != r.version() {
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, func(a, b *resource) int { return strings.Compare(a.name(), b.name()) })
	resp := &discoveryv3.DiscoveryResponse{
		VersionInfo: c.versionPrefix + strconv.FormatUint(c.version, 10),
		TypeUrl:     t.typeURL,
		Resources:   make([]*anypb.Any, len(out)),
	}
	names := make([]string, len(out))
	for i, r := range out {
		w.sent[r.name()] = r.version()
		resp.Resources[i] = r.any
		names[i] = r.name()
	}
	c.builtLocked(w, names)
	return resp
}

// buildDelta builds w's next Delta response: the resources that changed
// and that the stream does not hold in their current version, and the
// removal of those it holds that are gone.
func (c *cache) buildDelta(w *watch) *discoveryv3.DeltaDiscoveryResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := w.typ
	var out []*resource
	var removed []string
	for name := range w.changed {
		r := t.resources[name]
		v, held := w.sent[name]
		switch {
		case !w.subscribes(name):
			// Unsubscribed since: nothing to send (markLocked never
			// keeps such a name; this makes sure).
		case r != nil && (!held || v != r.version()):
			out = append(out, r)
			w.sent[name] = r.version()
		case r == nil && held:
			removed = append(removed, name)
			delete(w.sent, name)
		}
	}
	slices.SortFunc(out, func(a, b *resource) int { return strings.Compare(a.name(), b.name()) })
	slices.Sort(removed)
	resp := &discoveryv3.DeltaDiscoveryResponse{
		SystemVersionInfo: c.versionPrefix + strconv.FormatUint(c.version, 10),
		TypeUrl:           t.typeURL,
		Resources:         make([]*discoveryv3.Resource, len(out)),
		RemovedResources:  removed,
	}
	names := make([]string, len(out))
	for i, r := range out {
		resp.Resources[i] = &discoveryv3.Resource{Name: r.name(), Version: r.version(), Resource: r.any}
		names[i] = r.name()
	}
	c.builtLocked(w, names)
	return resp
}

// smallChanges is the most names a response may carry for its watch to
// keep its map of changes (see builtLocked).
const smallChanges = 64

// builtLocked clears what w had to send once a response holds it, and
// keeps the response's names for a NACK of it.
func (c *cache) builtLocked(w *watch, names []string) {
	if len(w.changed) > 0 && c.metrics != nil {
		c.metrics.ChangeToSend(w.typ.typeURL, time.Since(w.changedSince))
	}
	if len(w.changed) > smallChanges {
		// A map keeps the room it once needed, and iterating it costs
		// that room: the names of a first response must not make every
		// later one cost as much.
		w.changed = map[string]struct{}{}
	} else {
		clear(w.changed)
	}
	w.building = names
}
