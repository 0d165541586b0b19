package envoy

import (
	"bytes"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tributary-dev/tributary/internal/model"
)

// connectionTestProtocolOptions is the HttpProtocolOptions entry of a
// Cluster: h2 (or h2c) with the given keepalive, or HTTP/1.1 when http1,
// and common options when non-nil.
func connectionTestProtocolOptions(t *testing.T, http1 bool, keepalive *corev3.KeepaliveSettings, common *corev3.HttpProtocolOptions) map[string]*anypb.Any {
	t.Helper()
	o := clusterTestHTTP2(nil)
	if http1 {
		o.GetExplicitHttpConfig().ProtocolConfig = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &corev3.Http1ProtocolOptions{}}
	} else {
		o.GetExplicitHttpConfig().GetHttp2ProtocolOptions().ConnectionKeepalive = keepalive
	}
	o.CommonHttpProtocolOptions = common
	return map[string]*anypb.Any{httpProtocolOptionsKey: clusterTestAny(t, o)}
}

// TestBuildClusterConnectionOptions holds each connection option to its
// exact Envoy fields, beside what the Cluster has without it: the HTTP/2
// keepalive in the HTTP/2 options, the connection limits merged with the
// idle timeout into one common_http_protocol_options, the TCP keepalive in
// upstream_connection_options, slow start in the balancer's own config,
// and the tls group's SNI without validation. Every Cluster passes
// ValidateAll, and the fast encoder writes what proto.Marshal does.
func TestBuildClusterConnectionOptions(t *testing.T) {
	hour, zero := time.Hour, time.Duration(0)
	slowStart := &clusterv3.Cluster_SlowStartConfig{
		SlowStartWindow:  durationpb.New(30 * time.Second),
		Aggression:       &corev3.RuntimeDouble{DefaultValue: 1.5, RuntimeKey: "tributary.extension_ns_authz.slow_start_aggression"},
		MinWeightPercent: &typev3.Percent{Value: 0},
	}
	tests := []struct {
		name string
		ec   func(*model.ExtensionCluster)
		want func(*clusterv3.Cluster)
	}{{
		name: "HTTP/2 keepalive on h2c",
		ec: func(ec *model.ExtensionCluster) {
			ec.Protocol = model.ProtocolH2C
			ec.HTTP2Keepalive = &model.HTTP2Keepalive{Interval: 30 * time.Second, Timeout: 20 * time.Second}
		},
		want: func(c *clusterv3.Cluster) {
			c.TypedExtensionProtocolOptions = connectionTestProtocolOptions(t, false, &corev3.KeepaliveSettings{
				Interval: durationpb.New(30 * time.Second), Timeout: durationpb.New(20 * time.Second),
			}, nil)
		},
	}, {
		name: "connection limits merged with the idle timeout",
		ec: func(ec *model.ExtensionCluster) {
			ec.Protocol = model.ProtocolH2C
			ec.IdleConnectionTimeout = &hour
			ec.ConnectionLimits = &model.ConnectionLimits{MaxConnectionDuration: 10 * time.Minute, MaxRequestsPerConnection: 1000}
			ec.HTTP2Keepalive = &model.HTTP2Keepalive{Interval: time.Millisecond, Timeout: time.Millisecond}
		},
		want: func(c *clusterv3.Cluster) {
			c.TypedExtensionProtocolOptions = connectionTestProtocolOptions(t, false, &corev3.KeepaliveSettings{
				Interval: durationpb.New(time.Millisecond), Timeout: durationpb.New(time.Millisecond),
			}, &corev3.HttpProtocolOptions{
				IdleTimeout:              durationpb.New(time.Hour),
				MaxConnectionDuration:    durationpb.New(10 * time.Minute),
				MaxRequestsPerConnection: wrapperspb.UInt32(1000),
			})
		},
	}, {
		name: "one connection limit on http/1.1, with the idle timeout off",
		ec: func(ec *model.ExtensionCluster) {
			ec.Protocol = model.ProtocolHTTP11
			ec.IdleConnectionTimeout = &zero
			ec.ConnectionLimits = &model.ConnectionLimits{MaxRequestsPerConnection: 1}
		},
		want: func(c *clusterv3.Cluster) {
			c.TypedExtensionProtocolOptions = connectionTestProtocolOptions(t, true, nil, &corev3.HttpProtocolOptions{
				IdleTimeout:              durationpb.New(0),
				MaxRequestsPerConnection: wrapperspb.UInt32(1),
			})
		},
	}, {
		name: "maximum connection duration alone",
		ec: func(ec *model.ExtensionCluster) {
			ec.Protocol = model.ProtocolH2C
			ec.ConnectionLimits = &model.ConnectionLimits{MaxConnectionDuration: 24 * time.Hour}
		},
		want: func(c *clusterv3.Cluster) {
			c.TypedExtensionProtocolOptions = connectionTestProtocolOptions(t, false, nil, &corev3.HttpProtocolOptions{
				MaxConnectionDuration: durationpb.New(24 * time.Hour),
			})
		},
	}, {
		name: "TCP keepalive, every field",
		ec: func(ec *model.ExtensionCluster) {
			ec.Protocol = model.ProtocolH2C
			ec.TCPKeepalive = &model.TCPKeepalive{Probes: 3, Time: 120, Interval: 10}
		},
		want: func(c *clusterv3.Cluster) {
			c.TypedExtensionProtocolOptions = connectionTestProtocolOptions(t, false, nil, nil)
			c.UpstreamConnectionOptions = &clusterv3.UpstreamConnectionOptions{TcpKeepalive: &corev3.TcpKeepalive{
				KeepaliveProbes: wrapperspb.UInt32(3), KeepaliveTime: wrapperspb.UInt32(120), KeepaliveInterval: wrapperspb.UInt32(10),
			}}
		},
	}, {
		name: "TCP keepalive with the kernel's timings",
		ec: func(ec *model.ExtensionCluster) {
			ec.Protocol = model.ProtocolH2C
			ec.TCPKeepalive = &model.TCPKeepalive{}
		},
		want: func(c *clusterv3.Cluster) {
			c.TypedExtensionProtocolOptions = connectionTestProtocolOptions(t, false, nil, nil)
			c.UpstreamConnectionOptions = &clusterv3.UpstreamConnectionOptions{TcpKeepalive: &corev3.TcpKeepalive{}}
		},
	}, {
		name: "slow start under round robin",
		ec: func(ec *model.ExtensionCluster) {
			ec.Protocol = model.ProtocolH2C
			ec.SlowStart = &model.SlowStart{Window: 30 * time.Second, Aggression: 1.5, MinWeightPercent: 0}
		},
		want: func(c *clusterv3.Cluster) {
			c.TypedExtensionProtocolOptions = connectionTestProtocolOptions(t, false, nil, nil)
			c.LbConfig = &clusterv3.Cluster_RoundRobinLbConfig_{RoundRobinLbConfig: &clusterv3.Cluster_RoundRobinLbConfig{SlowStartConfig: slowStart}}
		},
	}, {
		name: "slow start under least request",
		ec: func(ec *model.ExtensionCluster) {
			ec.Protocol = model.ProtocolH2C
			ec.LoadBalancer = model.LoadBalancerLeastRequest
			ec.SlowStart = &model.SlowStart{Window: 30 * time.Second, Aggression: 1.5, MinWeightPercent: 0}
		},
		want: func(c *clusterv3.Cluster) {
			c.TypedExtensionProtocolOptions = connectionTestProtocolOptions(t, false, nil, nil)
			c.LbPolicy = clusterv3.Cluster_LEAST_REQUEST
			c.LbConfig = &clusterv3.Cluster_LeastRequestLbConfig_{LeastRequestLbConfig: &clusterv3.Cluster_LeastRequestLbConfig{SlowStartConfig: slowStart}}
		},
	}, {
		name: "SNI without validation, and a client certificate",
		ec: func(ec *model.ExtensionCluster) {
			ec.TLS = &model.UpstreamTLS{SNI: "authz.internal", ClientCertificateSDSName: "certs/client/0123456789", Params: &model.TLSParams{Maximum: model.TLS13}}
		},
		want: func(c *clusterv3.Cluster) {
			c.TypedExtensionProtocolOptions = connectionTestProtocolOptions(t, false, nil, nil)
			c.TransportSocket = &corev3.TransportSocket{
				Name: "envoy.transport_sockets.tls",
				ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: clusterTestAny(t, &tlsv3.UpstreamTlsContext{
					Sni: "authz.internal",
					CommonTlsContext: &tlsv3.CommonTlsContext{
						AlpnProtocols: []string{"h2"},
						TlsParams:     &tlsv3.TlsParameters{TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3},
						TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{
							Name: "certs/client/0123456789", SdsConfig: clusterTestConfigSource(),
						}},
					},
				})},
			}
		},
	}}
	encoder := NewClusterEncoder()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ec := clusterTestExtension()
			tc.ec(ec)
			want := clusterTestBase()
			tc.want(want)

			got := BuildCluster(ec)
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("Cluster (-want +got):\n%s", diff)
			}
			validateCluster(t, got)
			if fast := encoder.Append(nil, ec); !bytes.Equal(fast, MustMarshal(got)) {
				t.Error("ClusterEncoder writes other bytes than proto.Marshal of BuildCluster")
			}
		})
	}
}
