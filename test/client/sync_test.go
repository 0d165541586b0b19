package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

var ignoreVersion = cmpopts.IgnoreFields(client.View{}, "Version")

// TestSyncFollowsChanges: each Flush delivers exactly what its batch
// changed, typed and valid, and the session's view is at every step what
// Translate gives for the same objects.
func TestSyncFollowsChanges(t *testing.T) {
	sb := newSwitchboard(t)
	sb.serveReal()
	c := client.New(sb.conn())
	rec := newRecorder()
	s := c.Sync(t.Context(), nil, client.WithUpdateHandler(rec.handle), client.WithLogger(quietLogger()))
	defer s.Close()
	var all []client.Update
	d := desiredSet{}
	check := func(step string, want []updateShape) {
		t.Helper()
		got := rec.take()
		all = append(all, got...)
		diffShapes(t, step, want, got)
		v := s.View()
		diffViews(t, step+": view vs Translate", translated(t, c, nil, d.objects()), v)
		diffViews(t, step+": replayed updates vs view", v, replay(all))
		validate(t, v)
	}

	d.upsert(s, extension("authz", target("v1", 80), target("v2", 20)),
		service("v1"), service("v2"), slice("v1-a", "v1", "10.0.0.1", "10.0.0.2"), slice("v2-a", "v2", "10.0.1.1"),
		extension("broken"))
	flush(t, s)
	check("initial", []updateShape{{
		FullState:              true,
		Clusters:               []string{"extension/ns/authz"},
		ClusterLoadAssignments: []string{"extension/ns/authz"},
		Statuses:               []string{"ns/authz:True", "ns/broken:False"},
	}})

	// One more ready endpoint changes the status's availability too.
	d.upsert(s, slice("v2-a", "v2", "10.0.1.1", "10.0.1.2"))
	flush(t, s)
	check("endpoints scale up", []updateShape{{ClusterLoadAssignments: []string{"extension/ns/authz"}, Statuses: []string{"ns/authz:True"}}})

	// An equal object changes nothing, so nothing is sent or delivered.
	d.upsert(s, slice("v2-a", "v2", "10.0.1.1", "10.0.1.2"), service("v1"))
	flush(t, s)
	check("unchanged upsert", nil)

	d.upsert(s, extension("broken", target("v1", 1)))
	flush(t, s)
	check("broken fixed", []updateShape{{
		Clusters:               []string{"extension/ns/broken"},
		ClusterLoadAssignments: []string{"extension/ns/broken"},
		Statuses:               []string{"ns/broken:True"},
	}})

	// broken's target loses its ready endpoints: its status's availability
	// says so.
	d.delete(s, extension("authz"), slice("v1-a", "v1"))
	flush(t, s)
	check("delete", []updateShape{{
		ClusterLoadAssignments:        []string{"extension/ns/broken"},
		RemovedClusters:               []string{"extension/ns/authz"},
		RemovedClusterLoadAssignments: []string{"extension/ns/authz"},
		Statuses:                      []string{"ns/broken:True"},
		RemovedStatuses:               []string{"ns/authz"},
	}})
}

// TestSyncRejected: a malformed batch fails its Flush with a
// *BatchRejectedError naming the batch and the field, changes nothing, and
// is dropped from the desired set, so the session goes on and never sends
// it again.
func TestSyncRejected(t *testing.T) {
	sb := newSwitchboard(t)
	sb.serveReal()
	c := client.New(sb.conn())
	rec := newRecorder()
	s := c.Sync(t.Context(), nil, client.WithUpdateHandler(rec.handle), client.WithLogger(quietLogger()))
	defer s.Close()
	d := desiredSet{}
	d.upsert(s, extension("authz", target("v1", 1)), service("v1"), slice("v1-a", "v1", "10.0.0.1"))
	flush(t, s)
	rec.take()
	before := s.View()

	s.Upsert(slice("v1-a", "v1", "10.0.0.1", "10.0.0.2"), object(&tributaryv1.Service{Metadata: meta("")}))
	err := s.Flush(t.Context())
	var rejected *client.BatchRejectedError
	if !errors.As(err, &rejected) {
		t.Fatalf("Flush: got %v, want a *BatchRejectedError", err)
	}
	// Batches list objects by kind, then name: the Service comes first.
	wantErr := &client.BatchRejectedError{
		BatchID: 2,
		Message: "batch.upserts[0] (Service): metadata.name is required",
		Violations: []*tributaryv1.FieldViolation{{
			Field: "batch.upserts[0].service.metadata.name", Reason: "REQUIRED",
			Description: "batch.upserts[0] (Service): metadata.name is required",
		}},
	}
	if d := cmp.Diff(wantErr, rejected, protocmp.Transform()); d != "" {
		t.Errorf("rejection (-want +got):\n%s", d)
	}
	if want := "tributary: batch 2 rejected: batch.upserts[0] (Service): metadata.name is required"; err.Error() != want {
		t.Errorf("error text %q, want %q", err.Error(), want)
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("a rejected batch delivered %d updates", len(got))
	}
	diffViews(t, "view after rejection", before, s.View())

	// The refused changes are gone: nothing is left to send...
	if err := s.Flush(t.Context()); err != nil {
		t.Fatalf("Flush with nothing to send: %v", err)
	}
	// ...and the refused object is not remembered as sent: upserting it
	// again sends it again, and it is refused again.
	s.Upsert(object(&tributaryv1.Service{Metadata: meta("")}))
	if err := s.Flush(t.Context()); !errors.As(err, &rejected) || rejected.BatchID != 3 {
		t.Fatalf("Flush of the same malformed Service: got %v, want batch 3 rejected", err)
	}
	// The next valid batch is accepted (it would be refused again if the
	// nameless Service were still desired).
	d.upsert(s, slice("v1-a", "v1", "10.0.0.3"))
	flush(t, s)
	diffShapes(t, "after rejection", []updateShape{{ClusterLoadAssignments: []string{"extension/ns/authz"}}}, rec.take())
	diffViews(t, "view", translated(t, c, nil, d.objects()), s.View())
}

