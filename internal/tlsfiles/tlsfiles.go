// Package tlsfiles serves a TLS identity (certificate, key and, for mutual
// TLS, a client CA bundle) that lives in files, and follows those files as
// they are rotated, so a certificate can be renewed without a restart.
//
// The files are read again every PollInterval. Each new handshake uses the
// material last loaded; connections already established keep the session
// they negotiated, so rotation never interrupts a running stream. Material
// that does not load (a certificate written before its key, a file briefly
// missing during a rename) is reported and ignored: the previous material
// stays in use until the files hold a consistent set again.
package tlsfiles

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPollInterval is how often the files are read again unless Options
// say otherwise. Reading three small files costs nothing noticeable, and a
// few seconds is well below how fast Kubernetes propagates a Secret update
// to a mounted volume (up to a minute).
const DefaultPollInterval = 2 * time.Second

// Options name the files. Which client identities a listener accepts is
// its own: see ServerConfig.
type Options struct {
	// CertFile and KeyFile hold the server's certificate chain (PEM, leaf
	// first) and its private key (PEM). Both are required.
	CertFile, KeyFile string
	// ClientCAFile, when set, turns on mutual TLS: every client must present
	// a certificate, valid for client authentication, that chains to one of
	// the PEM certificates in this file. Empty means clients are not asked
	// for certificates.
	ClientCAFile string
	// PollInterval is how often the files are read again; 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Logger receives reloads (not the first load), failed reloads and
	// refused handshakes; nil means slog.Default().
	Logger *slog.Logger
	// OnLoad, when set, is called with the leaf certificate each time new
	// material takes effect, the first load (in New) included, so a
	// caller can export what it serves (its expiry, say). It runs while
	// reloads wait for it: it must not block.
	OnLoad func(leaf *x509.Certificate)
}

// Reloader holds the current TLS material and reloads it from its files.
// Its methods are safe for concurrent use.
type Reloader struct {
	opts   Options
	logger *slog.Logger

	// current is what new handshakes use; it is replaced whole, never
	// modified, so a handshake sees one consistent set.
	current atomic.Pointer[material]
	// reloadMu serialises Reload, so two reloads never race to install
	// older contents over newer ones.
	reloadMu sync.Mutex
}

// material is one consistent set of loaded files.
type material struct {
	// contents of the certificate, key and client CA files, to tell
	// whether they changed since.
	cert, key, clientCA []byte
	// config is served to every handshake while this material is current.
	config *tls.Config
	leaf   *x509.Certificate
}

// New checks opts, loads the files once and returns a Reloader serving
// them. It fails when the options are inconsistent or the files do not
// load: a server must not start with an identity it cannot present.
func New(opts Options) (*Reloader, error) {
	switch {
	case opts.CertFile == "" || opts.KeyFile == "":
		return nil, errors.New("tlsfiles: a certificate file and a key file are both required")
	}
	r := &Reloader{opts: opts, logger: opts.Logger}
	if r.logger == nil {
		r.logger = slog.Default()
	}
	if _, err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// Reload reads the files now and, if their contents changed and load
// together, makes them current for new handshakes. It reports whether the
// material changed. On error the previous material stays current.
func (r *Reloader) Reload() (changed bool, err error) {
	r.reloadMu.Lock()
	defer r.reloadMu.Unlock()
	certPEM, err := os.ReadFile(r.opts.CertFile)
	if err != nil {
		return false, fmt.Errorf("tlsfiles: reading the certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(r.opts.KeyFile)
	if err != nil {
		return false, fmt.Errorf("tlsfiles: reading the key: %w", err)
	}
	var caPEM []byte
	if r.opts.ClientCAFile != "" {
		if caPEM, err = os.ReadFile(r.opts.ClientCAFile); err != nil {
			return false, fmt.Errorf("tlsfiles: reading the client CA bundle: %w", err)
		}
	}
	old := r.current.Load()
	if old != nil && bytes.Equal(old.cert, certPEM) && bytes.Equal(old.key, keyPEM) && bytes.Equal(old.clientCA, caPEM) {
		return false, nil
	}
	m, err := r.load(certPEM, keyPEM, caPEM)
	if err != nil {
		return false, err
	}
	r.current.Store(m)
	if r.opts.OnLoad != nil {
		r.opts.OnLoad(m.leaf)
	}
	if old == nil {
		// The first load is New's: a server logs its address first.
		return true, nil
	}
	r.logger.Info("TLS material reloaded", "certificate", r.opts.CertFile, "serial", m.leaf.SerialNumber.String(),
		"subject", m.leaf.Subject.String(), "not_after", m.leaf.NotAfter.UTC().Format(time.RFC3339),
		"client_ca", r.opts.ClientCAFile)
	return true, nil
}

// load parses one set of file contents into the config handshakes use.
func (r *Reloader) load(certPEM, keyPEM, caPEM []byte) (*material, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tlsfiles: certificate %s and key %s: %w", r.opts.CertFile, r.opts.KeyFile, err)
	}
	config := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{pair},
		// HTTP/2 is what gRPC speaks; gRPC's credentials add it too, but the
		// config is then right for any caller.
		NextProtos: []string{"h2"},
		// Without resumption, every connection is verified against the
		// current client CAs and allowlist, not those of an earlier session.
		// gRPC connections are long-lived, so resumption would save little.
		SessionTicketsDisabled: true,
	}
	if r.opts.ClientCAFile != "" {
		pool, unparsed, firstErr := parseCABundle(caPEM)
		if pool == nil {
			return nil, fmt.Errorf("tlsfiles: client CA bundle %s holds no PEM certificate", r.opts.ClientCAFile)
		}
		if unparsed > 0 {
			// x509.CertPool.AppendCertsFromPEM skips such blocks without a
			// word: a CA the operator meant to trust would silently not be.
			r.logger.Warn("client CA bundle holds PEM blocks that are not certificates or do not parse; they are ignored",
				"file", r.opts.ClientCAFile, "ignored", unparsed, "error", firstErr)
		}
		config.ClientCAs = pool
		config.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return &material{cert: certPEM, key: keyPEM, clientCA: caPEM, config: config, leaf: pair.Leaf}, nil
}

// allowlist is the client SANs one listener accepts.
type allowlist map[string]bool

// verify accepts a verified client whose leaf certificate has an allowed
// SAN. It runs after chain verification, so the SANs are vouched for by a
// trusted CA.
func (a allowlist) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tlsfiles: no client certificate") // RequireAndVerifyClientCert rules this out
	}
	leaf := cs.PeerCertificates[0]
	sans := make([]string, 0, len(leaf.DNSNames)+len(leaf.URIs))
	for _, name := range leaf.DNSNames {
		if a[name] {
			return nil
		}
		sans = append(sans, name)
	}
	for _, uri := range leaf.URIs {
		if a[uri.String()] {
			return nil
		}
		sans = append(sans, uri.String())
	}
	return &SANNotAllowedError{Subject: leaf.Subject.String(), SANs: sans}
}

