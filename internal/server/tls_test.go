package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/internal/tlsfiles"
	"github.com/tributary-dev/tributary/internal/tlsfiles/testcerts"
)

const contourSPIFFE = "spiffe://cluster.local/ns/projectcontour/sa/contour"

// mtlsServer is a server with mutual TLS from files that allow one SAN.
type mtlsServer struct {
	addr     string
	ca       *testcerts.CA
	server   *testcerts.Pair
	reloader *tlsfiles.Reloader
	dir      string
	logs     *testproc.Buffer
}

func newMTLSServer(t *testing.T) *mtlsServer {
	t.Helper()
	m := &mtlsServer{ca: testcerts.NewCA(t, "test CA"), dir: t.TempDir(), logs: &testproc.Buffer{}}
	m.server = m.ca.Server(t)
	certFile, keyFile := m.server.Write(t, m.dir)
	caFile := filepath.Join(m.dir, "ca.pem")
	testcerts.WriteFile(t, caFile, m.ca.PEM)
	logger := slog.New(slog.NewTextHandler(m.logs, nil))
	r, err := tlsfiles.New(tlsfiles.Options{
		CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile,
		PollInterval: 10 * time.Millisecond, Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	m.reloader = r
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { r.Run(ctx); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	creds, err := r.TransportCredentials([]string{contourSPIFFE})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, NewGRPCServer(Options{Logger: logger, Credentials: creds}), lis)
	m.addr = lis.Addr().String()
	return m
}

// dial connects trusting the test CA and presenting client, if any, even
// to a server that asks for certificates of another CA.
func (m *mtlsServer) dial(t *testing.T, client *testcerts.Pair) *grpc.ClientConn {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(m.ca.Cert)
	config := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if client != nil {
		cert := client.TLS(t)
		config.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	conn, err := grpc.NewClient(m.addr, grpc.WithTransportCredentials(credentials.NewTLS(config)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// serverSerial calls Translate on conn and returns the serial number of the
// certificate the server presented on it.
func serverSerial(ctx context.Context, conn *grpc.ClientConn) (string, error) {
	var p peer.Peer
	if _, err := tributaryv1.NewTranslationServiceClient(conn).Translate(ctx, &tributaryv1.TranslateRequest{}, grpc.Peer(&p)); err != nil {
		return "", err
	}
	return p.AuthInfo.(credentials.TLSInfo).State.PeerCertificates[0].SerialNumber.String(), nil
}

// TestMutualTLSRefusals: the server refuses, in the handshake, a client
// without a certificate, one whose certificate another CA signed and one
// whose SANs are not allowed, logging why; an allowed client is served.
func TestMutualTLSRefusals(t *testing.T) {
	m := newMTLSServer(t)
	tests := []struct {
		name    string
		client  *testcerts.Pair
		wantErr string // logged; "" when served
	}{
		{"no client certificate", nil, "tls: client didn't provide a certificate"},
		{"wrong CA", testcerts.NewCA(t, "other CA").Client(t, "contour", nil, contourSPIFFE),
			"tls: failed to verify certificate: x509: certificate signed by unknown authority"},
		{"SAN not allowed", m.ca.Client(t, "envoy", nil, "spiffe://cluster.local/ns/projectcontour/sa/envoy"),
			`client certificate "CN=envoy" is not allowed: none of its SANs (spiffe://cluster.local/ns/projectcontour/sa/envoy) is an allowed client identity`},
		{"allowed SAN", m.ca.Client(t, "contour", nil, contourSPIFFE), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := serverSerial(t.Context(), m.dial(t, tt.client))
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("Translate: %v, want served", err)
				}
				return
			}
			if status.Code(err) != codes.Unavailable {
				t.Errorf("Translate: %v, want Unavailable", err)
			}
			line := `level=WARN msg="TLS handshake refused" remote=127.0.0.1:`
			reason := " error=" + strconv.Quote(tt.wantErr) + "\n"
			testproc.WaitFor(t, "the refusal in the log", func() bool {
				logs := m.logs.String()
				return strings.Contains(logs, line) && strings.Contains(logs, reason)
			})
		})
	}
}

// TestCertificateRotation: after the certificate files are replaced, new
// connections get the new certificate, while a Sync stream opened before
// the rotation goes on over its connection.
func TestCertificateRotation(t *testing.T) {
	m := newMTLSServer(t)
	client := m.ca.Client(t, "contour", nil, contourSPIFFE)
	oldConn := m.dial(t, client)
	stream := openSync(t.Context(), t, oldConn, nil)
	stream.send(batch(1, service("a")))
	if d := stream.delta(); d.GetBatchId() != 1 {
		t.Fatalf("delta for batch %d, want 1", d.GetBatchId())
	}

	next := m.ca.Server(t)
	next.Write(t, m.dir)
	testproc.WaitFor(t, "the reload", func() bool { return m.reloader.Certificate().SerialNumber.Cmp(next.Cert.SerialNumber) == 0 })

	got, err := serverSerial(t.Context(), m.dial(t, client))
	if err != nil || got != next.Cert.SerialNumber.String() {
		t.Errorf("new connection: serial %s, %v; want the new certificate's %s", got, err, next.Cert.SerialNumber)
	}
	stream.send(batch(2, service("b")))
	if d := stream.delta(); d.GetBatchId() != 2 {
		t.Errorf("old stream after rotation: delta for batch %d, want 2", d.GetBatchId())
	}
	if got, err := serverSerial(t.Context(), oldConn); err != nil || got != m.server.Cert.SerialNumber.String() {
		t.Errorf("old connection: serial %s, %v; want it unchanged, %s", got, err, m.server.Cert.SerialNumber)
	}
	stream.closeAndEnd()
}
