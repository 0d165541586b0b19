package envoy

import (
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
)

// clusterTestAny packs m for an expected Cluster. protocmp compares Any
// fields by their unpacked contents, so encoding details do not matter.
func clusterTestAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// clusterTestConfigSource is the contract's eds_config for xdsClusterName
// "envoy/xds", spelled out field by field.
func clusterTestConfigSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion: corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_ApiConfigSource{ApiConfigSource: &corev3.ApiConfigSource{
			ApiType:             corev3.ApiConfigSource_GRPC,
			TransportApiVersion: corev3.ApiVersion_V3,
			GrpcServices: []*corev3.GrpcService{{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{
				EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: "envoy/xds", Authority: "envoy.xds"},
			}}},
		}},
	}
}

// clusterTestBase is what every Cluster for "extension/ns/authz" holds; the
// cases add the fields that vary.
func clusterTestBase() *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 "extension/ns/authz",
		AltStatName:          "extension_ns_authz",
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{
			EdsConfig:   clusterTestConfigSource(),
			ServiceName: "extension/ns/authz",
		},
		ConnectTimeout: durationpb.New(2 * time.Second),
		CommonLbConfig: &clusterv3.Cluster_CommonLbConfig{
			HealthyPanicThreshold: &typev3.Percent{Value: 0},
			LocalityConfigSpecifier: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig_{
				LocalityWeightedLbConfig: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig{},
			},
		},
	}
}

func clusterTestHTTP2(idle *durationpb.Duration) *httpv3.HttpProtocolOptions {
	o := &httpv3.HttpProtocolOptions{UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{
		ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: &corev3.Http2ProtocolOptions{}},
		},
	}}
	if idle != nil {
		o.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{IdleTimeout: idle}
	}
	return o
}

func clusterTestExtension() *model.ExtensionCluster {
	return &model.ExtensionCluster{
		Name: "extension/ns/authz", XDSClusterName: "envoy/xds", ConnectTimeout: 2 * time.Second,
	}
}

