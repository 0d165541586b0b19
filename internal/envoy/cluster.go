package envoy

import (
	"fmt"
	"strings"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
)

// httpProtocolOptionsKey is the typed_extension_protocol_options key Envoy
// reads upstream HTTP settings from.
const httpProtocolOptionsKey = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"

// BuildCluster returns the EDS Cluster for ec: Envoy learns its endpoints
// from the ClusterLoadAssignment named like the Cluster, served by
// ec.XDSClusterName. The result passes ValidateAll, as do the messages
// packed in its Any fields, for every ExtensionCluster model can return.
func BuildCluster(ec *model.ExtensionCluster) *clusterv3.Cluster {
	c := &clusterv3.Cluster{
		Name: ec.Name,
		// Stat names use "." as a separator, so "/" would be ambiguous
		// next to it; the name is unique, so this is too.
		AltStatName:          strings.ReplaceAll(ec.Name, "/", "_"),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig: &clusterv3.Cluster_EdsClusterConfig{
			EdsConfig:   buildConfigSource(ec.XDSClusterName),
			ServiceName: ec.Name,
		},
		ConnectTimeout:                durationpb.New(ec.ConnectTimeout),
		LbPolicy:                      buildLbPolicy(ec.LoadBalancer),
		CommonLbConfig:                buildCommonLbConfig(),
		TypedExtensionProtocolOptions: buildProtocolOptions(ec),
		TransportSocket:               buildUpstreamTLS(ec.TLS, ec.XDSClusterName),
		CircuitBreakers:               buildCircuitBreakers(ec.CircuitBreakers),
	}
	// The options beyond Contour's CRD, each in a file of its own; each
	// leaves c as it is when its group is nil.
	applyExternalName(c, ec)
	applyHealthCheck(c, ec.HealthCheck)
	applyOutlierDetection(c, ec.OutlierDetection)
	applyConnectionOptions(c, ec)
	applySlowStart(c, ec)
	applyClientSideWeightedRoundRobin(c, ec)
	return c
}

// buildConfigSource points Envoy at the management server: the Envoy cluster
// xdsClusterName, over gRPC with API v3. The authority replaces "/"
// with ".", as Contour does, because "/" is not allowed in an HTTP/2
// :authority.
func buildConfigSource(xdsClusterName string) *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion: corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_ApiConfigSource{
			ApiConfigSource: &corev3.ApiConfigSource{
				ApiType:             corev3.ApiConfigSource_GRPC,
				TransportApiVersion: corev3.ApiVersion_V3,
				GrpcServices: []*corev3.GrpcService{{
					TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{
						EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{
							ClusterName: xdsClusterName,
							Authority:   strings.ReplaceAll(xdsClusterName, "/", "."),
						},
					},
				}},
			},
		},
	}
}

func buildLbPolicy(lb model.LoadBalancer) clusterv3.Cluster_LbPolicy {
	switch lb {
	case model.LoadBalancerLeastRequest:
		return clusterv3.Cluster_LEAST_REQUEST
	case model.LoadBalancerRandom:
		return clusterv3.Cluster_RANDOM
	default:
		return clusterv3.Cluster_ROUND_ROBIN
	}
}

// buildCommonLbConfig disables the healthy panic threshold (Envoy would
// otherwise send traffic to unhealthy hosts once few are healthy) and turns
// on locality-weighted load balancing, without which Envoy ignores the
// locality weights of the ClusterLoadAssignment (Contour omits it; the
// weights of spec.services then do nothing).
func buildCommonLbConfig() *clusterv3.Cluster_CommonLbConfig {
	return &clusterv3.Cluster_CommonLbConfig{
		HealthyPanicThreshold: &typev3.Percent{Value: 0},
		LocalityConfigSpecifier: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig_{
			LocalityWeightedLbConfig: &clusterv3.Cluster_CommonLbConfig_LocalityWeightedLbConfig{},
		},
	}
}

// buildProtocolOptions sets the HTTP version explicitly, since Envoy would
// otherwise speak HTTP/1.1 to a gRPC server, with the HTTP/2 keepalive when
// one is set, and the limits on a connection's life (the idle timeout,
// zero to disable it, the maximum duration and requests per connection),
// which Envoy reads from one common_http_protocol_options: each limit set
// adds its field beside the others.
func buildProtocolOptions(ec *model.ExtensionCluster) map[string]*anypb.Any {
	explicit := &httpv3.HttpProtocolOptions_ExplicitHttpConfig{}
	switch ec.Protocol {
	case model.ProtocolHTTP11:
		explicit.ProtocolConfig = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{
			HttpProtocolOptions: &corev3.Http1ProtocolOptions{},
		}
	default:
		explicit.ProtocolConfig = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{
			Http2ProtocolOptions: &corev3.Http2ProtocolOptions{ConnectionKeepalive: buildHTTP2Keepalive(ec.HTTP2Keepalive)},
		}
	}
	options := &httpv3.HttpProtocolOptions{
		UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: explicit},
	}
	common := &corev3.HttpProtocolOptions{}
	if t := ec.IdleConnectionTimeout; t != nil {
		common.IdleTimeout = durationpb.New(*t)
	}
	if l := ec.ConnectionLimits; l != nil {
		if l.MaxConnectionDuration > 0 {
			common.MaxConnectionDuration = durationpb.New(l.MaxConnectionDuration)
		}
		common.MaxRequestsPerConnection = uint32OrNil(l.MaxRequestsPerConnection)
	}
	if common.IdleTimeout != nil || common.MaxConnectionDuration != nil || common.MaxRequestsPerConnection != nil {
		options.CommonHttpProtocolOptions = common
	}
	return map[string]*anypb.Any{httpProtocolOptionsKey: MarshalAny(options)}
}

// buildCircuitBreakers returns Envoy's default-priority thresholds and the
// per-host connection limit, or nil when cb is nil. Zero values stay unset
// so that Envoy keeps its defaults for them. track_remaining publishes the
// remaining budget as stats.
func buildCircuitBreakers(cb *source.CircuitBreakers) *clusterv3.CircuitBreakers {
	if cb == nil {
		return nil
	}
	return &clusterv3.CircuitBreakers{
		Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
			MaxConnections:     uint32OrNil(cb.MaxConnections),
			MaxPendingRequests: uint32OrNil(cb.MaxPendingRequests),
			MaxRequests:        uint32OrNil(cb.MaxRequests),
			MaxRetries:         uint32OrNil(cb.MaxRetries),
			TrackRemaining:     true,
		}},
		PerHostThresholds: []*clusterv3.CircuitBreakers_Thresholds{{
			MaxConnections: uint32OrNil(cb.PerHostMaxConnections),
			TrackRemaining: true,
		}},
	}
}

func uint32OrNil(v uint32) *wrapperspb.UInt32Value {
	if v == 0 {
		return nil
	}
	return wrapperspb.UInt32(v)
}

// MustMarshal encodes m deterministically. It cannot fail for a message
// built from a model (model guarantees every string is valid UTF-8) or for
// any other well-formed generated message, so a failure is a bug and
// panics.
func MustMarshal(m proto.Message) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("marshal %s: %v", m.ProtoReflect().Descriptor().FullName(), err))
	}
	return b
}

// MarshalAny packs m, encoded by MustMarshal, into an Any.
func MarshalAny(m proto.Message) *anypb.Any {
	return &anypb.Any{TypeUrl: "type.googleapis.com/" + string(m.ProtoReflect().Descriptor().FullName()), Value: MustMarshal(m)}
}
