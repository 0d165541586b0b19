package model

// http2Keepalive validates the http2Keepalive group in force; nil without
// one.
func (b *Builder) http2Keepalive(opts *optionsInForce, protocol Protocol, cond *Condition) *HTTP2Keepalive {
	return nil
}

// tcpKeepalive validates the tcpKeepalive group in force; nil without one.
func (b *Builder) tcpKeepalive(opts *optionsInForce, cond *Condition) *TCPKeepalive {
	return nil
}

// connectionLimits validates the connectionLimits group in force; nil
// without one.
func (b *Builder) connectionLimits(opts *optionsInForce, cond *Condition) *ConnectionLimits {
	return nil
}

// slowStart validates the slowStart group in force; nil without one.
func (b *Builder) slowStart(opts *optionsInForce, lb LoadBalancer, cond *Condition) *SlowStart {
	return nil
}
