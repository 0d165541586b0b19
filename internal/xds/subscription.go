package xds

import (
	"slices"
	"strings"
	"time"
)

// What a watch subscribes to: the names it asks for, its wildcard, and the
// subscriber index of its group's type, which a change reads to find the
// watches it concerns.

// detachLocked removes w from its group's subscriber index.
func (c *cache) detachLocked(w *watch) {
	for name := range w.names {
		w.typ.unsubscribe(name, w)
	}
	c.names -= len(w.names)
	delete(w.typ.wildcards, w)
	delete(w.group.watches, w)
	c.forgetLocked(w.group)
}

func (t *typeState) unsubscribe(name string, w *watch) {
	subs := t.subscribers[name]
	delete(subs, w)
	if len(subs) == 0 {
		delete(t.subscribers, name)
	}
}

// subscribeLocked adds names to w's explicit subscription, marking those
// that have something to send.
func (c *cache) subscribeLocked(w *watch, names []string) {
	now := time.Now()
	for _, name := range names {
		if name == "*" {
			continue // the wildcard, handled by setWildcardLocked
		}
		if _, ok := w.names[name]; ok {
			continue
		}
		// Kept beyond the request, and a request's names may share
		// one allocation (see decodeDiscoveryRequest).
		name = strings.Clone(name)
		w.names[name] = struct{}{}
		c.names++
		subs := w.typ.subscribers[name]
		if subs == nil {
			subs = map[*watch]struct{}{}
			w.typ.subscribers[name] = subs
		}
		subs[w] = struct{}{}
		if w.delta && w.typ.resources[name] == nil {
			// A Delta client is told at once that what it asks for does
			// not exist, rather than left to time out; this also takes
			// back what a response sent before an unsubscription may
			// have handed it since.
			w.sent[name] = ""
		}
		w.markLocked(name, now)
	}
}

// unsubscribeLocked removes names from w's explicit subscription. A name
// unsubscribed is forgotten as sent, so subscribing to it again sends it
// again. With a wildcard subscription the client still holds the resource
// but may have dropped it: it is sent again.
func (c *cache) unsubscribeLocked(w *watch, names []string) {
	now := time.Now()
	for _, name := range names {
		if _, ok := w.names[name]; !ok {
			continue
		}
		delete(w.names, name)
		c.names--
		w.typ.unsubscribe(name, w)
		delete(w.changed, name)
		if !w.wildcard {
			w.forgetSent(name)
			continue
		}
		// Still subscribed by the wildcard, but a client drops what it
		// unsubscribes from: sent again, or its removal if it is gone
		// by the time the response is built.
		if _, held := w.sent[name]; held {
			w.sent[name] = ""
		}
		w.markLocked(name, now)
	}
}

// forgetSent forgets that the stream holds name, which it no longer
// subscribes to. A Delta response that the client had not seen when it
// asked (see watch.unseen) may still hand it the resource, after it has
// subscribed anew (Delta requests and responses cross; a State-of-the-World
// request that crosses a response is ignored). Such a name stays as held in
// an unknown version: subscribing to it again sends its current version, or
// its removal.
func (w *watch) forgetSent(name string) {
	if _, found := slices.BinarySearch(w.unseen, name); found {
		w.sent[strings.Clone(name)] = ""
		return
	}
	delete(w.sent, name)
}

// setWildcardLocked turns w's wildcard subscription on or off. On, every
// resource of the type that the stream does not hold is to be sent.
func (c *cache) setWildcardLocked(w *watch, on bool) {
	if on == w.wildcard {
		return
	}
	w.wildcard = on
	if !on {
		delete(w.typ.wildcards, w)
		for name := range w.sent {
			if !w.subscribes(name) {
				w.forgetSent(name)
			}
		}
		for name := range w.changed {
			if !w.subscribes(name) {
				delete(w.changed, name)
			}
		}
		return
	}
	w.typ.wildcards[w] = struct{}{}
	now := time.Now()
	for name := range w.typ.resources {
		w.markLocked(name, now)
	}
	for name, v := range w.sent {
		if v == "" { // held in an unknown version, maybe gone (see forgetSent)
			w.markLocked(name, now)
		}
	}
}

// subscribes reports whether w subscribes to name.
func (w *watch) subscribes(name string) bool {
	_, ok := w.names[name]
	return ok || w.wildcard
}
