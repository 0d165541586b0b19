package server

import (
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// straySlice is an EndpointSlice of no Service, as custom controllers make
// them: without the service-name label, or with it empty. Its address is
// one of smallRequest's, so that using it would show.
func straySlice(name string, labels map[string]string) *tributaryv1.KubernetesObject {
	m := meta("ns", name)
	m.Labels = labels
	return endpointSliceObject(m, []*tributaryv1.EndpointPort{tcpPort("grpc", 9001)},
		&tributaryv1.Endpoint{Addresses: []string{"10.0.0.2"}})
}

// TestTranslateIgnoresSlicesOfNoService: such slices are accepted, and the
// response is exactly the one without them, as Contour ignores them.
func TestTranslateIgnoresSlicesOfNoService(t *testing.T) {
	req := smallRequest()
	req.Objects = append(req.Objects,
		straySlice("stray", nil),
		straySlice("empty", map[string]string{"kubernetes.io/service-name": ""}),
		straySlice("other-label", map[string]string{"app": "svc"}))
	translation := tributaryv1.NewTranslationServiceClient(dialBufconn(t, NewGRPCServer(quietOptions())))
	got, err := translation.Translate(t.Context(), req)
	if err != nil {
		t.Fatalf("Translate: %v", err)
	}
	if diff := cmp.Diff(smallResponse(t), got, protocmp.Transform()); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

// TestSyncIgnoresSlicesOfNoService: in a session, a slice of no Service
// changes nothing, and a slice that loses its label leaves its Service.
func TestSyncIgnoresSlicesOfNoService(t *testing.T) {
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	settings := &tributaryv1.Settings{XdsClusterName: "xds"}
	s := newSyncSession(openSync(t.Context(), t, conn, settings), settings, map[string]bool{})
	s.step(batch(1, fixture(t)...), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
		return &tributaryv1.SyncDelta{BatchId: 1, FullState: true, Clusters: o.Clusters, ClusterLoadAssignments: o.ClusterLoadAssignments, Statuses: o.Statuses}
	})
	s.step(batch(2, straySlice("stray", nil)), func(*tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
		return &tributaryv1.SyncDelta{BatchId: 2}
	})
	unlabelled := slice("a", "10.0.0.9")
	unlabelled.GetEndpointSlice().GetMetadata().Labels = nil
	s.step(batch(3, unlabelled), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
		// Its Service has no ready endpoint left: the status says so.
		return &tributaryv1.SyncDelta{BatchId: 3, ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, plainCluster),
			Statuses: []*tributaryv1.ExtensionServiceStatus{statusOf(t, o, "plain")}}
	})
	cla := &endpointv3.ClusterLoadAssignment{}
	if err := s.view.clas[plainCluster].GetResource().UnmarshalTo(cla); err != nil || len(cla.GetEndpoints()) != 0 {
		t.Errorf("after its only slice lost the label, %s holds %v (%v)", plainCluster, cla.GetEndpoints(), err)
	}
	s.closeAndEnd()
}
