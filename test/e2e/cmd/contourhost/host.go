package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/go-logr/logr"
	contour_v1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	core_v1 "k8s.io/api/core/v1"
	discovery_v1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/tributary-dev/tributary/client"
	"github.com/tributary-dev/tributary/client/contour"
)

// eventHandler is what the host needs of an adapter, single-server or
// replicated: an informer event handler it can flush and close.
type eventHandler interface {
	toolscache.ResourceEventHandler
	Flush(ctx context.Context) error
	Close()
}

// watchedKinds are the kinds translation reads, one informer each, as
// Contour has them.
func watchedKinds() []crclient.Object {
	return []crclient.Object{
		&contour_v1alpha1.ExtensionService{},
		&contour_v1.TLSCertificateDelegation{},
		&core_v1.Service{},
		&discovery_v1.EndpointSlice{},
		&core_v1.Secret{},
	}
}

// run wires the adapter to the API server and serves until ctx ends.
func run(ctx context.Context, o options, out *lines, logger *slog.Logger) error {
	// client-go's reflectors log through klog and controller-runtime
	// through its own logr sink; route both to the host's slog logger, so
	// that a relist after the API server went away shows up in the same
	// log, and controller-runtime does not complain that no logger is set.
	klog.SetSlogLogger(logger)
	crlog.SetLogger(logr.FromSlogHandler(logger.Handler()))

	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	// QPS and Burst pace every request of this client, the status writes
	// above all; 0 keeps client-go's defaults (5/s, burst 10), which is
	// what Contour runs with unless told otherwise.
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst

	// Contour's scheme: client-go's types plus Contour's own API groups.
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, contour_v1alpha1.AddToScheme, contour_v1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	cacheOptions := cache.Options{Scheme: scheme}
	if len(o.namespaces) > 0 {
		cacheOptions.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.namespaces {
			cacheOptions.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	informers, err := cache.New(cfg, cacheOptions)
	if err != nil {
		return err
	}
	// The live client writes statuses and re-reads after a conflict; it
	// reads nothing through the cache, so a conflict's re-read sees the
	// API server's current object.
	live, err := crclient.New(cfg, crclient.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	statuses := newStatusWriter(informers, live, out, logger)

	adapter, closeConn, err := newEventHandler(ctx, o, clusterSink{out: out}, statuses, logger)
	if err != nil {
		return err
	}
	defer closeConn()
	defer adapter.Close()

	// One adapter handles every kind. Deletes the informers missed (a
	// watch that broke across a delete, noticed at the relist) arrive as
	// client-go's cache.DeletedFinalStateUnknown: controller-runtime's
	// informers are client-go SharedIndexInformers, and the adapter's
	// default tombstone unwrapper recognises that type by its shape, so no
	// WithTombstoneUnwrapper is needed here.
	var handlersSynced []toolscache.InformerSynced
	for _, obj := range watchedKinds() {
		informer, err := informers.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("informer for %T: %w", obj, err)
		}
		registration, err := informer.AddEventHandler(adapter)
		if err != nil {
			return fmt.Errorf("event handler for %T: %w", obj, err)
		}
		handlersSynced = append(handlersSynced, registration.HasSynced)
	}

	cacheDone := make(chan error, 1)
	go func() { cacheDone <- informers.Start(ctx) }()
	go statuses.run(ctx)

	// Flush only once every informer has listed everything AND the
	// adapter has been handed every listed object: the first batch must
	// be the complete initial state, or Tributary would translate a
	// partial view (an ExtensionService whose Service has not been listed
	// yet is "unresolved") and its statuses would be written to the API
	// server. The cache's WaitForCacheSync says the informers' stores are
	// full; each handler registration's HasSynced says its events were
	// delivered too, since client-go hands events to handlers through a
	// buffer of their own, after the store.
	if !informers.WaitForCacheSync(ctx) || !toolscache.WaitForCacheSync(ctx.Done(), handlersSynced...) {
		// A signal stops the wait too; main exits 0 for that.
		select {
		case err := <-cacheDone:
			return fmt.Errorf("informer cache stopped before it synced: %w", err)
		default:
			return errors.New("informer caches did not sync")
		}
	}
	if err := adapter.Flush(ctx); err != nil {
		return fmt.Errorf("first flush: %w", err)
	}
	// From here the adapter flushes by itself after every change.
	out.print(struct {
		Synced bool `json:"synced"`
	}{true})
	logger.Info("contourhost: synced")

	select {
	case <-ctx.Done():
		return nil
	case err := <-cacheDone:
		return fmt.Errorf("informer cache stopped: %w", err)
	}
}

// newEventHandler makes the adapter: a session to one Tributary server, or
// one per replica. Clusters go to clusters and statuses to statuses; no
// endpoint sink, since with direct EDS the endpoints reach the data plane
// from Tributary over xDS and never pass through Contour. The returned
// function closes what the adapter does not own (the single server's
// connection); call it after Close.
func newEventHandler(ctx context.Context, o options, clusters contour.ClusterSink, statuses contour.StatusWriter, logger *slog.Logger) (eventHandler, func(), error) {
	settings := &contour.Config{XDSClusterName: o.xdsClusterName}
	sessionOptions := []client.SyncOption{client.WithLogger(logger), client.WithBackoff(o.backoffMin, o.backoffMax)}
	if o.nodeGroup != "" {
		sessionOptions = append(sessionOptions, client.WithXDSPublishing(o.nodeGroup, o.publishListeners))
	}
	adapterOptions := []contour.AdapterOption{
		contour.WithClusterSink(clusters),
		contour.WithStatusWriter(statuses),
		contour.WithDebounce(o.debounce),
		contour.WithLogger(logger),
		contour.WithSyncOptions(sessionOptions...),
	}

	// The connection's own reconnect backoff follows the session's: a
	// session that retries at once over a connection still waiting out
	// gRPC's default backoff (1 s, growing) would restore a restarted
	// server no sooner.
	var dialOptions []grpc.DialOption
	if o.backoffMax > 0 {
		b := backoff.DefaultConfig
		b.BaseDelay, b.MaxDelay = cmp.Or(o.backoffMin, min(b.BaseDelay, o.backoffMax)), o.backoffMax
		dialOptions = append(dialOptions, grpc.WithConnectParams(grpc.ConnectParams{Backoff: b, MinConnectTimeout: o.backoffMax}))
	}

	if len(o.replicas) == 0 {
		conn, err := grpc.NewClient(o.tributary, append(dialOptions, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			return nil, nil, err
		}
		closeConn := func() { _ = conn.Close() }
		return contour.NewAdapter(ctx, client.New(conn), settings, adapterOptions...), closeConn, nil
	}

	// A fixed list stands in for contour.LookupReplicas: in a cluster the
	// replicas are found through their headless Service's DNS records.
	replicas := o.replicas
	resolve := func(context.Context) ([]string, error) { return replicas, nil }
	replicaOptions := []contour.ReplicaOption{contour.WithDialOptions(dialOptions...)}
	for _, opt := range adapterOptions {
		replicaOptions = append(replicaOptions, opt)
	}
	adapter, err := contour.NewReplicatedAdapter(ctx, settings, resolve, replicaOptions...)
	if err != nil {
		return nil, nil, err
	}
	return adapter, func() {}, nil
}
