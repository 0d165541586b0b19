package server

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/xds"
)

// maxPendingNacks bounds the NACKs waiting to be sent to one Sync client;
// beyond it the oldest are dropped (they are logged and counted anyway).
// A client reports each rejected response once, so only a flood of changes
// that every client rejects, read by a stalled Sync client, reaches it.
const maxPendingNacks = 256

// syncXDS is the xDS side of one Sync call: the Publication of its node
// group, if it named one, and what the Publisher reported for the sender
// to send. The fields below publication are guarded by syncCall.mu.
type syncXDS struct {
	publication *xds.Publication // nil when the session publishes nothing
	nacks       []*tributaryv1.XdsNack
	superseded  bool
}

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
	pub, err := t.xds.Open(group, xds.PublicationOptions{
		Listeners:    start.GetPublishListeners(),
		OnNack:       s.addNack,
		OnSuperseded: s.supersede,
	})
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	s.xds.publication = pub
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

// publish publishes what d changed. It runs on the receiver, before the
// delta goes to the outbox, so xDS clients get a change no later than the
// Sync client. A superseded Publication changes nothing: the sender ends
// the call.
func (s *syncCall) publish(d *session.Delta) {
	if s.xds.publication == nil || d.Empty() {
		return
	}
	_ = s.xds.publication.Apply(xds.Changes{
		Clusters:                      d.Clusters,
		ClusterLoadAssignments:        d.ClusterLoadAssignments,
		RemovedClusters:               d.RemovedClusters,
		RemovedClusterLoadAssignments: d.RemovedClusterLoadAssignments,
	})
}

// addNack queues n for the sender (xds.PublicationOptions.OnNack).
func (s *syncCall) addNack(n xds.Nack) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.xds.nacks) == maxPendingNacks {
		s.xds.nacks = s.xds.nacks[1:]
	}
	s.xds.nacks = append(s.xds.nacks, &tributaryv1.XdsNack{
		NodeId:          n.NodeID,
		NodeGroup:       n.NodeGroup,
		TypeUrl:         n.TypeURL,
		ResourceNames:   n.ResourceNames,
		ErrorDetail:     n.ErrorDetail,
		RejectedVersion: n.RejectedVersion,
		AcceptedVersion: n.AcceptedVersion,
	})
	s.changed.Broadcast()
}

// supersede tells the sender to end the call
// (xds.PublicationOptions.OnSuperseded).
func (s *syncCall) supersede() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.xds.superseded = true
	s.changed.Broadcast()
}

// xdsPendingLocked reports whether the sender has xDS news to act on.
func (s *syncCall) xdsPendingLocked() bool {
	return s.xds.superseded || len(s.xds.nacks) > 0
}

// sendXDSLocked sends the pending NACKs, or ends the call with Aborted if a
// newer session took the node group over. It is called with s.mu held and
// returns with it released; done says the call is over, with err.
func (s *syncCall) sendXDSLocked() (done bool, err error) {
	if s.xds.superseded {
		s.mu.Unlock()
		return true, status.Error(codes.Aborted, "a newer Sync session publishes this xds_node_group now; this one ended")
	}
	nacks := s.xds.nacks
	s.xds.nacks = nil
	s.mu.Unlock()
	for _, n := range nacks {
		if err := s.stream.Send(&tributaryv1.SyncResponse{Message: &tributaryv1.SyncResponse_XdsNack{XdsNack: n}}); err != nil {
			return true, err
		}
	}
	return false, nil
}
