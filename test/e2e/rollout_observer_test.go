package e2e

import (
	"fmt"
	"slices"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tributary-dev/tributary/internal/xdstest"
)

// observer follows one client during a rollout: each time the client's
// state changes it notes, per cluster, the newest change its
// ClusterLoadAssignment holds and when it came to hold it.
type observer struct {
	watcher      *xdstest.Watcher
	tags         map[string]int
	clusterIndex map[string]int
	final        []int

	// newest is, per cluster, the newest change held (-1 for none);
	// seen, the ClusterLoadAssignment it was read from.
	newest []int
	seen   []proto.Message
	// events records each advance of newest, in order.
	events []heldEvent
	err    error
}

type heldEvent struct {
	cluster, newest int
	at              time.Time
}

// run observes until the client holds every cluster's last change, or
// stop is closed.
func (o *observer) run(stop <-chan struct{}) {
	o.newest = slices.Repeat([]int{-1}, len(o.final))
	o.seen = make([]proto.Message, len(o.final))
	var lastAt time.Time
	// scan runs under the watcher's lock on its live state, each time the
	// state changes. It reads only ClusterLoadAssignments that changed:
	// the watcher replaces the message of a resource it receives. The
	// time it records is when the watcher reached the state, not when
	// scan ran; should the watcher change twice before scan runs, the
	// first change is credited at the time of the second.
	scan := func(s xdstest.State) bool {
		if s.At.Equal(lastAt) {
			return false
		}
		lastAt = s.At
		for name, m := range s.Resources[resourcev3.EndpointType] {
			c, ok := o.clusterIndex[name]
			if !ok || m == o.seen[c] {
				continue
			}
			o.seen[c] = m
			if k := newestChange(m, o.tags); k > o.newest[c] {
				o.newest[c] = k
				o.events = append(o.events, heldEvent{cluster: c, newest: k, at: s.At})
			}
		}
		return true
	}
	for !o.converged() {
		if _, err := o.watcher.Await(100*time.Millisecond, scan, false); err != nil {
			// Nothing changed in time, or the stream ended.
			if _, err := o.watcher.State(); err != nil {
				o.err = err
				return
			}
		}
		select {
		case <-stop:
			if !o.converged() {
				o.err = fmt.Errorf("client %s did not hold the last changes within %v: it holds changes %v, the last are %v",
					o.watcher.Mode(), rolloutConvergeGuard, o.newest, o.final)
			}
			return
		default:
		}
	}
}

func (o *observer) converged() bool {
	for c, k := range o.final {
		if o.newest[c] < k {
			return false
		}
	}
	return true
}

// heldAt returns, for each change, when the client first held it (zero if
// it never did).
func (o *observer) heldAt(changes []change) []time.Time {
	out := make([]time.Time, len(changes))
	byCluster := make([][]heldEvent, len(o.final))
	for _, e := range o.events {
		byCluster[e.cluster] = append(byCluster[e.cluster], e)
	}
	// Per cluster, the changes and the events both come in increasing
	// order of change: the first event at or past a change is when it was
	// first held.
	for k, c := range changes {
		events := byCluster[c.cluster]
		for len(events) > 0 && events[0].newest < k {
			events = events[1:]
		}
		byCluster[c.cluster] = events
		if len(events) > 0 {
			out[k] = events[0].at
		}
	}
	return out
}

// newestChange returns the newest change whose address m, a
// ClusterLoadAssignment decoded or as an Undecoded watcher's Any, holds,
// or -1.
func newestChange(m proto.Message, tags map[string]int) int {
	newest := -1
	if a, ok := m.(*anypb.Any); ok {
		encodedAddresses(a.GetValue(), endpointAddressPath, func(address []byte) {
			if k, ok := tags[string(address)]; ok { // no copy: the compiler looks the bytes up as they are
				newest = max(newest, k)
			}
		})
		return newest
	}
	cla, _ := m.(*endpointv3.ClusterLoadAssignment)
	for _, l := range cla.GetEndpoints() {
		for _, e := range l.GetLbEndpoints() {
			if k, ok := tags[e.GetEndpoint().GetAddress().GetSocketAddress().GetAddress()]; ok {
				newest = max(newest, k)
			}
		}
	}
	return newest
}

// endpointAddressPath is the field path from a ClusterLoadAssignment to
// its endpoints' addresses: endpoints (2), lb_endpoints (2), endpoint (1),
// address (1), socket_address (1), address (2).
var endpointAddressPath = []protowire.Number{2, 2, 1, 1, 1, 2}

// encodedAddresses calls f with every length-delimited field at path in
// the encoded message b, without decoding anything else: reading the
// addresses of an Undecoded watcher's ClusterLoadAssignment costs a
// fraction of decoding it.
func encodedAddresses(b []byte, path []protowire.Number, f func([]byte)) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return
		}
		b = b[n:]
		switch {
		case num != path[0]:
		case len(path) == 1:
			f(v)
		default:
			encodedAddresses(v, path[1:], f)
		}
	}
}
