package server

import (
	"fmt"
	"runtime/debug"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
)

// sender sends a Sync call's answers on a goroutine of its own, one at a
// time: Send blocks while the client does not read, and the loop must go
// on applying meanwhile. The loop hands it a response only when it is idle,
// so at most one encoded response exists besides what the Outbox merges.
type sender struct {
	// queue and done have room for one response and its result: the loop
	// never waits to hand over, nor the goroutine to report.
	queue chan *tributaryv1.SyncResponse
	done  chan sendResult
	// inFlight is the response being sent, nil while the sender is idle,
	// and covered the number of batches it answers (0 but for deltas).
	// The loop's alone.
	inFlight *tributaryv1.SyncResponse
	covered  uint64
}

// sendResult is what one Send gave. panicked holds a panic of Send, with
// its stack, for the loop to raise again: the recovery interceptor then
// logs it and answers Internal, instead of the process crashing.
type sendResult struct {
	err      error
	panicked any
}

func startSender(stream grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse]) *sender {
	s := &sender{queue: make(chan *tributaryv1.SyncResponse, 1), done: make(chan sendResult, 1)}
	go func() {
		for resp := range s.queue {
			s.done <- sendOne(stream, resp)
		}
	}()
	return s
}

func sendOne(stream grpc.BidiStreamingServer[tributaryv1.SyncRequest, tributaryv1.SyncResponse], resp *tributaryv1.SyncResponse) (r sendResult) {
	defer func() {
		if p := recover(); p != nil {
			r.panicked = fmt.Sprintf("%v\n\nin the goroutine sending Sync answers:\n%s", p, debug.Stack())
		}
	}()
	r.err = stream.Send(resp)
	return r
}

func (s *sender) busy() bool { return s.inFlight != nil }

// send hands resp, which answers covered batches, to the idle sender.
func (s *sender) send(resp *tributaryv1.SyncResponse, covered uint64) {
	s.inFlight, s.covered = resp, covered
	s.queue <- resp
}

// doneOrNil is the channel reporting the Send in flight, or nil (never
// ready) while the sender is idle.
func (s *sender) doneOrNil() <-chan sendResult {
	if s.inFlight == nil {
		return nil
	}
	return s.done
}

// finish records that the Send in flight is done, and returns what it sent.
func (s *sender) finish() (resp *tributaryv1.SyncResponse, covered uint64) {
	resp, covered = s.inFlight, s.covered
	s.inFlight, s.covered = nil, 0
	return resp, covered
}

// stop ends the goroutine once the Send in flight, if any, is done: gRPC
// allows no Send after the handler returns. A call that is over ends its
// Send at once; otherwise the wait is the one the answer owed needs.
func (s *sender) stop() {
	close(s.queue)
	if s.inFlight != nil {
		<-s.done
		s.finish()
	}
}

// nextAnswer returns the answer to hand the idle sender, with the number of
// batches it covers, or nil when none waits. Deltas come first: while a
// rejection waits nothing more is applied, so the deltas taken then cover
// exactly the batches before it.
func (s *syncCall) nextAnswer() (*tributaryv1.SyncResponse, uint64, error) {
	if batchID, d, ok := s.outbox.Take(); ok {
		covered := s.unanswered
		s.unanswered = 0
		if s.fullState || !d.Empty() {
			s.version = session.NextVersion()
		}
		resp := encodeDelta(batchID, s.fullState, s.version, &d)
		s.fullState = false
		if s.includeJSON {
			if err := addJSON(resp.GetDelta().GetClusters(), resp.GetDelta().GetClusterLoadAssignments()); err != nil {
				return nil, 0, err
			}
		}
		return resp, covered, nil
	}
	if r := s.rejection; r != nil {
		s.rejection = nil
		return &tributaryv1.SyncResponse{Message: &tributaryv1.SyncResponse_Rejected{Rejected: r}}, 0, nil
	}
	return nil, 0, nil
}

// sent records the end of the Send in flight: err is the call's end if
// it failed.
func (s *syncCall) sent(r sendResult) error {
	resp, covered := s.out.finish()
	if r.panicked != nil {
		panic(r.panicked)
	}
	if r.err != nil {
		return r.err
	}
	if resp.GetDelta() != nil {
		s.observer.answered(resp, covered)
	}
	return nil
}

// encodeDelta converts Changes into a response. Resources are encoded like
// Translate's, their bytes used as they are.
func encodeDelta(batchID uint64, fullState bool, version string, d *translate.Changes) *tributaryv1.SyncResponse {
	return &tributaryv1.SyncResponse{Message: &tributaryv1.SyncResponse_Delta{Delta: &tributaryv1.SyncDelta{
		BatchId:                       batchID,
		FullState:                     fullState,
		Version:                       version,
		Clusters:                      encodeResources(d.Clusters, resourcev3.ClusterType),
		ClusterLoadAssignments:        encodeResources(d.ClusterLoadAssignments, resourcev3.EndpointType),
		RemovedClusters:               d.RemovedClusters,
		RemovedClusterLoadAssignments: d.RemovedClusterLoadAssignments,
		Statuses:                      encodeStatuses(d.Statuses),
		RemovedStatuses:               encodeRemovedStatuses(d.RemovedStatuses),
	}}}
}

func encodeRemovedStatuses(names []source.NamespacedName) []*tributaryv1.ObjectReference {
	if len(names) == 0 {
		return nil
	}
	out := make([]*tributaryv1.ObjectReference, len(names))
	for i, n := range names {
		out[i] = &tributaryv1.ObjectReference{Kind: tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE, Namespace: n.Namespace, Name: n.Name}
	}
	return out
}
