package server

import (
	"fmt"
	"strings"
	"time"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
)

// decodeSettings checks pb, found at path at of the client's message
// ("settings" in a TranslateRequest, "start.settings" in a SyncRequest).
func decodeSettings(pb *tributaryv1.Settings, at string, p *problems) source.Settings {
	var s source.Settings
	if pb == nil {
		return s
	}
	if name := pb.GetXdsClusterName(); name != "" {
		// The name also becomes the HTTP authority of the EDS gRPC stream,
		// which Envoy rejects when it holds NUL, CR or LF; refusing every
		// control character keeps the stream and the logs readable.
		field := at + ".xdsClusterName"
		if bad := badText(name); bad != "" {
			p.add(field, ReasonInvalidCharacters, fmt.Sprintf("%s %s %s", field, source.Quote(name), bad))
		} else {
			xdsClusterNameLimit.checkSetting(p, field, name)
		}
		s.XDSClusterName = name
	}
	if raw := pb.GetConnectTimeout(); raw != "" {
		field := at + ".connectTimeout"
		d, err := time.ParseDuration(raw)
		switch {
		case !durationLimit.checkSetting(p, field, raw):
		case err != nil:
			p.add(field, ReasonInvalidDuration, field+": "+source.Truncate(err.Error()))
		case d < 0:
			p.add(field, ReasonOutOfRange, fmt.Sprintf("%s %s is negative", field, source.Quote(raw)))
		default:
			s.ConnectTimeout = d
		}
	}
	if cb := pb.GetGlobalCircuitBreakers(); cb != nil {
		s.GlobalCircuitBreakers = decodeCircuitBreakers(cb)
	}
	if raw := pb.GetClientCertificate(); raw != "" {
		field := at + ".clientCertificate"
		ns, name, ok := strings.Cut(raw, "/")
		switch {
		case !ok || strings.Contains(name, "/"):
			p.add(field, ReasonInvalidFormat, fmt.Sprintf("%s %s is not \"namespace/name\"", field, source.Quote(raw)))
		case !model.IsDNS1123Label(ns):
			p.add(field, ReasonInvalidName, fmt.Sprintf("%s %s: namespace %s is not a valid namespace (%s)", field, source.Quote(raw), source.Quote(ns), dns1123LabelRule))
		case !model.IsDNS1123Subdomain(name):
			p.add(field, ReasonInvalidName, fmt.Sprintf("%s %s: name %s is not a valid name (%s)", field, source.Quote(raw), source.Quote(name), dns1123SubdomainRule))
		default:
			s.ClientCertificate = &source.NamespacedName{Namespace: ns, Name: name}
		}
	}
	if tls := pb.GetUpstreamTls(); tls != nil {
		keywordLimit.checkSetting(p, at+".upstreamTls.minimumProtocolVersion", tls.GetMinimumProtocolVersion())
		keywordLimit.checkSetting(p, at+".upstreamTls.maximumProtocolVersion", tls.GetMaximumProtocolVersion())
		checkCipherSuites(settingFields{p}, at+".upstreamTls.cipherSuites", tls.GetCipherSuites())
		s.UpstreamTLS = &source.UpstreamTLS{
			MinimumProtocolVersion: tls.GetMinimumProtocolVersion(),
			MaximumProtocolVersion: tls.GetMaximumProtocolVersion(),
			CipherSuites:           tls.GetCipherSuites(),
		}
	}
	s.ExternalNameTargets = pb.GetEnableExternalNameTargets()
	if d := pb.GetExtensionDefaults(); d != nil {
		field := at + ".extensionDefaults"
		before := p.count
		s.ExtensionDefaults = decodeOptions(d, field, settingFields{p})
		// A default must be valid wherever it lands: translation judges it
		// as it judges an ExtensionService's own options, once, here. A
		// string over its limit is already reported, and judging it too
		// would say the same thing twice.
		if p.count == before {
			for _, msg := range model.CheckExtensionDefaults(s) {
				p.add(field, ReasonInvalidOption, msg)
			}
		}
	}
	return s
}

func decodeCircuitBreakers(pb *tributaryv1.CircuitBreakers) *source.CircuitBreakers {
	return &source.CircuitBreakers{
		MaxConnections:        pb.GetMaxConnections(),
		MaxPendingRequests:    pb.GetMaxPendingRequests(),
		MaxRequests:           pb.GetMaxRequests(),
		MaxRetries:            pb.GetMaxRetries(),
		PerHostMaxConnections: pb.GetPerHostMaxConnections(),
	}
}

// checkCipherSuites bounds the list, which every h2 Cluster repeats: at
// most maxCipherSuites names, each within cipherSuiteLimit. Whether Envoy
// knows them is Envoy's to say.
func checkCipherSuites(r fieldReporter, field string, suites []string) {
	if len(suites) > maxCipherSuites {
		r.report(field, ReasonOutOfRange, fmt.Sprintf(
			"holds %d names; at most %d: BoringSSL knows fewer than 30 cipher suites, and every h2 Cluster repeats the list", len(suites), maxCipherSuites))
		return
	}
	for i, suite := range suites {
		if cipherSuiteLimit.tooLong(suite) {
			cipherSuiteLimit.checkIn(r, fmt.Sprintf("%s[%d]", field, i), suite)
		}
	}
}
