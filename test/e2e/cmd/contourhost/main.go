// Command contourhost embeds the Contour adapter (package client/contour)
// exactly as Contour would: controller-runtime cache informers, built with a
// scheme holding Contour's API types, on ExtensionService,
// TLSCertificateDelegation, Service, EndpointSlice and Secret, with the
// adapter registered as their event handler; Clusters to a sink, as
// Contour's cluster cache would take them; ExtensionService statuses written
// back through the status subresource as Contour's status.conditions; and
// the endpoints published over xDS to a node group (direct EDS), so that no
// ClusterLoadAssignment passes through the host at all.
//
// Usage:
//
//	contourhost --kubeconfig FILE (--tributary ADDR | --tributary-replicas ADDR,ADDR,...)
//	    [--node-group NAME] [--publish-listeners=true] [--xds-cluster-name NAME]
//	    [--watch-namespaces NS,NS,...] [--debounce DURATION]
//	    [--backoff-min DURATION] [--backoff-max DURATION]
//	    [--kube-api-qps N] [--kube-api-burst N] [--log-format text|json]
//
// --tributary runs one session (contour.NewAdapter); --tributary-replicas
// one session per listed replica (contour.NewReplicatedAdapter, resolving to
// that fixed list).
//
// Stdout carries one JSON object per line, and nothing else:
//
//	{"synced":true}
//	    once, when the first Flush after every informer synced has returned:
//	    the initial Clusters have been printed and the initial statuses queued.
//	{"clusters":{"changed":{"NAME":CLUSTER,...},"removed":["NAME",...]}}
//	    on every call of the cluster sink; CLUSTER is the protojson form of
//	    an envoy.config.cluster.v3.Cluster; "changed" is {} and "removed" []
//	    when empty.
//	{"status":{"namespace":"NS","name":"NAME","generation":N,"reason":"R"}}
//	    on every status write the API server accepted: N is the Valid
//	    condition's observedGeneration, R its reason. A status whose
//	    conditions are already on the object is not written and not printed.
//
// Logs go to stderr. SIGTERM, SIGINT or EOF on stdin close the adapter and
// exit 0, so a parent that dies takes its host with it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// options are the host's flags.
type options struct {
	kubeconfig       string
	tributary        string
	replicas         []string
	nodeGroup        string
	publishListeners bool
	xdsClusterName   string
	namespaces       []string
	debounce         time.Duration
	backoffMin       time.Duration
	backoffMax       time.Duration
	qps              float64
	burst            int
}

func main() {
	var o options
	var replicas, namespaces, logFormat string
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig `file` of the API server (empty: in-cluster configuration)")
	flag.StringVar(&o.tributary, "tributary", "", "`host:port` of the one Tributary server (contour.NewAdapter)")
	flag.StringVar(&replicas, "tributary-replicas", "", "comma-separated `host:port` list of Tributary replicas (contour.NewReplicatedAdapter)")
	flag.StringVar(&o.nodeGroup, "node-group", "", "publish Clusters and endpoints over xDS to this node `group` (empty: no xDS publishing)")
	flag.BoolVar(&o.publishListeners, "publish-listeners", true, "with --node-group, also publish a Listener per Cluster, for proxyless gRPC clients")
	flag.StringVar(&o.xdsClusterName, "xds-cluster-name", "", "the translator's xdsClusterName (empty: \"contour\")")
	flag.StringVar(&namespaces, "watch-namespaces", "", "comma-separated `namespaces` to watch (empty: all), as Contour's flag of that name")
	flag.DurationVar(&o.debounce, "debounce", 0, "the adapter's debounce (0: contour.DefaultDebounce; negative: flush only once, at start)")
	flag.DurationVar(&o.backoffMin, "backoff-min", 0, "first wait before a session reconnects (0: the client's default)")
	flag.DurationVar(&o.backoffMax, "backoff-max", 0, "longest wait before a session, and its connection, reconnect (0: the defaults)")
	flag.Float64Var(&o.qps, "kube-api-qps", 0, "the Kubernetes client's rate limit, requests per second (0: client-go's default, 5, as Contour's)")
	flag.IntVar(&o.burst, "kube-api-burst", 0, "the Kubernetes client's burst (0: client-go's default, 10)")
	flag.StringVar(&logFormat, "log-format", "text", "stderr log format: text or json")
	flag.Parse()
	o.replicas = splitList(replicas)
	o.namespaces = splitList(namespaces)

	if (o.tributary == "") == (len(o.replicas) == 0) {
		fmt.Fprintln(os.Stderr, "contourhost: give exactly one of --tributary and --tributary-replicas")
		os.Exit(2)
	}
	logger, err := newLogger(logFormat)
	if err != nil {
		fmt.Fprintln(os.Stderr, "contourhost:", err)
		os.Exit(2)
	}
	slog.SetDefault(logger)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	// An error after a signal is the signal's doing (a flush or a cache
	// start cut short): the host was told to stop, and did.
	if err := run(ctx, o, newLines(os.Stdout), logger); err != nil && ctx.Err() == nil {
		logger.Error("contourhost: exiting", "error", err)
		os.Exit(1)
	}
}

func newLogger(format string) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, nil)), nil
	}
	return nil, fmt.Errorf("unknown --log-format %q (text or json)", format)
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
