package session_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
)

func resource(name, version string) translate.Resource {
	return translate.Resource{Name: name, Version: version, Body: []byte(name + "@" + version)}
}

func status(namespace, name, message string) model.Status {
	return model.Status{Namespace: namespace, Name: name, Condition: model.Condition{Type: model.ConditionValid, Message: message}}
}

// takeNow takes from o, failing if nothing is pending.
func takeNow(t *testing.T, o *session.Outbox) (uint64, translate.Changes) {
	t.Helper()
	id, d, ok := o.Take()
	if !ok {
		t.Fatal("Take found nothing pending")
	}
	return id, d
}

// checkTake asserts what the next Take returns.
func checkTake(t *testing.T, o *session.Outbox, wantID uint64, want translate.Changes) {
	t.Helper()
	id, d := takeNow(t, o)
	if id != wantID {
		t.Errorf("Take acknowledged batch %d, want %d", id, wantID)
	}
	if diff := cmp.Diff(want, d, deltaOptions); diff != "" {
		t.Errorf("Take (-want +got):\n%s", diff)
	}
}

// A reader that falls behind gets the latest state of each resource once,
// however many batches changed it.
func TestOutboxSlowReader(t *testing.T) {
	o := session.NewOutbox()
	for i := range uint64(100) {
		o.Put(i+1, translate.Changes{
			Clusters:               []translate.Resource{resource("c", fmt.Sprint(i%7))},
			ClusterLoadAssignments: []translate.Resource{resource("x", fmt.Sprint(i)), resource(fmt.Sprintf("y%d", i%3), "1")},
			Statuses:               []model.Status{status("ns", "x", fmt.Sprint(i))},
		})
	}
	checkTake(t, o, 100, translate.Changes{
		Clusters:               []translate.Resource{resource("c", "1")}, // 99 % 7
		ClusterLoadAssignments: []translate.Resource{resource("x", "99"), resource("y0", "1"), resource("y1", "1"), resource("y2", "1")},
		Statuses:               []model.Status{status("ns", "x", "99")},
	})
	// Nothing is pending any more.
	if o.Pending() {
		t.Error("Pending after Take")
	}
	if _, _, ok := o.Take(); ok {
		t.Error("second Take found something pending")
	}
}

// Added then removed before the reader saw it, or changed and changed back
// to what the reader has: nothing to send, but the batch is acknowledged.
func TestOutboxCancelsOut(t *testing.T) {
	o := session.NewOutbox()
	o.Put(1, translate.Changes{
		Clusters: []translate.Resource{resource("kept", "1")},
		Statuses: []model.Status{status("ns", "kept", "valid")},
	})
	checkTake(t, o, 1, translate.Changes{
		Clusters: []translate.Resource{resource("kept", "1")},
		Statuses: []model.Status{status("ns", "kept", "valid")},
	})

	o.Put(2, translate.Changes{
		Clusters:               []translate.Resource{resource("new", "1"), resource("kept", "2")},
		ClusterLoadAssignments: []translate.Resource{resource("new", "1")},
		Statuses:               []model.Status{status("ns", "new", "valid"), status("ns", "kept", "changed")},
	})
	o.Put(3, translate.Changes{
		Clusters:                      []translate.Resource{resource("kept", "1")},
		RemovedClusters:               []string{"new"},
		RemovedClusterLoadAssignments: []string{"new"},
		Statuses:                      []model.Status{status("ns", "kept", "valid")},
		RemovedStatuses:               []source.NamespacedName{nn("ns", "new")},
	})
	checkTake(t, o, 3, translate.Changes{})
	if pending, taken := session.OutboxPending(o); pending != 0 || taken != 2 {
		t.Errorf("Outbox holds %d pending and %d taken entries, want 0 and 2", pending, taken)
	}

	// A removal of something the reader has is sent; so is its return.
	o.Put(4, translate.Changes{RemovedClusters: []string{"kept"}, RemovedStatuses: []source.NamespacedName{nn("ns", "kept")}})
	checkTake(t, o, 4, translate.Changes{RemovedClusters: []string{"kept"}, RemovedStatuses: []source.NamespacedName{nn("ns", "kept")}})
	o.Put(5, translate.Changes{Clusters: []translate.Resource{resource("kept", "1")}, Statuses: []model.Status{status("ns", "kept", "valid")}})
	checkTake(t, o, 5, translate.Changes{Clusters: []translate.Resource{resource("kept", "1")}, Statuses: []model.Status{status("ns", "kept", "valid")}})

	// Removed then added back as it was: nothing to send.
	o.Put(6, translate.Changes{RemovedClusters: []string{"kept"}})
	o.Put(7, translate.Changes{Clusters: []translate.Resource{resource("kept", "1")}})
	checkTake(t, o, 7, translate.Changes{})
}

