package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/tlsfiles/testcerts"
)

// dialTLS connects to addr trusting ca, presenting client if not nil.
func dialTLS(t *testing.T, addr string, ca *testcerts.CA, client *testcerts.Pair) *grpc.ClientConn {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	config := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if client != nil {
		config.Certificates = []tls.Certificate{client.TLS(t)}
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(config)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func checkHealth(ctx context.Context, conn *grpc.ClientConn, p *peer.Peer) error {
	_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(p))
	return err
}

// TestServeTLS: serve with the TLS flags secures both ports with the
// files' certificate, requires client certificates of the client CA, and
// admits only the allowed SANs.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "test CA")
	server := ca.Server(t)
	certFile, keyFile := server.Write(t, dir)
	caFile := filepath.Join(dir, "ca.crt")
	testcerts.WriteFile(t, caFile, ca.PEM)
	s := startServe(t, "--xds-address", "127.0.0.1:0",
		"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-client-ca-file", caFile,
		"--tls-allowed-client-sans", "contour, spiffe://cluster.local/ns/projectcontour/sa/contour",
		"--xds-tls-allowed-client-sans", "spiffe://cluster.local/ns/projectcontour/sa/envoy")
	contour := ca.Client(t, "contour", []string{"contour"})
	contourSPIFFE := ca.Client(t, "contour-spiffe", nil, "spiffe://cluster.local/ns/projectcontour/sa/contour")
	envoy := ca.Client(t, "envoy", nil, "spiffe://cluster.local/ns/projectcontour/sa/envoy")
	stranger := ca.Client(t, "stranger", []string{"stranger"})

	// The gRPC port: allowed clients are served, with the files' certificate.
	for _, client := range []*testcerts.Pair{contour, contourSPIFFE} {
		var p peer.Peer
		if err := checkHealth(t.Context(), dialTLS(t, s.grpcAddress, ca, client), &p); err != nil {
			t.Fatalf("%s: health check: %v", client.Cert.Subject, err)
		}
		if got := p.AuthInfo.(credentials.TLSInfo).State.PeerCertificates[0]; !got.Equal(server.Cert) {
			t.Errorf("server presented %v, want the --tls-cert-file certificate", got.Subject)
		}
	}
	refused := []struct {
		name string
		conn *grpc.ClientConn
	}{
		{"plaintext", func() *grpc.ClientConn {
			conn, err := grpc.NewClient(s.grpcAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			return conn
		}()},
		{"no client certificate", dialTLS(t, s.grpcAddress, ca, nil)},
		{"SAN not allowed", dialTLS(t, s.grpcAddress, ca, stranger)},
		{"a data plane's certificate", dialTLS(t, s.grpcAddress, ca, envoy)},
	}
	for _, r := range refused {
		if err := checkHealth(t.Context(), r.conn, &peer.Peer{}); status.Code(err) != codes.Unavailable {
			t.Errorf("%s: %v, want Unavailable", r.name, err)
		}
	}
	want := `error=` + strconv.Quote(`client certificate "CN=stranger" is not allowed: none of its SANs (stranger) is an allowed client identity`)
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(s.logs.String(), want); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("log lacks %s:\n%s", want, s.logs.String())
		}
	}

	// The xDS port has the same material and its own allowlist: Envoy
	// gets through the handshake (to a service the port does not serve),
	// Contour and a stranger not.
	if err := checkHealth(t.Context(), dialTLS(t, s.xdsAddress, ca, envoy), &peer.Peer{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("xDS port, allowed client: %v, want Unimplemented (served, but no health service there)", err)
	}
	for _, client := range []*testcerts.Pair{contour, stranger} {
		if err := checkHealth(t.Context(), dialTLS(t, s.xdsAddress, ca, client), &peer.Peer{}); status.Code(err) != codes.Unavailable {
			t.Errorf("xDS port, %s: %v, want Unavailable", client.Cert.Subject, err)
		}
	}
}

// TestServeTLSXDSAllowlistDefault: without --xds-tls-allowed-client-sans
// the xDS port admits the gRPC port's clients.
func TestServeTLSXDSAllowlistDefault(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "test CA")
	certFile, keyFile := ca.Server(t).Write(t, dir)
	caFile := filepath.Join(dir, "ca.crt")
	testcerts.WriteFile(t, caFile, ca.PEM)
	s := startServe(t, "--xds-address", "127.0.0.1:0",
		"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-client-ca-file", caFile, "--tls-allowed-client-sans", "contour")
	if err := checkHealth(t.Context(), dialTLS(t, s.xdsAddress, ca, ca.Client(t, "contour", []string{"contour"})), &peer.Peer{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("xDS port, contour: %v, want Unimplemented (served, but no health service there)", err)
	}
	if err := checkHealth(t.Context(), dialTLS(t, s.xdsAddress, ca, ca.Client(t, "envoy", []string{"envoy"})), &peer.Peer{}); status.Code(err) != codes.Unavailable {
		t.Errorf("xDS port, envoy: %v, want Unavailable", err)
	}
}

