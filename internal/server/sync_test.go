package server

import (
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

var dialers = map[string]func(*testing.T, *grpc.Server) *grpc.ClientConn{"bufconn": dialBufconn, "tcp": dialTCP}

// TestSync follows one session through every kind of change, over both
// transports: each delta holds exactly what changed, and the deltas always
// add up to what Translate gives for the objects sent so far.
func TestSync(t *testing.T) {
	for name, dial := range dialers {
		t.Run(name, func(t *testing.T) {
			conn := dial(t, NewGRPCServer(quietOptions()))
			settings := &tributaryv1.Settings{XdsClusterName: "xds"}
			s := newSyncSession(openSync(t.Context(), t, conn, settings), settings, map[string]bool{})

			// The first batch: the complete state.
			s.step(batch(1, fixture(t)...), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return &tributaryv1.SyncDelta{BatchId: 1, FullState: true, Clusters: o.Clusters, ClusterLoadAssignments: o.ClusterLoadAssignments, Statuses: o.Statuses}
			})
			if got := len(s.view.clas); got != 2 {
				t.Fatalf("the fixture gives %d ClusterLoadAssignments, want 2", got)
			}

			// Endpoints scale up, then down: that CLA changes, and so does
			// the status, whose availability counts the ready endpoints.
			plainCLAAndStatus := func(id uint64) func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
					return &tributaryv1.SyncDelta{BatchId: id, ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, plainCluster),
						Statuses: []*tributaryv1.ExtensionServiceStatus{statusOf(t, o, "plain")}}
				}
			}
			for _, tc := range []struct {
				id        uint64
				addresses []string
			}{{2, []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}}, {3, []string{"10.0.0.4"}}} {
				d := s.step(batch(tc.id, slice("a", tc.addresses...)), plainCLAAndStatus(tc.id))
				want := []*tributaryv1.TargetAvailability{{Service: "a", Port: 9000, ReadyEndpoints: uint32(len(tc.addresses)), Weight: 1}}
				if diff := gocmp.Diff(want, d.GetStatuses()[0].GetAvailability(), protocmp.Transform()); diff != "" {
					t.Errorf("batch %d: availability (-want +got):\n%s", tc.id, diff)
				}
			}

			// An endpoint moves, and as many are ready: only the CLA
			// changes, no status.
			s.step(batch(4, slice("a", "10.0.0.5")), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return &tributaryv1.SyncDelta{BatchId: 4, ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, plainCluster)}
			})

			// A batch that changes no output: an empty acknowledgement.
			s.step(batch(5, slice("a", "10.0.0.5"), service("a")), func(*tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return &tributaryv1.SyncDelta{BatchId: 5}
			})

			// The CA Secret rotates: only the Cluster that embeds it changes.
			s.step(batch(6, caSecret(t, 2)), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return &tributaryv1.SyncDelta{BatchId: 6, Clusters: pick(t, o.Clusters, tlsCluster)}
			})

			// An ExtensionService becomes invalid: its resources go, and its
			// status says why.
			d := s.step(batch(7, plainES("bogus")), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return &tributaryv1.SyncDelta{
					BatchId: 7, RemovedClusters: []string{plainCluster}, RemovedClusterLoadAssignments: []string{plainCluster},
					Statuses: []*tributaryv1.ExtensionServiceStatus{statusOf(t, o, "plain")},
				}
			})
			if c := d.GetStatuses()[0].GetConditions()[0]; c.GetStatus() != "False" || c.GetErrors()[0].GetReason() != "UnsupportedProtocol" {
				t.Errorf("status of the invalid ExtensionService: %v", c)
			}
			// And valid again.
			s.step(batch(8, plainES("h2c")), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return &tributaryv1.SyncDelta{
					BatchId: 8, Clusters: pick(t, o.Clusters, plainCluster), ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, plainCluster),
					Statuses: []*tributaryv1.ExtensionServiceStatus{statusOf(t, o, "plain")},
				}
			})

			// Deleting a target Service invalidates the ExtensionService.
			del := &tributaryv1.SyncBatch{Id: 9, Deletes: []*tributaryv1.ObjectReference{deleteOf(tributaryv1.ObjectKind_OBJECT_KIND_SERVICE, "ns", "b")}}
			d = s.step(del, func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return &tributaryv1.SyncDelta{
					BatchId: 9, RemovedClusters: []string{tlsCluster}, RemovedClusterLoadAssignments: []string{tlsCluster},
					Statuses: []*tributaryv1.ExtensionServiceStatus{statusOf(t, o, "tls")},
				}
			})
			if c := d.GetStatuses()[0].GetConditions()[0]; c.GetStatus() != "False" || c.GetErrors()[0].GetReason() != "ServiceUnresolvedReference" {
				t.Errorf("status after deleting the Service: %v", c)
			}

			// Deleting an ExtensionService removes its status; deleting an
			// object the session does not hold changes nothing more.
			del = &tributaryv1.SyncBatch{Id: 10, Deletes: []*tributaryv1.ObjectReference{
				deleteOf(tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE, "ns", "broken"),
				deleteOf(tributaryv1.ObjectKind_OBJECT_KIND_SECRET, "ns", "never-sent"),
			}}
			s.step(del, func(*tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
				return &tributaryv1.SyncDelta{BatchId: 10, RemovedStatuses: []*tributaryv1.ObjectReference{
					deleteOf(tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE, "ns", "broken"),
				}}
			})

			s.closeAndEnd()
		})
	}
}