// A batch that changed nothing is still acknowledged.
func TestOutboxAcknowledgesEmptyBatch(t *testing.T) {
	o := session.NewOutbox()
	o.Put(42, translate.Changes{})
	checkTake(t, o, 42, translate.Changes{})
}

// The Outbox's memory follows the names in the output, not the number of
// batches: a writer adding and removing ever new names while the reader
// does not read leaves nothing behind.
func TestOutboxMemoryIsPerName(t *testing.T) {
	o := session.NewOutbox()
	for i := range 10000 {
		name := fmt.Sprintf("extension/ns/e%d", i)
		o.Put(uint64(2*i+1), translate.Changes{
			Clusters:               []translate.Resource{resource(name, "1"), resource("steady", fmt.Sprint(i))},
			ClusterLoadAssignments: []translate.Resource{resource(name, "1")},
			Statuses:               []model.Status{status("ns", fmt.Sprint(i), "valid")},
		})
		o.Put(uint64(2*i+2), translate.Changes{
			RemovedClusters:               []string{name},
			RemovedClusterLoadAssignments: []string{name},
			RemovedStatuses:               []source.NamespacedName{nn("ns", fmt.Sprint(i))},
		})
	}
	if pending, taken := session.OutboxPending(o); pending != 1 || taken != 0 {
		t.Errorf("Outbox holds %d pending and %d taken entries, want 1 and 0", pending, taken)
	}
	checkTake(t, o, 20000, translate.Changes{Clusters: []translate.Resource{resource("steady", "9999")}})
}

// A writer and a reader taking turns irregularly, as a Sync call's loop
// puts a batch's delta and takes whatever waits whenever its sender is
// idle: every Take acknowledges a later batch than the one before, and the
// reader ends up with the writer's final state.
func TestOutboxInterleavedWriterAndReader(t *testing.T) {
	const batches = 2000
	o := session.NewOutbox()
	var put uint64
	// write puts the next n batches.
	write := func(n int) {
		for range n {
			if put == batches {
				return
			}
			i := put
			name := fmt.Sprintf("r%d", i%10)
			d := translate.Changes{Clusters: []translate.Resource{resource(name, fmt.Sprint(i))}}
			if i%10 == 9 {
				d.RemovedClusters = []string{fmt.Sprintf("r%d", (i/10)%9)}
			}
			o.Put(i+1, d)
			put++
		}
	}
	have := map[string]string{}
	var last uint64
	for turn := 0; last < batches; turn++ {
		write(1 + turn*7%13) // from one batch per Take to a dozen
		id, d, ok := o.Take()
		if !ok {
			t.Fatal("Take found nothing pending after a Put")
		}
		if id <= last {
			t.Fatalf("Take acknowledged batch %d after %d", id, last)
		}
		last = id
		for _, r := range d.Clusters {
			if have[r.Name] == r.Version {
				t.Errorf("batch %d: %s sent again at version %s", id, r.Name, r.Version)
			}
			have[r.Name] = r.Version
		}
		for _, name := range d.RemovedClusters {
			if _, ok := have[name]; !ok {
				t.Errorf("batch %d: %s removed but never sent", id, name)
			}
			delete(have, name)
		}
	}
	// Replay the writer alone.
	want := map[string]string{}
	for i := range uint64(batches) {
		want[fmt.Sprintf("r%d", i%10)] = fmt.Sprint(i)
		if i%10 == 9 {
			delete(want, fmt.Sprintf("r%d", (i/10)%9))
		}
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("reader's final state (-writer +reader):\n%s", diff)
	}
}