func TestBuildCluster(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nnot parsed here\n-----END CERTIFICATE-----\n")
	fiveMinutes := 5 * time.Minute
	var noTimeout time.Duration

	tests := []struct {
		name string
		ec   func(*model.ExtensionCluster)
		want func(*clusterv3.Cluster)
	}{
		{
			name: "h2 with validation, client certificate, TLS parameters and circuit breakers",
			ec: func(ec *model.ExtensionCluster) {
				ec.Protocol = model.ProtocolH2
				ec.LoadBalancer = model.LoadBalancerLeastRequest
				ec.ConnectTimeout = 1500 * time.Millisecond
				ec.CircuitBreakers = &source.CircuitBreakers{MaxConnections: 1, MaxPendingRequests: 2, MaxRequests: 3, MaxRetries: 4, PerHostMaxConnections: 5}
				ec.TLS = &model.UpstreamTLS{
					SNI: "authz.ns", CACertificate: ca, SubjectNames: []string{"authz.ns", "authz"},
					ClientCertificateSDSName: "envoy/client/0123456789",
					Params:                   &model.TLSParams{Minimum: model.TLS12, Maximum: model.TLS13, CipherSuites: []string{"ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305"}},
				}
			},
			want: func(c *clusterv3.Cluster) {
				c.LbPolicy = clusterv3.Cluster_LEAST_REQUEST
				c.ConnectTimeout = durationpb.New(1500 * time.Millisecond)
				c.TypedExtensionProtocolOptions = map[string]*anypb.Any{
					"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": clusterTestAny(t, clusterTestHTTP2(nil)),
				}
				c.CircuitBreakers = &clusterv3.CircuitBreakers{
					Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
						MaxConnections: wrapperspb.UInt32(1), MaxPendingRequests: wrapperspb.UInt32(2),
						MaxRequests: wrapperspb.UInt32(3), MaxRetries: wrapperspb.UInt32(4), TrackRemaining: true,
					}},
					PerHostThresholds: []*clusterv3.CircuitBreakers_Thresholds{{MaxConnections: wrapperspb.UInt32(5), TrackRemaining: true}},
				}
				c.TransportSocket = &corev3.TransportSocket{
					Name: "envoy.transport_sockets.tls",
					ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: clusterTestAny(t, &tlsv3.UpstreamTlsContext{
						Sni: "authz.ns",
						CommonTlsContext: &tlsv3.CommonTlsContext{
							AlpnProtocols: []string{"h2"},
							TlsParams: &tlsv3.TlsParameters{
								TlsMinimumProtocolVersion: tlsv3.TlsParameters_TLSv1_2,
								TlsMaximumProtocolVersion: tlsv3.TlsParameters_TLSv1_3,
								CipherSuites:              []string{"ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305"},
							},
							TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{
								Name: "envoy/client/0123456789", SdsConfig: clusterTestConfigSource(),
							}},
							ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
								TrustedCa: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: ca}},
								MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{
									{SanType: tlsv3.SubjectAltNameMatcher_DNS, Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "authz.ns"}}},
									{SanType: tlsv3.SubjectAltNameMatcher_DNS, Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "authz"}}},
								},
							}},
						},
					})},
				}
			},
		},
		{
			name: "h2 without validation: TLS that offers h2 and verifies nothing",
			ec: func(ec *model.ExtensionCluster) {
				ec.Protocol = model.ProtocolH2
				ec.TLS = &model.UpstreamTLS{Params: &model.TLSParams{}}
			},
			want: func(c *clusterv3.Cluster) {
				c.TypedExtensionProtocolOptions = map[string]*anypb.Any{
					"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": clusterTestAny(t, clusterTestHTTP2(nil)),
				}
				c.TransportSocket = &corev3.TransportSocket{
					Name: "envoy.transport_sockets.tls",
					ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: clusterTestAny(t, &tlsv3.UpstreamTlsContext{
						CommonTlsContext: &tlsv3.CommonTlsContext{AlpnProtocols: []string{"h2"}, TlsParams: &tlsv3.TlsParameters{}},
					})},
				}
			},
		},
		{
			name: "h2c with a disabled idle timeout and one circuit breaker",
			ec: func(ec *model.ExtensionCluster) {
				ec.Protocol = model.ProtocolH2C
				ec.LoadBalancer = model.LoadBalancerRandom
				ec.IdleConnectionTimeout = &noTimeout
				ec.CircuitBreakers = &source.CircuitBreakers{MaxRetries: 7}
			},
			want: func(c *clusterv3.Cluster) {
				c.LbPolicy = clusterv3.Cluster_RANDOM
				c.TypedExtensionProtocolOptions = map[string]*anypb.Any{
					"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": clusterTestAny(t, clusterTestHTTP2(durationpb.New(0))),
				}
				c.CircuitBreakers = &clusterv3.CircuitBreakers{
					Thresholds:        []*clusterv3.CircuitBreakers_Thresholds{{MaxRetries: wrapperspb.UInt32(7), TrackRemaining: true}},
					PerHostThresholds: []*clusterv3.CircuitBreakers_Thresholds{{TrackRemaining: true}},
				}
			},
		},
		{
			name: "http/1.1 with an idle timeout and only a per-host limit",
			ec: func(ec *model.ExtensionCluster) {
				ec.Protocol = model.ProtocolHTTP11
				ec.IdleConnectionTimeout = &fiveMinutes
				ec.CircuitBreakers = &source.CircuitBreakers{PerHostMaxConnections: 10}
			},
			want: func(c *clusterv3.Cluster) {
				c.TypedExtensionProtocolOptions = map[string]*anypb.Any{
					"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": clusterTestAny(t, &httpv3.HttpProtocolOptions{
						CommonHttpProtocolOptions: &corev3.HttpProtocolOptions{IdleTimeout: durationpb.New(5 * time.Minute)},
						UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{
							ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
								ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &corev3.Http1ProtocolOptions{}},
							},
						},
					}),
				}
				c.CircuitBreakers = &clusterv3.CircuitBreakers{
					Thresholds:        []*clusterv3.CircuitBreakers_Thresholds{{TrackRemaining: true}},
					PerHostThresholds: []*clusterv3.CircuitBreakers_Thresholds{{MaxConnections: wrapperspb.UInt32(10), TrackRemaining: true}},
				}
			},
		},
	}
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
		})
	}
}

