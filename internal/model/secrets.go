package model

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/tributary-dev/tributary/internal/source"
)

// secretEntry is an indexed Secret with what translation makes of it. Its
// bytes are the same for every ExtensionService that reads it, so they are
// checked once per Secret, not once per reader: 1,000 ExtensionServices
// validating against one 1,000-certificate CA bundle parse it once, not a
// million certificates over. The results live beside the Secret, so
// putting or deleting the Secret drops them with it, and sync.Once makes
// the first reader compute them while the Builders of other goroutines
// wait for that result rather than compute their own.
type secretEntry struct {
	secret *source.Secret

	caOnce sync.Once
	ca     caBundle

	clientOnce sync.Once
	client     clientCertificate
}

// caBundle is what the Secret's ca.crt gives an upstream validation.
type caBundle struct {
	// err is why the Secret cannot be a CA Secret; the rest is then unset.
	err error
	// pem is the bundle Envoy is given: ca.crt as it is, or, when some of
	// its blocks are not certificates that parse, only the ones that are.
	pem []byte
	// skipped describes the blocks left out, "" when there are none.
	skipped string
}

// clientCertificate is what the Secret's tls.crt gives the
// clientCertificate setting.
type clientCertificate struct {
	err     error
	sdsName string
}

// caBundle checks the Secret as a CA Secret: its type, then ca.crt.
func (e *secretEntry) caBundle() *caBundle {
	e.caOnce.Do(func() {
		s := e.secret
		switch {
		case s.Type != secretTypeTLS && s.Type != secretTypeOpaque:
			e.ca.err = fmt.Errorf("secret type is not %q or %q", secretTypeTLS, secretTypeOpaque)
		case len(s.CACrt) == 0:
			e.ca.err = errors.New(`empty "ca.crt" key`)
		default:
			e.ca.pem, e.ca.skipped, e.ca.err = checkCABundle(s.CACrt)
			if e.ca.err != nil {
				e.ca.err = fmt.Errorf("invalid CA certificate bundle: %w", e.ca.err)
			}
		}
	})
	return &e.ca
}

// clientCertificate checks the Secret as the clientCertificate setting's.
// Only tls.crt is read: the private key never reaches this service, so
// unlike Contour it is not checked, and unlike Contour an Opaque Secret is
// refused, since the setting is documented to name a kubernetes.io/tls
// Secret.
func (e *secretEntry) clientCertificate() *clientCertificate {
	e.clientOnce.Do(func() {
		s := e.secret
		switch {
		case s.Type != secretTypeTLS:
			e.client.err = fmt.Errorf("secret type is not %q", secretTypeTLS)
		case s.TLSCrt == nil:
			e.client.err = errors.New("missing TLS certificate")
		default:
			if err := checkServingBundle(s.TLSCrt); err != nil {
				e.client.err = fmt.Errorf("invalid TLS certificate: %w", err)
				return
			}
			e.client.sdsName = sdsSecretName(s.NamespacedName(), s.TLSCrt)
		}
	})
	return &e.client
}

// checkCABundle reads PEM data as a CA bundle: every block must be a
// certificate that parses as X.509 (Contour checks only the block types;
// parsing as well keeps what Envoy would refuse out of the Cluster). With
// no such certificate the bundle is an error, naming the first problem.
// With at least one, the blocks that are not are left out of the bundle
// returned, and skipped says how many and what the first was, for a
// warning: Envoy refuses a whole bundle with one undecodable block in it,
// and silently using part of a bundle would hide a broken Secret.
func checkCABundle(data []byte) (bundle []byte, skipped string, err error) {
	var good []*pem.Block
	var bad int
	var first error
	err = eachPEMBlock(data, func(block *pem.Block, problem error) error {
		if problem == nil {
			if _, problem = x509.ParseCertificate(block.Bytes); problem == nil {
				good = append(good, block)
				return nil
			}
		}
		if bad == 0 {
			first = problem
		}
		bad++
		return nil
	})
	switch {
	case err != nil:
		return nil, "", err
	case len(good) == 0 && first != nil:
		return nil, "", first
	case len(good) == 0:
		return nil, "", errFailedToLocateCertificate
	case bad == 0:
		return data, "", nil
	}
	var b strings.Builder
	for _, block := range good {
		b.Write(pem.EncodeToMemory(block))
	}
	return []byte(b.String()), fmt.Sprintf("%d of %d PEM blocks are not certificates that parse and are left out, the first because: %v",
		bad, bad+len(good), first), nil
}

// errFailedToLocateCertificate is Contour's error for PEM data without a
// certificate.
var errFailedToLocateCertificate = errors.New("failed to locate certificate")
