package deploy

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
// on every interface becomes a free loopback port (recorded in ports under
// the flag's name), and an absolute path becomes the file of that name in
// tlsDir. Everything else is passed through as the manifest wrote it.
func rewriteArg(t *testing.T, arg, tlsDir string, ports map[string]string) string {
	t.Helper()
	name, value, ok := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
	switch {
	case !ok:
		return arg
	case strings.HasPrefix(value, "0.0.0.0:"):
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		ports[name] = addr
		return "--" + name + "=" + addr
	case strings.HasPrefix(value, "/"):
		return "--" + name + "=" + filepath.Join(tlsDir, filepath.Base(value))
	}
	return arg
}

// writeTLSFiles writes what the tributary-tls Secret holds: a CA
// (ca.crt) and a server certificate it signed (tls.crt, tls.key).
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
	serverKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serverDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "tributary"},
		DNSNames:     []string{"tributary-sync.tributary.svc.cluster.local", "tributary-xds.tributary.svc"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, caTemplate, &serverKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(serverKey)
	if err != nil {
		t.Fatal(err)
	}
	for file, block := range map[string]*pem.Block{
		"ca.crt":  {Type: "CERTIFICATE", Bytes: caDER},
		"tls.crt": {Type: "CERTIFICATE", Bytes: serverDER},
		"tls.key": {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
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
			return fmt.Errorf("tributary exited (%v) before GET %s answered 200; last answer: %w", p.err, url, last)
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