// SANNotAllowedError refuses a client whose certificate is trusted but names
// none of the allowed identities.
type SANNotAllowedError struct {
	Subject string
	// SANs are the certificate's DNS and URI SANs.
	SANs []string
}

func (e *SANNotAllowedError) Error() string {
	sans := "none"
	if len(e.SANs) > 0 {
		sans = strings.Join(e.SANs, ", ")
	}
	return fmt.Sprintf("client certificate %q is not allowed: none of its SANs (%s) is an allowed client identity", e.Subject, sans)
}

// ServerConfig returns a tls.Config for one listener: every handshake gets
// the material current when it starts. allowedClientSANs, when not empty,
// restricts mutual TLS on this listener to client certificates whose leaf
// has one of these subject alternative names, compared exactly: DNS names
// ("contour") and URIs ("spiffe://cluster.local/ns/projectcontour/sa/contour").
// The list belongs to the listener, not to the files, so one Reloader can
// admit Contour on one port and Envoy on another. It needs a client CA
// file: without a trusted CA, a SAN proves nothing.
//
// The returned config holds no material of its own; don't add certificates
// to it.
func (r *Reloader) ServerConfig(allowedClientSANs []string) (*tls.Config, error) {
	var allowed allowlist
	if len(allowedClientSANs) > 0 {
		if r.opts.ClientCAFile == "" {
			return nil, errors.New("tlsfiles: allowed client SANs need a client CA file: without mutual TLS no client presents a certificate")
		}
		allowed = make(allowlist, len(allowedClientSANs))
		for _, san := range allowedClientSANs {
			if san == "" {
				return nil, errors.New("tlsfiles: an allowed client SAN is empty")
			}
			allowed[san] = true
		}
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			config := r.current.Load().config
			if allowed == nil {
				return config, nil
			}
			config = config.Clone()
			config.VerifyConnection = allowed.verify
			return config, nil
		},
	}, nil
}

// Certificate returns the leaf certificate new handshakes present.
func (r *Reloader) Certificate() *x509.Certificate {
	return r.current.Load().leaf
}

// Run reloads the files every PollInterval until ctx ends. A failed reload
// is logged once per distinct error (a half-written rotation would otherwise
// log on every poll until it completes) and retried at the next poll.
func (r *Reloader) Run(ctx context.Context) {
	interval := r.opts.PollInterval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if _, err := r.Reload(); err != nil {
			if err.Error() != lastErr {
				r.logger.Warn("TLS material not reloaded; new connections keep the previous certificate", "error", err)
				lastErr = err.Error()
			}
			continue
		}
		lastErr = ""
	}
}

// parseCABundle parses every PEM block of bundle. It returns the pool of
// the certificates that parse (nil when none does), how many blocks were
// left out (not a CERTIFICATE, or not one x509 parses) and the first
// reason why.
func parseCABundle(bundle []byte) (pool *x509.CertPool, unparsed int, firstErr string) {
	for rest := bundle; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return pool, unparsed, firstErr
		}
		if block.Type != "CERTIFICATE" {
			unparsed++
			if firstErr == "" {
				firstErr = fmt.Sprintf("a %.40q block", block.Type)
			}
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			unparsed++
			if firstErr == "" {
				firstErr = err.Error()
			}
			continue
		}
		if pool == nil {
			pool = x509.NewCertPool()
		}
		pool.AddCert(cert)
	}
}
