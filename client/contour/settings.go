package contour

import (
	"slices"

	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// Config holds the translator-wide settings as Contour's configuration
// spells them. Its JSON names are the contract's setting names, so the same
// struct reads a settings file (tributary translate --settings). Values are
// carried as written: the service parses and rejects them (a bad
// connectTimeout is an InvalidArgument naming the setting).
type Config struct {
	// XDSClusterName is the Envoy cluster that serves EDS; "" means "contour".
	XDSClusterName string `json:"xdsClusterName,omitempty"`
	// ConnectTimeout is a Go duration ("250ms", "5s"); "" means 2s.
	ConnectTimeout string `json:"connectTimeout,omitempty"`
	// GlobalCircuitBreakers apply to ExtensionServices without a
	// circuitBreakerPolicy.
	GlobalCircuitBreakers *contour_v1alpha1.CircuitBreakers `json:"globalCircuitBreakers,omitempty"`
	// ClientCertificate is "namespace/name" of the kubernetes.io/tls Secret
	// Envoy presents to h2 extensions.
	ClientCertificate string `json:"clientCertificate,omitempty"`
	// UpstreamTLS holds TLS parameters for h2 extensions.
	UpstreamTLS *contour_v1alpha1.EnvoyTLS `json:"upstreamTLS,omitempty"`
	// ExtensionDefaults are the option groups of ExtensionServices that set
	// a group neither in spec.options nor in "tributary.dev/" annotations.
	// Contour's configuration has no such field, so it is set in code; a
	// settings file spells it with the API's JSON names (tributary
	// translate --settings reads it).
	ExtensionDefaults *tributaryv1.ExtensionOptions `json:"-"`
	// EnableExternalNameTargets allows ExternalName Services as targets
	// (off by default, as in Contour).
	EnableExternalNameTargets bool `json:"enableExternalNameTargets,omitempty"`
}

// Settings converts a Config; nil gives nil, which the service reads as
// every default.
func Settings(c *Config) *tributaryv1.Settings {
	if c == nil {
		return nil
	}
	out := &tributaryv1.Settings{
		XdsClusterName:        c.XDSClusterName,
		ConnectTimeout:        c.ConnectTimeout,
		GlobalCircuitBreakers: circuitBreakers(c.GlobalCircuitBreakers),
		ClientCertificate:     c.ClientCertificate,
		// Cloned, so that changing the Config later leaves the message as
		// it is, as with every other field.
		ExtensionDefaults:         proto.CloneOf(c.ExtensionDefaults),
		EnableExternalNameTargets: c.EnableExternalNameTargets,
	}
	if t := c.UpstreamTLS; t != nil {
		out.UpstreamTls = &tributaryv1.UpstreamTLS{
			MinimumProtocolVersion: t.MinimumProtocolVersion,
			MaximumProtocolVersion: t.MaximumProtocolVersion,
			CipherSuites:           slices.Clone(t.CipherSuites),
		}
	}
	return out
}