// TestSyncBadSettings: settings the server refuses end the session; Flush
// and Err report the server's InvalidArgument.
func TestSyncBadSettings(t *testing.T) {
	sb := newSwitchboard(t)
	sb.serveReal()
	s := client.New(sb.conn()).Sync(t.Context(), &tributaryv1.Settings{ConnectTimeout: "soon"}, client.WithLogger(quietLogger()))
	defer s.Close()
	s.Upsert(service("v1"))
	err := s.Flush(t.Context())
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Flush: got %v, want InvalidArgument", err)
	}
	<-s.Done()
	if !errors.Is(s.Err(), err) {
		t.Errorf("Err() = %v, want %v", s.Err(), err)
	}
	if err := s.Flush(t.Context()); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Flush after the end: got %v, want InvalidArgument", err)
	}
}

// TestSyncReconnect: when the server goes away mid-session and another
// takes its place, the session reopens the stream by itself, restores the
// acknowledged objects, and delivers the changes made during the outage;
// nothing it had already delivered is delivered again.
func TestSyncReconnect(t *testing.T) {
	sb := newSwitchboard(t)
	sb.serveReal()
	c := client.New(sb.conn())
	rec := newRecorder()
	s := c.Sync(t.Context(), nil, client.WithUpdateHandler(rec.handle), client.WithLogger(quietLogger()),
		client.WithBackoff(time.Millisecond, 20*time.Millisecond))
	defer s.Close()
	d := desiredSet{}
	d.upsert(s, extension("authz", target("v1", 80), target("v2", 20)), extension("other", target("v1", 1)),
		service("v1"), service("v2"), slice("v1-a", "v1", "10.0.0.1"), slice("v2-a", "v2", "10.0.1.1"))
	flush(t, s)
	all := rec.take()

	sb.stopServer()
	// Changes made while no server runs wait for the next one.
	d.upsert(s, slice("v2-a", "v2", "10.0.1.1", "10.0.1.2"))
	d.delete(s, extension("other"))
	flushed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		flushed <- s.Flush(ctx)
	}()
	sb.serveReal()
	if err := <-flushed; err != nil {
		t.Fatalf("Flush across the restart: %v", err)
	}

	got := rec.take()
	all = append(all, got...)
	// The new server's full state equals what the session had, so it
	// delivers nothing; only the changes made during the outage follow.
	diffShapes(t, "after the restart", []updateShape{{
		ClusterLoadAssignments:        []string{"extension/ns/authz"},
		RemovedClusters:               []string{"extension/ns/other"},
		RemovedClusterLoadAssignments: []string{"extension/ns/other"},
		Statuses:                      []string{"ns/authz:True"}, // v2's ready endpoints
		RemovedStatuses:               []string{"ns/other"},
	}}, got)
	v := s.View()
	diffViews(t, "view vs the new server's Translate", translated(t, c, nil, d.objects()), v)
	diffViews(t, "replayed updates vs view", v, replay(all))
	validate(t, v)

	// The session keeps working on the new server.
	d.upsert(s, extension("authz", target("v1", 50), target("v2", 50)))
	flush(t, s)
	diffShapes(t, "weights changed", []updateShape{{Clusters: nil, ClusterLoadAssignments: []string{"extension/ns/authz"}, Statuses: []string{"ns/authz:True"}}}, rec.take())
	diffViews(t, "view", translated(t, c, nil, d.objects()), s.View())
}
