package tlsfiles

import (
	"errors"
	"io"
	"net"

	"google.golang.org/grpc/credentials"
)

// TransportCredentials returns gRPC server credentials over
// ServerConfig(allowedClientSANs), for grpc.Creds. One Reloader can serve
// several listeners (the API and xDS), each with its own allowlist: every
// handshake on any of them uses the current material.
//
// A refused handshake is logged with the client's address, the listener's
// (each may have its own allowlist) and the reason
// (no certificate, an untrusted CA, a SAN not allowed): gRPC itself drops
// such connections silently, which leaves an operator guessing why a client
// cannot connect. A client that connects and leaves without a handshake (a
// TCP probe) is logged at debug level only.
func (r *Reloader) TransportCredentials(allowedClientSANs []string) (credentials.TransportCredentials, error) {
	config, err := r.ServerConfig(allowedClientSANs)
	if err != nil {
		return nil, err
	}
	return &loggingCredentials{TransportCredentials: credentials.NewTLS(config), reloader: r}, nil
}

type loggingCredentials struct {
	credentials.TransportCredentials
	reloader *Reloader
}

func (c *loggingCredentials) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		log := c.reloader.logger.Warn
		if errors.Is(err, io.EOF) {
			log = c.reloader.logger.Debug
		}
		log("TLS handshake refused", "remote", raw.RemoteAddr().String(), "local", raw.LocalAddr().String(), "error", err)
	}
	return conn, info, err
}

func (c *loggingCredentials) Clone() credentials.TransportCredentials {
	return &loggingCredentials{TransportCredentials: c.TransportCredentials.Clone(), reloader: c.reloader}
}
