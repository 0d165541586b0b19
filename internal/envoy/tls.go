package envoy

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/tributary-dev/tributary/internal/model"
)

// tlsTransportSocketName is the transport socket that speaks TLS upstream.
const tlsTransportSocketName = "envoy.transport_sockets.tls"

// buildUpstreamTLS returns the TLS transport socket for an h2 extension, or
// nil when tls is nil (h2c and http/1.1 speak cleartext).
func buildUpstreamTLS(tls *model.UpstreamTLS, xdsClusterName string) *corev3.TransportSocket {
	if tls == nil {
		return nil
	}
	return &corev3.TransportSocket{
		Name: tlsTransportSocketName,
		ConfigType: &corev3.TransportSocket_TypedConfig{
			TypedConfig: MarshalAny(buildUpstreamTLSContext(tls, xdsClusterName)),
		},
	}
}

// buildUpstreamTLSContext returns the UpstreamTlsContext for tls. ALPN
// offers only h2: an extension is a gRPC server. Envoy fetches the client
// certificate over SDS from the same management server as EDS.
func buildUpstreamTLSContext(tls *model.UpstreamTLS, xdsClusterName string) *tlsv3.UpstreamTlsContext {
	common := &tlsv3.CommonTlsContext{
		AlpnProtocols: []string{"h2"},
		TlsParams:     buildTLSParams(tls.Params),
	}
	if tls.ClientCertificateSDSName != "" {
		common.TlsCertificateSdsSecretConfigs = []*tlsv3.SdsSecretConfig{{
			Name:      tls.ClientCertificateSDSName,
			SdsConfig: buildConfigSource(xdsClusterName),
		}}
	}
	if tls.CACertificate != nil {
		common.ValidationContextType = &tlsv3.CommonTlsContext_ValidationContext{
			ValidationContext: buildValidationContext(tls.CACertificate, tls.SubjectNames),
		}
	}
	return &tlsv3.UpstreamTlsContext{CommonTlsContext: common, Sni: tls.SNI}
}

// buildValidationContext trusts the inline CA bundle and accepts a peer
// presenting any of subjectNames as a DNS SAN.
func buildValidationContext(ca []byte, subjectNames []string) *tlsv3.CertificateValidationContext {
	matchers := make([]*tlsv3.SubjectAltNameMatcher, len(subjectNames))
	for i, name := range subjectNames {
		matchers[i] = &tlsv3.SubjectAltNameMatcher{
			SanType: tlsv3.SubjectAltNameMatcher_DNS,
			Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: name}},
		}
	}
	return &tlsv3.CertificateValidationContext{
		TrustedCa:                 &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: ca}},
		MatchTypedSubjectAltNames: matchers,
	}
}

// buildTLSParams maps the upstreamTLS setting; nil leaves Envoy's defaults.
func buildTLSParams(p *model.TLSParams) *tlsv3.TlsParameters {
	if p == nil {
		return nil
	}
	return &tlsv3.TlsParameters{
		TlsMinimumProtocolVersion: tlsProtocol(p.Minimum),
		TlsMaximumProtocolVersion: tlsProtocol(p.Maximum),
		CipherSuites:              p.CipherSuites,
	}
}

func tlsProtocol(v model.TLSVersion) tlsv3.TlsParameters_TlsProtocol {
	switch v {
	case model.TLS12:
		return tlsv3.TlsParameters_TLSv1_2
	case model.TLS13:
		return tlsv3.TlsParameters_TLSv1_3
	default:
		return tlsv3.TlsParameters_TLS_AUTO
	}
}