// TestServeLimits: the limit flags reach the server.
func TestServeLimits(t *testing.T) {
	s := startServe(t, "--max-sessions", "1", "--max-batch-objects", "1")
	conn, err := grpc.NewClient(s.grpcAddress, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := tributaryv1.NewTranslationServiceClient(conn)

	first, err := client.Sync(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}}); err != nil {
		t.Fatal(err)
	}
	del := func(name string) *tributaryv1.ObjectReference {
		return &tributaryv1.ObjectReference{Kind: tributaryv1.ObjectKind_OBJECT_KIND_SERVICE, Namespace: "ns", Name: name}
	}
	if err := first.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Batch{Batch: &tributaryv1.SyncBatch{Id: 1, Deletes: []*tributaryv1.ObjectReference{del("a"), del("b")}}}}); err != nil {
		t.Fatal(err)
	}
	resp, err := first.Recv()
	if err != nil || resp.GetRejected().GetMessage() != "batch holds 2 upserts and deletes; a batch holds at most 1" {
		t.Errorf("batch of two: %v, %v; want rejected for --max-batch-objects 1", resp, err)
	}

	// A session takes its slot with its SyncStart.
	second, err := client.Sync(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Send(&tributaryv1.SyncRequest{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}}); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if _, err := second.Recv(); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("second session: %v, want ResourceExhausted for --max-sessions 1", err)
	}
	if err := first.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("first session end: %v, want OK", err)
	}
}

// TestServeTLSFlagErrors: flags that make no sense together exit 2 before
// anything is served; files that do not load exit 1.
func TestServeTLSFlagErrors(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "test CA")
	certFile, keyFile := ca.Server(t).Write(t, dir)
	missing := filepath.Join(dir, "missing.crt")
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"key without certificate", []string{"--tls-key-file", keyFile}, 2, "error: --tls-key-file needs --tls-cert-file\n"},
		{"client CA without certificate", []string{"--tls-client-ca-file", certFile}, 2,
			"error: --tls-client-ca-file needs --tls-cert-file: mutual TLS is TLS first\n"},
		{"SANs without certificate", []string{"--tls-allowed-client-sans", "contour"}, 2,
			"error: --tls-allowed-client-sans needs --tls-cert-file and --tls-client-ca-file\n"},
		{"xDS SANs without certificate", []string{"--xds-tls-allowed-client-sans", "envoy"}, 2,
			"error: --xds-tls-allowed-client-sans needs --tls-cert-file and --tls-client-ca-file\n"},
		{"certificate without key", []string{"--tls-cert-file", certFile}, 2, "error: --tls-cert-file needs --tls-key-file\n"},
		{"SANs without client CA", []string{"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-allowed-client-sans", "contour"}, 2,
			"error: --tls-allowed-client-sans needs --tls-client-ca-file: without mutual TLS no client presents a certificate\n"},
		{"empty SAN", []string{"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-client-ca-file", certFile, "--tls-allowed-client-sans", "contour,"}, 2,
			"error: --tls-allowed-client-sans holds an empty SAN\n"},
		{"xDS SANs without client CA", []string{"--xds-address", "127.0.0.1:0", "--tls-cert-file", certFile, "--tls-key-file", keyFile, "--xds-tls-allowed-client-sans", "envoy"}, 2,
			"error: --xds-tls-allowed-client-sans needs --tls-client-ca-file: without mutual TLS no client presents a certificate\n"},
		{"empty xDS SAN", []string{"--xds-address", "127.0.0.1:0", "--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-client-ca-file", certFile, "--xds-tls-allowed-client-sans", ",envoy"}, 2,
			"error: --xds-tls-allowed-client-sans holds an empty SAN\n"},
		{"xDS SANs without an xDS port", []string{"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-client-ca-file", certFile, "--xds-tls-allowed-client-sans", "envoy"}, 2,
			"error: --xds-tls-allowed-client-sans needs --xds-address\n"},
		{"a missing key before an allowlist without CA", []string{"--tls-cert-file", certFile, "--xds-tls-allowed-client-sans", "envoy"}, 2,
			"error: --tls-cert-file needs --tls-key-file\n"},
		{"missing certificate", []string{"--tls-cert-file", missing, "--tls-key-file", keyFile}, 1,
			`msg="cannot load TLS material" error="tlsfiles: reading the certificate: open ` + missing + `: no such file or directory"`},
		{"zero limit", []string{"--max-sessions", "0"}, 2, "error: --max-sessions must be positive, not 0\n"},
		{"bad session bytes", []string{"--max-session-bytes", "lots"}, 2, `"lots" is not a quantity`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCmd(t, "", append([]string{"serve", "--address", "127.0.0.1:0"}, tt.args...)...)
			if got.code != tt.wantCode || !strings.Contains(got.stderr, tt.wantStderr) || strings.Contains(got.stderr, "serving gRPC") {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d before serving, stderr containing %q", got.code, got.stderr, tt.wantCode, tt.wantStderr)
			}
		})
	}
}
