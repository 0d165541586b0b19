package deploy

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// mountAt returns c's volume mount at path, or nil.
func mountAt(c *corev1.Container, path string) *corev1.VolumeMount {
	for i, m := range c.VolumeMounts {
		if filepath.Clean(m.MountPath) == path {
			return &c.VolumeMounts[i]
		}
	}
	return nil
}

// volume returns the pod's volume called name, or nil.
func volume(d *appsv1.Deployment, name string) *corev1.Volume {
	for i, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return &d.Spec.Template.Spec.Volumes[i]
		}
	}
	return nil
}

// rewriteArg makes a container argument runnable here: a listen address
// on every interface becomes port 0 on loopback (the flag's name recorded
// in listens, for listenedAddresses), and an absolute path becomes the file
// of that name in tlsDir. Everything else is passed through as the manifest
// wrote it.
func rewriteArg(arg, tlsDir string, listens map[string]string) string {
	name, value, ok := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
	switch {
	case !ok:
		return arg
	case strings.HasPrefix(value, "0.0.0.0:"):
		listens[name] = ""
		return "--" + name + "=127.0.0.1:0"
	case strings.HasPrefix(value, "/"):
		return "--" + name + "=" + filepath.Join(tlsDir, filepath.Base(value))
	}
	return arg
}

// writeTLSFiles writes what the tributary-tls Secret holds: a CA
// (ca.crt) and a server certificate it signed (tls.crt, tls.key), plus two
// client certificates from the same CA with the DNS SANs Contour's certgen
// gives them: contour.crt and contour.key ("contour"), envoy.crt and
// envoy.key ("envoy").
func writeTLSFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "deploy test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER)
	for i, leaf := range []struct {
		name  string
		sans  []string
		usage x509.ExtKeyUsage
	}{
		{"tls", []string{"tributary", "tributary-sync.tributary.svc.cluster.local"}, x509.ExtKeyUsageServerAuth},
		{"contour", []string{"contour"}, x509.ExtKeyUsageClientAuth},
		{"envoy", []string{"envoy"}, x509.ExtKeyUsageClientAuth},
	} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
			SerialNumber: big.NewInt(int64(i + 2)),
			Subject:      pkix.Name{CommonName: leaf.sans[0]},
			DNSNames:     leaf.sans,
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{leaf.usage},
		}, caTemplate, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, filepath.Join(dir, leaf.name+".crt"), "CERTIFICATE", der)
		writePEM(t, filepath.Join(dir, leaf.name+".key"), "PRIVATE KEY", keyDER)
	}
	return dir
}

func writePEM(t *testing.T, path, blockType string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// checkMutualTLS connects to addr as a gRPC client would, trusting the CA
// of tlsDir and verifying the server name "tributary": with the client
// certificate of tlsDir named allowed the server must accept the connection
// (it sends HTTP/2 settings); without one, or with one named in refused, it
// must refuse it.
func checkMutualTLS(t *testing.T, addr, tlsDir, allowed string, refused ...string) {
	t.Helper()
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(tlsDir, "ca.crt"))
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("ca.crt: %v", err)
	}
	load := func(name string) tls.Certificate {
		cert, err := tls.LoadX509KeyPair(filepath.Join(tlsDir, name+".crt"), filepath.Join(tlsDir, name+".key"))
		if err != nil {
			t.Fatal(err)
		}
		return cert
	}
	firstByte := func(certs []tls.Certificate) error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, &tls.Config{
			RootCAs: pool, ServerName: "tributary", NextProtos: []string{"h2"}, Certificates: certs,
		})
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close() }()
		if _, err := conn.Write([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")); err != nil {
			return err
		}
		if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			return err
		}
		_, err = conn.Read(make([]byte, 1))
		return err
	}
	if err := firstByte([]tls.Certificate{load(allowed)}); err != nil {
		t.Errorf("%s: %s's certificate was refused: %v", addr, allowed, err)
	}
	if err := firstByte(nil); err == nil {
		t.Errorf("%s: a client without a certificate was served", addr)
	}
	for _, name := range refused {
		if err := firstByte([]tls.Certificate{load(name)}); err == nil {
			t.Errorf("%s: %s's certificate was accepted", addr, name)
		}
	}
}

