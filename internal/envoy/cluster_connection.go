package envoy

import (
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tributary-dev/tributary/internal/model"
)

// applyConnectionOptions adds the TCP keepalive; nil adds nothing. The
// HTTP/2 keepalive and the connection limits live in the HTTP protocol
// options, which buildProtocolOptions writes whole.
func applyConnectionOptions(c *clusterv3.Cluster, ec *model.ExtensionCluster) {
	k := ec.TCPKeepalive
	if k == nil {
		return
	}
	// An empty TcpKeepalive still sets SO_KEEPALIVE, with the kernel's
	// timings: that is what a group with no field asks for.
	c.UpstreamConnectionOptions = &clusterv3.UpstreamConnectionOptions{
		TcpKeepalive: &corev3.TcpKeepalive{
			KeepaliveProbes:   uint32OrNil(k.Probes),
			KeepaliveTime:     uint32OrNil(k.Time),
			KeepaliveInterval: uint32OrNil(k.Interval),
		},
	}
}

// buildHTTP2Keepalive returns the PING settings of an HTTP/2 connection,
// or nil for none.
func buildHTTP2Keepalive(k *model.HTTP2Keepalive) *corev3.KeepaliveSettings {
	if k == nil {
		return nil
	}
	return &corev3.KeepaliveSettings{
		Interval: durationpb.New(k.Interval),
		Timeout:  durationpb.New(k.Timeout),
	}
}

// applySlowStart adds slow start to round robin or least request; nil adds
// nothing.
func applySlowStart(c *clusterv3.Cluster, ec *model.ExtensionCluster) {
	s := ec.SlowStart
	if s == nil {
		return
	}
	config := &clusterv3.Cluster_SlowStartConfig{
		SlowStartWindow: durationpb.New(s.Window),
		// Aggression is always written, with its default when the group
		// leaves it unset, so that its runtime key exists: an operator can
		// then retune one Cluster's ramp through Envoy's runtime without a
		// new configuration. The key is the Cluster's alt_stat_name (unique
		// per ExtensionService, stable across changes to its spec, and the
		// name its stats already carry) under a prefix of ours.
		Aggression: &corev3.RuntimeDouble{
			DefaultValue: s.Aggression,
			RuntimeKey:   slowStartAggressionKey(c.GetAltStatName()),
		},
		MinWeightPercent: &typev3.Percent{Value: s.MinWeightPercent},
	}
	switch ec.LoadBalancer {
	case model.LoadBalancerLeastRequest:
		c.LbConfig = &clusterv3.Cluster_LeastRequestLbConfig_{
			LeastRequestLbConfig: &clusterv3.Cluster_LeastRequestLbConfig{SlowStartConfig: config},
		}
	default:
		// model guarantees SlowStart is nil unless the balancer is round
		// robin or least request.
		c.LbConfig = &clusterv3.Cluster_RoundRobinLbConfig_{
			RoundRobinLbConfig: &clusterv3.Cluster_RoundRobinLbConfig{SlowStartConfig: config},
		}
	}
}

// slowStartAggressionKey is the runtime key of a Cluster's slow start
// aggression.
func slowStartAggressionKey(altStatName string) string {
	return "tributary." + altStatName + ".slow_start_aggression"
}