// TestBuildClusterAuthority: the default xDS cluster keeps its name as the
// authority; only "/" is rewritten.
func TestBuildClusterAuthority(t *testing.T) {
	for name, want := range map[string]string{"contour": "contour", "a/b/c": "a.b.c", "xds.example:18000": "xds.example:18000"} {
		ec := clusterTestExtension()
		ec.XDSClusterName = name
		ec.TLS = &model.UpstreamTLS{ClientCertificateSDSName: "ns/cert/0123456789"}
		c := BuildCluster(ec)
		grpc := c.GetEdsClusterConfig().GetEdsConfig().GetApiConfigSource().GetGrpcServices()[0].GetEnvoyGrpc()
		if grpc.GetClusterName() != name || grpc.GetAuthority() != want {
			t.Errorf("xdsClusterName %q: got cluster_name %q, authority %q; want %q, %q",
				name, grpc.GetClusterName(), grpc.GetAuthority(), name, want)
		}
		// The SDS config must be the very same source as EDS.
		tlsContext := new(tlsv3.UpstreamTlsContext)
		if err := c.GetTransportSocket().GetTypedConfig().UnmarshalTo(tlsContext); err != nil {
			t.Fatal(err)
		}
		sds := tlsContext.GetCommonTlsContext().GetTlsCertificateSdsSecretConfigs()[0].GetSdsConfig()
		if diff := cmp.Diff(c.GetEdsClusterConfig().GetEdsConfig(), sds, protocmp.Transform()); diff != "" {
			t.Errorf("xdsClusterName %q: SDS config differs from EDS config (-eds +sds):\n%s", name, diff)
		}
		validateCluster(t, c)
	}
}

// TestBuildClusterEdgeValues: values at the limits model allows still make
// Clusters Envoy's rules accept.
func TestBuildClusterEdgeValues(t *testing.T) {
	ec := clusterTestExtension()
	ec.Name = "extension/n/é"
	ec.ConnectTimeout = time.Nanosecond
	sni := strings.Repeat("a", 255)
	ec.TLS = &model.UpstreamTLS{SNI: sni, CACertificate: []byte("x"), SubjectNames: []string{sni}}
	ec.CircuitBreakers = &source.CircuitBreakers{MaxConnections: ^uint32(0)}
	validateCluster(t, BuildCluster(ec))

	// One byte more is what model refuses, and Envoy's rules agree.
	ec.TLS.SNI += "a"
	tlsContext := new(tlsv3.UpstreamTlsContext)
	if err := BuildCluster(ec).GetTransportSocket().GetTypedConfig().UnmarshalTo(tlsContext); err != nil {
		t.Fatal(err)
	}
	if tlsContext.ValidateAll() == nil {
		t.Error("a 256-byte SNI passes ValidateAll; model's limit is then stricter than needed")
	}
}

// validateCluster runs ValidateAll on c and on every message packed in an
// Any inside it, which ValidateAll does not open.
func validateCluster(t *testing.T, c *clusterv3.Cluster) {
	t.Helper()
	if err := c.ValidateAll(); err != nil {
		t.Errorf("Cluster fails ValidateAll: %v", err)
	}
	for key, a := range c.GetTypedExtensionProtocolOptions() {
		opts := new(httpv3.HttpProtocolOptions)
		if err := a.UnmarshalTo(opts); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if err := opts.ValidateAll(); err != nil {
			t.Errorf("%s fails ValidateAll: %v", key, err)
		}
	}
	if ts := c.GetTransportSocket(); ts != nil {
		tlsContext := new(tlsv3.UpstreamTlsContext)
		if err := ts.GetTypedConfig().UnmarshalTo(tlsContext); err != nil {
			t.Fatalf("transport socket: %v", err)
		}
		if err := tlsContext.ValidateAll(); err != nil {
			t.Errorf("UpstreamTlsContext fails ValidateAll: %v", err)
		}
	}
	if _, err := (proto.MarshalOptions{Deterministic: true}).Marshal(c); err != nil {
		t.Errorf("Cluster does not marshal: %v", err)
	}
}