// waitForOK polls url until it answers 200, as a kubelet probe would
// (any other answer is a failure the kubelet retries too). It gives up
// when the process exits or after a minute, a bound on a machine that is
// slow, not an expectation of how fast the server starts.
func waitForOK(url string, p *process) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(time.Minute)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("tributary exited (%s) before GET %s answered 200; last answer: %w", p.cmd.ProcessState, url, last)
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(body))
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("GET %s did not answer 200 within a minute: %w", url, last)
}

// process is a started command whose end can be waited for by several
// goroutines: done is closed once it has exited, with err from Wait.
type process struct {
	cmd    *exec.Cmd
	stderr lockedBuffer
	done   chan struct{}
	err    error
}

// start starts bin with args and ends it, if still running, when the test
// ends; a failed test logs the command and what it wrote to stderr.
func start(t *testing.T, bin string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s %s\n%s", filepath.Base(bin), strings.Join(args, " "), p.stderr.String())
		}
	})
	return p
}

// servingMessages are the log messages with which tributary serve reports
// the address each listen flag got.
var servingMessages = map[string]string{"address": "serving gRPC", "metrics-address": "serving metrics", "xds-address": "serving xDS"}

// listenedAddresses fills listens (flag name → address) from p's log, once
// it has reported every listener: the kernel picks the ports, so no other
// process can take one between choosing and binding it. It reads both log
// formats, text (msg="serving gRPC" address=...) and JSON.
func listenedAddresses(t *testing.T, p *process, listens map[string]string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for name := range listens {
		msg, ok := servingMessages[name]
		if !ok {
			t.Fatalf("--%s: no log message reports its address", name)
		}
		for listens[name] == "" {
			if address := loggedAddress(p.stderr.String(), msg); address != "" {
				listens[name] = address
				break
			}
			select {
			case <-p.done:
				t.Fatalf("tributary exited before reporting --%s's address: %v", name, p.err)
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("tributary reported no address for --%s within a minute", name)
			}
		}
	}
}

// loggedAddress returns the address attribute of the first log record
// with message msg, or "" when there is none yet.
func loggedAddress(log, msg string) string {
	text := regexp.MustCompile(`msg="` + regexp.QuoteMeta(msg) + `" address=(\S+)`)
	for _, line := range strings.Split(log, "\n") {
		if strings.HasPrefix(line, "{") {
			var record struct{ Msg, Address string }
			if json.Unmarshal([]byte(line), &record) == nil && record.Msg == msg {
				return record.Address
			}
			continue
		}
		if m := text.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return ""
}

// lockedBuffer is a bytes.Buffer that the process's output copier and the
// test can use at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestLoggedAddress(t *testing.T) {
	const text = `time=2026-01-02T03:04:05Z level=INFO msg="serving gRPC" address=127.0.0.1:4001 max_message_size=32Mi
time=2026-01-02T03:04:05Z level=INFO msg="serving metrics" address=127.0.0.1:4002
`
	const jsonLog = `{"time":"2026-01-02T03:04:05Z","level":"INFO","msg":"serving gRPC","address":"127.0.0.1:5001"}
{"time":"2026-01-02T03:04:05Z","level":"INFO","msg":"serving xDS","address":"127.0.0.1:5003"}
`
	for _, c := range []struct{ log, msg, want string }{
		{text, "serving gRPC", "127.0.0.1:4001"},
		{text, "serving metrics", "127.0.0.1:4002"},
		{text, "serving xDS", ""},
		{jsonLog, "serving gRPC", "127.0.0.1:5001"},
		{jsonLog, "serving xDS", "127.0.0.1:5003"},
		{jsonLog, "serving metrics", ""},
		{`{"msg":"serving gRPC"`, "serving gRPC", ""},
	} {
		if got := loggedAddress(c.log, c.msg); got != c.want {
			t.Errorf("loggedAddress(%q, %q) = %q, want %q", c.log, c.msg, got, c.want)
		}
	}
}
