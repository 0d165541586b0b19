package tlsfiles_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/internal/tlsfiles"
	"github.com/tributary-dev/tributary/internal/tlsfiles/testcerts"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline: it waits for something asynchronous, it does not time it.
func waitFor(t *testing.T, what string, cond func() bool, logs ...*testproc.Buffer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			for _, l := range logs {
				t.Logf("log:\n%s", l)
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fixture is a server identity in files, under a CA clients trust.
type fixture struct {
	dir                             string
	ca                              *testcerts.CA
	server                          *testcerts.Pair
	certFile, keyFile, clientCAFile string
	logs                            *testproc.Buffer
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{dir: t.TempDir(), ca: testcerts.NewCA(t, "tributary test CA"), logs: &testproc.Buffer{}}
	f.server = f.ca.Server(t)
	f.certFile, f.keyFile = f.server.Write(t, f.dir)
	f.clientCAFile = filepath.Join(f.dir, "client-ca.pem")
	testcerts.WriteFile(t, f.clientCAFile, f.ca.PEM)
	return f
}

func (f *fixture) options() tlsfiles.Options {
	return tlsfiles.Options{
		CertFile: f.certFile, KeyFile: f.keyFile, ClientCAFile: f.clientCAFile,
		PollInterval: 10 * time.Millisecond,
		Logger:       slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// serve serves the health service with r's credentials, admitting the
// client SANs allowed, on a loopback port until the test ends.
func serve(t *testing.T, r *tlsfiles.Reloader, allowed ...string) (addr string, hs *health.Server) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	creds, err := r.TransportCredentials(allowed)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(creds))
	hs = health.NewServer()
	healthpb.RegisterHealthServer(s, hs)
	done := make(chan struct{})
	go func() { _ = s.Serve(lis); close(done) }()
	t.Cleanup(func() { s.Stop(); <-done })
	return lis.Addr().String(), hs
}

// dial connects to addr trusting roots and presenting client, if any.
func dial(t *testing.T, addr string, roots *testcerts.CA, client *testcerts.Pair) *grpc.ClientConn {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(roots.Cert)
	config := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if client != nil {
		// Present the certificate whatever CAs the server asks for: Go's
		// client would otherwise keep back one from an unrelated CA.
		cert := client.TLS(t)
		config.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(config)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// check calls the health service, returning the server's certificate.
func check(ctx context.Context, conn *grpc.ClientConn) (*x509.Certificate, error) {
	var p peer.Peer
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p)); err != nil {
		return nil, err
	}
	return p.AuthInfo.(credentials.TLSInfo).State.PeerCertificates[0], nil
}

func TestNewRefusesBadOptions(t *testing.T) {
	f := newFixture(t)
	missing := filepath.Join(f.dir, "missing.pem")
	_, otherKey := f.ca.Server(t).Write(t, t.TempDir())
	tests := []struct {
		name    string
		opts    tlsfiles.Options
		wantErr string
	}{
		{"no key", tlsfiles.Options{CertFile: f.certFile}, "tlsfiles: a certificate file and a key file are both required"},
		{"missing certificate", tlsfiles.Options{CertFile: missing, KeyFile: f.keyFile},
			"tlsfiles: reading the certificate: open " + missing + ": no such file or directory"},
		{"key of another certificate", tlsfiles.Options{CertFile: f.certFile, KeyFile: otherKey},
			"private key does not match public key"},
		{"CA file without certificates", tlsfiles.Options{CertFile: f.certFile, KeyFile: f.keyFile, ClientCAFile: f.keyFile},
			"tlsfiles: client CA bundle " + f.keyFile + " holds no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tlsfiles.New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestServerConfigRefusesBadAllowlists: an allowlist needs mutual TLS and
// names no empty SAN.
func TestServerConfigRefusesBadAllowlists(t *testing.T) {
	f := newFixture(t)
	serverOnly := f.options()
	serverOnly.ClientCAFile = ""
	tests := []struct {
		name    string
		opts    tlsfiles.Options
		sans    []string
		wantErr string
	}{
		{"SANs without CA", serverOnly, []string{"a"},
			"tlsfiles: allowed client SANs need a client CA file: without mutual TLS no client presents a certificate"},
		{"empty SAN", f.options(), []string{"a", ""}, "tlsfiles: an allowed client SAN is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tlsfiles.New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.ServerConfig(tt.sans); err == nil || err.Error() != tt.wantErr {
				t.Errorf("ServerConfig: %v, want %q", err, tt.wantErr)
			}
			if _, err := r.TransportCredentials(tt.sans); err == nil || err.Error() != tt.wantErr {
				t.Errorf("TransportCredentials: %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestMutualTLS: with a client CA and an allowlist, only clients with a
// certificate from that CA naming an allowed DNS or URI SAN are served;
// every refusal is logged with its reason, and the server goes on serving.
func TestMutualTLS(t *testing.T) {
	f := newFixture(t)
	const allowedURI = "spiffe://cluster.local/ns/projectcontour/sa/contour"
	r, err := tlsfiles.New(f.options())
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serve(t, r, "contour.projectcontour.svc", allowedURI)
	otherCA := testcerts.NewCA(t, "unrelated CA")

	tests := []struct {
		name    string
		client  *testcerts.Pair
		wantErr string // the logged reason; "" when served
	}{
		{"no client certificate", nil, "tls: client didn't provide a certificate"},
		{"certificate from an unrelated CA", otherCA.Client(t, "intruder", []string{"contour.projectcontour.svc"}, allowedURI),
			"tls: failed to verify certificate: x509: certificate signed by unknown authority"},
		{"SAN not allowed", f.ca.Client(t, "other", []string{"other.example.com"}, "spiffe://cluster.local/ns/x/sa/y"),
			`client certificate "CN=other" is not allowed: none of its SANs (other.example.com, spiffe://cluster.local/ns/x/sa/y) is an allowed client identity`},
		{"no SAN at all", f.ca.Client(t, "bare", nil),
			`client certificate "CN=bare" is not allowed: none of its SANs (none) is an allowed client identity`},
		{"allowed DNS SAN", f.ca.Client(t, "contour", []string{"unlisted.example.com", "contour.projectcontour.svc"}), ""},
		{"allowed URI SAN", f.ca.Client(t, "spiffe", nil, allowedURI), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := check(t.Context(), dial(t, addr, f.ca, tt.client))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Check: %v, want served", err)
				}
				return
			}
			if status.Code(err) != codes.Unavailable {
				t.Errorf("Check: %v, want Unavailable (connection refused in the handshake)", err)
			}
			waitFor(t, "the refusal in the log", func() bool {
				return strings.Contains(f.logs.String(), `level=WARN msg="TLS handshake refused" remote=127.0.0.1:`) &&
					strings.Contains(f.logs.String(), " error="+strconv.Quote(tt.wantErr)+"\n")
			}, f.logs)
		})
	}
}

// TestListenersHaveTheirOwnAllowlists: one Reloader serves three
// listeners, one admitting Contour's certificate, one Envoy's, and one any
// certificate of the client CA: each client gets into exactly the
// listeners that name it.
func TestListenersHaveTheirOwnAllowlists(t *testing.T) {
	f := newFixture(t)
	r, err := tlsfiles.New(f.options())
	if err != nil {
		t.Fatal(err)
	}
	contourPort, _ := serve(t, r, "contour")
	envoyPort, _ := serve(t, r, "envoy")
	anyPort, _ := serve(t, r)
	contour, envoy := f.ca.Client(t, "contour", []string{"contour"}), f.ca.Client(t, "envoy", []string{"envoy"})
	for _, tt := range []struct {
		port, name string
		client     *testcerts.Pair
		served     bool
	}{
		{contourPort, "Contour on Contour's port", contour, true},
		{contourPort, "Envoy on Contour's port", envoy, false},
		{envoyPort, "Contour on Envoy's port", contour, false},
		{envoyPort, "Envoy on Envoy's port", envoy, true},
		{anyPort, "Contour on the open port", contour, true},
		{anyPort, "Envoy on the open port", envoy, true},
	} {
		_, err := check(t.Context(), dial(t, tt.port, f.ca, tt.client))
		if tt.served && err != nil {
			t.Errorf("%s: %v, want served", tt.name, err)
		}
		if !tt.served && status.Code(err) != codes.Unavailable {
			t.Errorf("%s: %v, want Unavailable", tt.name, err)
		}
	}
}

// TestServerOnlyTLS: without a client CA, clients need no certificate, and
// a client that does not trust the server's CA refuses the server.
func TestServerOnlyTLS(t *testing.T) {
	f := newFixture(t)
	opts := f.options()
	opts.ClientCAFile = ""
	r, err := tlsfiles.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serve(t, r)
	got, err := check(t.Context(), dial(t, addr, f.ca, nil))
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if !got.Equal(f.server.Cert) {
		t.Errorf("server presented %v, want %v", got.Subject, f.server.Cert.Subject)
	}
	if _, err := check(t.Context(), dial(t, addr, testcerts.NewCA(t, "other"), nil)); status.Code(err) != codes.Unavailable {
		t.Errorf("client trusting another CA: %v, want Unavailable", err)
	}
}

// TestRotation: new certificate, key and client CA files are picked up
// without a restart: new connections get the new server certificate and
// are checked against the new CA, while a stream opened before goes on.
func TestRotation(t *testing.T) {
	f := newFixture(t)
	r, err := tlsfiles.New(f.options())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	running := make(chan struct{})
	go func() { r.Run(ctx); close(running) }()
	defer func() { cancel(); <-running }()
	addr, hs := serve(t, r)

	// A stream opened on the old material.
	oldClient := f.ca.Client(t, "old", nil)
	oldConn := dial(t, addr, f.ca, oldClient)
	watch, err := healthpb.NewHealthClient(oldConn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := watch.Recv(); err != nil || got.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Watch: %v, %v", got, err)
	}

	// A half-done rotation (the certificate of a new pair beside the old
	// key) is refused and logged once; the old certificate stays in use.
	newCA := testcerts.NewCA(t, "next CA")
	next := newCA.Server(t)
	testcerts.WriteFile(t, f.certFile, next.CertPEM)
	waitFor(t, "the failed reload in the log", func() bool {
		return strings.Contains(f.logs.String(), "private key does not match public key")
	})
	if got, err := check(ctx, dial(t, addr, f.ca, f.ca.Client(t, "during", nil))); err != nil || got.SerialNumber.Cmp(f.server.Cert.SerialNumber) != 0 {
		t.Fatalf("during a half-done rotation: %v, %v; want the old certificate", got, err)
	}

	// Complete the rotation, with a new client CA. The CA goes first: the
	// poller may run between any two writes, and while the key is still the
	// old one nothing loads, so the key's write makes the new pair and the
	// new CA current together. (Written last, the CA could trail the pair
	// by one poll, and a client of the new CA be refused meanwhile.)
	testcerts.WriteFile(t, f.clientCAFile, newCA.PEM)
	testcerts.WriteFile(t, f.keyFile, next.KeyPEM)
	waitFor(t, "the reload", func() bool { return r.Certificate().SerialNumber.Cmp(next.Cert.SerialNumber) == 0 })
	got, err := check(ctx, dial(t, addr, newCA, newCA.Client(t, "new", nil)))
	if err != nil {
		t.Fatalf("new connection after rotation: %v", err)
	}
	if got.SerialNumber.Cmp(next.Cert.SerialNumber) != 0 {
		t.Errorf("new connection got serial %v, want the new %v", got.SerialNumber, next.Cert.SerialNumber)
	}
	if n := strings.Count(f.logs.String(), "private key does not match public key"); n != 1 {
		t.Errorf("the failed reload was logged %d times, want once:\n%s", n, f.logs.String())
	}
	// Clients of the old CA are refused from now on.
	if _, err := check(ctx, dial(t, addr, newCA, f.ca.Client(t, "stale", nil))); status.Code(err) != codes.Unavailable {
		t.Errorf("client of the retired CA: %v, want Unavailable", err)
	}

	// The stream opened before the rotation still works.
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if got, err := watch.Recv(); err != nil || got.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("old stream after rotation: %v, %v", got, err)
	}
	// And its connection still carries the old server certificate.
	if got, err := check(ctx, oldConn); err != nil || got.SerialNumber.Cmp(f.server.Cert.SerialNumber) != 0 {
		t.Errorf("old connection: %v, %v; want it unchanged, with the old certificate", got, err)
	}
}

// TestReloadReportsChange: Reload says whether anything changed, so
// rewriting identical contents is not a reload.
func TestReloadReportsChange(t *testing.T) {
	f := newFixture(t)
	r, err := tlsfiles.New(f.options())
	if err != nil {
		t.Fatal(err)
	}
	testcerts.WriteFile(t, f.certFile, f.server.CertPEM)
	if changed, err := r.Reload(); changed || err != nil {
		t.Errorf("Reload of identical files = %v, %v; want false, nil", changed, err)
	}
	f.ca.Server(t).Write(t, f.dir)
	if changed, err := r.Reload(); !changed || err != nil {
		t.Errorf("Reload of a new pair = %v, %v; want true, nil", changed, err)
	}
	if n := strings.Count(f.logs.String(), `msg="TLS material reloaded"`); n != 1 {
		t.Errorf("%d reload lines, want 1:\n%s", n, f.logs.String())
	}
}

// TestOnLoad: OnLoad sees the leaf of every load that takes effect, the
// first included, and nothing when the files are rewritten unchanged.
func TestOnLoad(t *testing.T) {
	f := newFixture(t)
	var loaded []string
	opts := f.options()
	opts.OnLoad = func(leaf *x509.Certificate) { loaded = append(loaded, leaf.SerialNumber.String()) }
	r, err := tlsfiles.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	testcerts.WriteFile(t, f.certFile, f.server.CertPEM)
	if _, err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	next := f.ca.Server(t)
	next.Write(t, f.dir)
	if _, err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	if want := []string{f.server.Cert.SerialNumber.String(), next.Cert.SerialNumber.String()}; !slices.Equal(loaded, want) {
		t.Errorf("OnLoad saw serials %q, want %q (the first load, then the new pair only)", loaded, want)
	}
}

// TestClientCABlocksThatDoNotParse: a client CA bundle with PEM blocks that
// are not certificates, or do not parse, loads the certificates that do and
// says in the log how many blocks it ignored and why; clients of the good CA
// are served.
func TestClientCABlocksThatDoNotParse(t *testing.T) {
	f := newFixture(t)
	bundle := append(append([]byte{}, f.ca.PEM...), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")})...)
	bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("x")})...)
	testcerts.WriteFile(t, f.clientCAFile, bundle)
	r, err := tlsfiles.New(f.options())
	if err != nil {
		t.Fatal(err)
	}
	want := `level=WARN msg="client CA bundle holds PEM blocks that are not certificates or do not parse; they are ignored" file=` + f.clientCAFile + ` ignored=2 error="x509: malformed certificate"`
	if !strings.Contains(f.logs.String(), want) {
		t.Errorf("log lacks %s; log:\n%s", want, f.logs.String())
	}
	addr, _ := serve(t, r)
	if _, err := check(t.Context(), dial(t, addr, f.ca, f.ca.Client(t, "contour", []string{"contour"}))); err != nil {
		t.Errorf("a client of the CA that parses: %v", err)
	}
}
