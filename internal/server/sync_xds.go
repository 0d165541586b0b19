package server

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/xds"
)

// maxPendingNacks bounds the NACKs waiting to be sent to one Sync client;
// beyond it the oldest are dropped (they are logged and counted anyway).
// A client reports each rejected response once, so only a flood of changes
// that every client rejects, read by a stalled Sync client, reaches it.
const maxPendingNacks = 256

// syncXDS is the xDS side of one Sync call: the Publication of its node
// group, if it named one, and what the Publisher reports, which comes from
// xDS streams' goroutines and reaches the loop through channels.
type syncXDS struct {
	publication *xds.Publication // nil when the session publishes nothing
	// nacks holds the NACKs waiting to be sent (see nackQueue); nil
	// without a publication.
	nacks nackQueue
	// replaced is closed when a newer session takes the node group over
	// (PublicationOptions.OnSuperseded, the one signal of it). superseded
	// is set once the loop has seen it.
	replaced   chan struct{}
	superseded bool
	// applied is set once the publication has been applied: the first
	// delta is applied even when empty, since that is what ends the
	// group's hold on a server that has just started (see
	// xds.NewPublisher), and a session whose objects translate to nothing
	// has restored its group as much as one with resources.
	applied bool
}

// errSuperseded ends a Sync call whose node group a newer session took over.
var errSuperseded = status.Error(codes.Aborted, "a newer Sync session publishes this xds_node_group now; this one ended")

// openPublication opens the Publication start asks for, if any: a session
// naming a node group on a server without xDS fails with
// FailedPrecondition, and publish_listeners without a group with
// InvalidArgument.
func (t translationService) openPublication(s *syncCall, start *tributaryv1.SyncStart) error {
	group := start.GetXdsNodeGroup()
	switch {
	case group == "" && start.GetPublishListeners():
		return status.Error(codes.InvalidArgument, "publish_listeners needs an xds_node_group to publish to")
	case group == "":
		return nil
	case t.xds == nil:
		return status.Error(codes.FailedPrecondition, "xds_node_group is set but this server does not serve xDS (tributary serve --xds-address)")
	}
	nacks, replaced := make(nackQueue, maxPendingNacks), make(chan struct{})
	pub, err := t.xds.Open(group, xds.PublicationOptions{
		Listeners: start.GetPublishListeners(),
		OnNack:    nacks.push,
		// Called once, by the Publisher's contract.
		OnSuperseded: func() { close(replaced) },
	})
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	s.xds.publication, s.xds.nacks, s.xds.replaced = pub, nacks, replaced
	return nil
}

// closePublication ends the call's Publication: its resources are
// withdrawn after the Publisher's grace period unless a new session
// publishes them again.
func (s *syncCall) closePublication() {
	if s.xds.publication != nil {
		s.xds.publication.Close()
	}
}

// publish publishes what d changed; the first d, the session's whole
// state, even when it is empty. A superseded Publication changes nothing:
// the loop learns of the takeover from replaced.
func (s *syncCall) publish(d *translate.Changes) {
	if s.xds.publication == nil || (d.Empty() && s.xds.applied) {
		return
	}
	s.xds.publication.Apply(*d)
	s.xds.applied = true
}

// supersededOrNil is the channel that tells of a takeover, or nil (never
// ready) without a publication or once the loop has seen it.
func (x *syncXDS) supersededOrNil() <-chan struct{} {
	if x.superseded {
		return nil
	}
	return x.replaced
}

// nackQueue holds the newest NACKs waiting to be sent, up to its capacity.
// The Publisher calls push from xDS streams' goroutines, which must not
// block, so a full queue drops its oldest NACK to make room.
type nackQueue chan *tributaryv1.XdsNack

// push queues n (xds.PublicationOptions.OnNack).
func (q nackQueue) push(n xds.Nack) {
	nack := &tributaryv1.XdsNack{
		NodeId:          n.NodeID,
		NodeGroup:       n.NodeGroup,
		TypeUrl:         n.TypeURL,
		ResourceNames:   n.ResourceNames,
		ErrorDetail:     n.ErrorDetail,
		RejectedVersion: n.RejectedVersion,
		AcceptedVersion: n.AcceptedVersion,
	}
	for {
		select {
		case q <- nack:
			return
		default:
		}
		select {
		case <-q: // full: drop the oldest
		default: // the loop took one meanwhile
		}
	}
}

func nackResponse(n *tributaryv1.XdsNack) *tributaryv1.SyncResponse {
	return &tributaryv1.SyncResponse{Message: &tributaryv1.SyncResponse_XdsNack{XdsNack: n}}
}