// TestSyncResourceBytes: a delta carries each resource's exact bytes, as
// Translate does (protocmp compares Any by content, so check the bytes).
func TestSyncResourceBytes(t *testing.T) {
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	c := openSync(t.Context(), t, conn, nil)
	c.send(batch(1, smallRequest().Objects...))
	got := c.delta()
	want := smallResponse(t)
	if diff := gocmp.Diff(&tributaryv1.SyncDelta{BatchId: 1, FullState: true, Clusters: want.Clusters, ClusterLoadAssignments: want.ClusterLoadAssignments, Statuses: want.Statuses},
		got, protocmp.Transform(), ignoreVersion); diff != "" {
		t.Errorf("delta (-want +got):\n%s", diff)
	}
	for i, r := range got.GetClusterLoadAssignments() {
		if !proto.Equal(r.GetResource(), want.GetClusterLoadAssignments()[i].GetResource()) {
			t.Errorf("clusterLoadAssignments[%d]: bytes differ from the deterministic encoding", i)
		}
	}
	for i, r := range got.GetClusters() {
		if !proto.Equal(r.GetResource(), want.GetClusters()[i].GetResource()) {
			t.Errorf("clusters[%d]: bytes differ from the deterministic encoding", i)
		}
	}
	c.closeAndEnd()
}

// TestSyncReconnect: a new stream starts from nothing, whatever an earlier
// stream held; the client sends its objects again and gets the complete
// state; no version repeats across the streams.
func TestSyncReconnect(t *testing.T) {
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	versions := map[string]bool{}

	first := newSyncSession(openSync(t.Context(), t, conn, nil), nil, versions)
	first.step(batch(1, fixture(t)...), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
		return &tributaryv1.SyncDelta{BatchId: 1, FullState: true, Clusters: o.Clusters, ClusterLoadAssignments: o.ClusterLoadAssignments, Statuses: o.Statuses}
	})
	first.step(batch(2, slice("a", "10.0.0.9")), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
		// One ready endpoint instead of two: the status changes too.
		return &tributaryv1.SyncDelta{BatchId: 2, ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, plainCluster),
			Statuses: []*tributaryv1.ExtensionServiceStatus{statusOf(t, o, "plain")}}
	})
	first.closeAndEnd()

	// The second stream's first batch holds one ExtensionService and its
	// objects: its complete state is theirs alone, nothing of the first
	// stream's.
	second := newSyncSession(openSync(t.Context(), t, conn, nil), nil, versions)
	second.step(batch(1, plainES("h2c"), service("a"), slice("a", "10.0.0.1", "10.0.0.2")), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
		return &tributaryv1.SyncDelta{
			BatchId: 1, FullState: true, Clusters: pick(t, o.Clusters, plainCluster), ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, plainCluster),
			Statuses: []*tributaryv1.ExtensionServiceStatus{statusOf(t, o, "plain")},
		}
	})
	// The client resends the rest.
	second.step(batch(2, fixture(t)...), func(o *tributaryv1.TranslateResponse) *tributaryv1.SyncDelta {
		return &tributaryv1.SyncDelta{
			BatchId: 2, Clusters: pick(t, o.Clusters, tlsCluster), ClusterLoadAssignments: pick(t, o.ClusterLoadAssignments, tlsCluster),
			Statuses: []*tributaryv1.ExtensionServiceStatus{statusOf(t, o, "broken"), statusOf(t, o, "tls")},
		}
	})
	second.closeAndEnd()
	if len(versions) != 4 {
		t.Errorf("got versions %v, want 4 distinct ones", versions)
	}
}

// TestSyncEmptyBatch: an empty first batch gives an empty complete state,
// with a version.
func TestSyncEmptyBatch(t *testing.T) {
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	c := openSync(t.Context(), t, conn, nil)
	c.send(&tributaryv1.SyncBatch{Id: 3})
	got := c.delta()
	if diff := gocmp.Diff(&tributaryv1.SyncDelta{BatchId: 3, FullState: true}, got, protocmp.Transform(), ignoreVersion); diff != "" {
		t.Errorf("delta (-want +got):\n%s", diff)
	}
	if got.GetVersion() == "" {
		t.Error("the complete state has no version")
	}
	c.closeAndEnd()
}

// TestSyncIncludeJSON: a session started with include_json gets every
// resource's JSON beside its unchanged bytes, and the JSON reads back into
// the same resource.
func TestSyncIncludeJSON(t *testing.T) {
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	c := openStream(t.Context(), t, conn)
	c.sendRequest(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{IncludeJson: true}}})
	c.send(batch(1, smallRequest().Objects...))
	got := c.delta()
	want := smallResponse(t)
	if diff := gocmp.Diff(&tributaryv1.SyncDelta{BatchId: 1, FullState: true, Clusters: want.Clusters, ClusterLoadAssignments: want.ClusterLoadAssignments, Statuses: want.Statuses},
		got, protocmp.Transform(), ignoreVersion, protocmp.IgnoreFields(&tributaryv1.Resource{}, "json")); diff != "" {
		t.Errorf("delta (-want +got):\n%s", diff)
	}
	resources := slices.Concat(got.GetClusters(), got.GetClusterLoadAssignments())
	if len(resources) != 2 {
		t.Fatalf("got %d resources, want 2", len(resources))
	}
	for _, r := range resources {
		fromBytes, err := r.GetResource().UnmarshalNew()
		if err != nil {
			t.Fatal(err)
		}
		fromJSON := fromBytes.ProtoReflect().New().Interface()
		if err := protojson.Unmarshal([]byte(r.GetJson()), fromJSON); err != nil {
			t.Fatalf("%s: json %q: %v", r.GetName(), r.GetJson(), err)
		}
		if diff := gocmp.Diff(fromBytes, fromJSON, protocmp.Transform()); diff != "" {
			t.Errorf("%s: JSON reads back as (-bytes +json):\n%s", r.GetName(), diff)
		}
	}
	c.closeAndEnd()
}
