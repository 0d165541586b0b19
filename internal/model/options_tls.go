package model

// extensionClientCertificate resolves the tls group's clientCertificate:
// set reports whether the ExtensionService has one of its own (which then
// replaces the clientCertificate setting), and sdsName is its SDS name, ""
// when it is invalid (an error on cond).
func (b *Builder) extensionClientCertificate(namespace string, opts *optionsInForce, cond *Condition) (sdsName string, set bool) {
	return "", false
}

// extensionSNI is the tls group's sni; set is false without one.
func extensionSNI(opts *optionsInForce, protocol Protocol, cond *Condition) (sni string, set bool) {
	return "", false
}

// extensionTLSParams are the TLS parameters in force: the tls group's
// versions and cipher suites when it sets any, else the upstreamTLS
// setting's.
func (b *Builder) extensionTLSParams(opts *optionsInForce, protocol Protocol, cond *Condition) *TLSParams {
	return b.tlsParams
}

// checkClientCertificateName checks the form of the tls group's
// clientCertificate ("name" or "namespace/name") without looking the
// Secret up; an error goes on cond.
func checkClientCertificateName(opts *optionsInForce, cond *Condition) {}
