package main

import (
	"context"
	"crypto/x509"
	"errors"
	"log/slog"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"google.golang.org/grpc/credentials"

	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/tlsfiles"
)

// tlsFlags are serve's TLS flags. The same material secures the gRPC port
// and, when on, the xDS port; each port has its own client allowlist.
type tlsFlags struct {
	certFile, keyFile, clientCAFile         string
	allowedClientSANs, xdsAllowedClientSANs string
}

// registerTLSFlags adds --tls-cert-file, --tls-key-file,
// --tls-client-ca-file, --tls-allowed-client-sans and
// --xds-tls-allowed-client-sans to fs. Without --tls-cert-file, serve
// speaks plaintext.
func registerTLSFlags(fs *pflag.FlagSet) *tlsFlags {
	f := &tlsFlags{}
	fs.StringVar(&f.certFile, "tls-cert-file", "",
		"PEM certificate chain (leaf first) to serve TLS with, on the gRPC and xDS ports; read again every few seconds, so a rotated certificate is used without a restart. Empty (the default) serves plaintext")
	fs.StringVar(&f.keyFile, "tls-key-file", "", "PEM private key of --tls-cert-file")
	fs.StringVar(&f.clientCAFile, "tls-client-ca-file", "",
		"PEM CA bundle for mutual TLS: every client must present a certificate signed by one of these CAs (read again on change too)")
	fs.StringVar(&f.allowedClientSANs, "tls-allowed-client-sans", "",
		"comma-separated DNS or URI SANs (such as contour or spiffe://cluster.local/ns/projectcontour/sa/contour) of which a client certificate must carry one on the gRPC port; needs --tls-client-ca-file. Empty accepts any certificate of the client CAs")
	fs.StringVar(&f.xdsAllowedClientSANs, "xds-tls-allowed-client-sans", "",
		"the same for the xDS port (such as envoy), so that a data plane's certificate cannot open Sync sessions; empty takes --tls-allowed-client-sans")
	return f
}

// serveTLS is the TLS of a running serve: zero when serving plaintext.
type serveTLS struct {
	// grpc and xds secure the two ports, each with its allowlist; nil
	// (plaintext) without TLS.
	grpc, xds credentials.TransportCredentials
	stop      context.CancelFunc
	stopped   chan struct{}
}

// tlsUsageError is a combination of flags that makes no sense, as opposed
// to files that do not load.
type tlsUsageError string

func (e tlsUsageError) Error() string { return string(e) }

// start checks the flags, loads the files and follows them until stop.
// servesXDS tells whether serve has an xDS port for
// --xds-tls-allowed-client-sans to apply to.
func (f *tlsFlags) start(logger *slog.Logger, servesXDS bool, m *metrics.Metrics) (*serveTLS, error) {
	sans, xdsSANs := splitSANs(f.allowedClientSANs), splitSANs(f.xdsAllowedClientSANs)
	switch {
	case f.certFile == "" && f.keyFile != "":
		return nil, tlsUsageError("--tls-key-file needs --tls-cert-file")
	case f.certFile == "" && f.clientCAFile != "":
		return nil, tlsUsageError("--tls-client-ca-file needs --tls-cert-file: mutual TLS is TLS first")
	case f.certFile == "" && sans != nil:
		return nil, tlsUsageError("--tls-allowed-client-sans needs --tls-cert-file and --tls-client-ca-file")
	case f.certFile == "" && xdsSANs != nil:
		return nil, tlsUsageError("--xds-tls-allowed-client-sans needs --tls-cert-file and --tls-client-ca-file")
	case f.certFile == "":
		return &serveTLS{}, nil
	case f.keyFile == "":
		return nil, tlsUsageError("--tls-cert-file needs --tls-key-file")
	case xdsSANs != nil && !servesXDS:
		return nil, tlsUsageError("--xds-tls-allowed-client-sans needs --xds-address")
	}
	if xdsSANs == nil {
		xdsSANs = sans
	}
	for _, allowlist := range []struct {
		flag string
		sans []string
	}{{"--tls-allowed-client-sans", sans}, {"--xds-tls-allowed-client-sans", xdsSANs}} {
		switch {
		case len(allowlist.sans) > 0 && f.clientCAFile == "":
			return nil, tlsUsageError(allowlist.flag + " needs --tls-client-ca-file: without mutual TLS no client presents a certificate")
		case slices.Contains(allowlist.sans, ""):
			return nil, tlsUsageError(allowlist.flag + " holds an empty SAN")
		}
	}
	// Both ports serve the one certificate; each has its series, so an
	// alert names the port that would fail.
	onLoad := func(leaf *x509.Certificate) {
		m.SetCertificateExpiry("grpc", leaf.NotAfter)
		if servesXDS {
			m.SetCertificateExpiry("xds", leaf.NotAfter)
		}
	}
	r, err := tlsfiles.New(tlsfiles.Options{CertFile: f.certFile, KeyFile: f.keyFile, ClientCAFile: f.clientCAFile, Logger: logger, OnLoad: onLoad})
	if err != nil {
		return nil, err
	}
	grpcCreds, err := r.TransportCredentials(sans)
	if err != nil {
		return nil, err
	}
	xdsCreds, err := r.TransportCredentials(xdsSANs)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &serveTLS{grpc: grpcCreds, xds: xdsCreds, stop: cancel, stopped: make(chan struct{})}
	go func() {
		defer close(t.stopped)
		r.Run(ctx)
	}()
	return t, nil
}

// tlsFailure reports why TLS could not start: a usageError for flags that
// make no sense together, exitError after logging for files that do not
// load.
func tlsFailure(err error, logger *slog.Logger) error {
	if usage := tlsUsageError(""); errors.As(err, &usage) {
		return usageError{usage}
	}
	logger.Error("cannot load TLS material", "error", err)
	return exitError{exitFailure}
}

// splitSANs splits a comma-separated flag value; nil when it is empty.
func splitSANs(flag string) []string {
	if flag == "" {
		return nil
	}
	var sans []string
	for san := range strings.SplitSeq(flag, ",") {
		sans = append(sans, strings.TrimSpace(san))
	}
	return sans
}

// close stops following the files.
func (t *serveTLS) close() {
	if t.stop == nil {
		return
	}
	t.stop()
	<-t.stopped
}
