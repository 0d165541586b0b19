package loadtest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/tributary-dev/tributary/client"
)

// bystanders are well-behaved Sync sessions that churn their endpoints
// while a test does something bad to the server: the fault tests check
// that they go on being served throughout and end with exactly the output
// a fresh translation of their objects gives.
type bystanders struct {
	sessions []*client.SyncSession
	tenants  []*tenant
	stop     chan struct{}
	wg       sync.WaitGroup
	// errs holds each session's first Flush error; read after wg.Wait.
	errs    []error
	batches atomic.Int64
	stopped sync.Once
}

// bystanderExtensionServices is the size of each bystander's workload.
const bystanderExtensionServices = 20

// startBystanders opens n sessions over conn (tenant ids from firstTenant),
// loads their workloads and starts churning, one small batch after another,
// until finish.
func startBystanders(ctx context.Context, t *testing.T, conn *grpc.ClientConn, firstTenant, n int, opts ...client.SyncOption) *bystanders {
	t.Helper()
	b := &bystanders{stop: make(chan struct{}), errs: make([]error, n)}
	for i := range n {
		w := newTenant(firstTenant+i, bystanderExtensionServices, 2)
		s := client.New(conn).Sync(ctx, nil, opts...)
		t.Cleanup(s.Close)
		b.tenants, b.sessions = append(b.tenants, w), append(b.sessions, s)
	}
	forEach(t, b.sessions, func(i int, s *client.SyncSession) error {
		s.Upsert(b.tenants[i].all()...)
		return s.Flush(ctx)
	})
	for i, s := range b.sessions {
		b.wg.Go(func() {
			w := b.tenants[i]
			for {
				select {
				case <-b.stop:
					return
				default:
				}
				s.Upsert(w.churn())
				if err := s.Flush(ctx); err != nil {
					b.errs[i] = err
					return
				}
				b.batches.Add(1)
			}
		})
	}
	t.Cleanup(b.halt)
	return b
}

func (b *bystanders) halt() {
	b.stopped.Do(func() {
		close(b.stop)
		b.wg.Wait()
	})
}

// waitServed waits until the bystanders have had k more batches answered:
// proof they are being served right now.
func (b *bystanders) waitServed(t *testing.T, k int64) {
	t.Helper()
	want := b.batches.Load() + k
	deadline := time.Now().Add(hangGuard)
	for b.batches.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("the bystanders had %d batches answered in %v, want %d", b.batches.Load()-want+k, hangGuard, k)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// finish stops the churn and checks that no Flush failed and that every
// session's output is exactly the translation of its final objects, field
// by field.
func (b *bystanders) finish(ctx context.Context, t *testing.T) {
	t.Helper()
	b.halt()
	forEach(t, b.sessions, func(i int, s *client.SyncSession) error {
		if b.errs[i] != nil {
			return fmt.Errorf("a Flush failed: %w", b.errs[i])
		}
		if err := s.Flush(ctx); err != nil {
			return err
		}
		if diff := viewMismatch(s.View(), b.tenants[i].objs, true); diff != "" {
			return fmt.Errorf("the output is not the translation of its objects:\n%s", diff)
		}
		return nil
	})
}
