package model

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // names a certificate, protects nothing
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tributary-dev/tributary/internal/source"
)

// Secret types the lookups accept.
const (
	secretTypeTLS    = "kubernetes.io/tls"
	secretTypeOpaque = "Opaque"
)

// maxSNIBytes is Envoy's limit on UpstreamTlsContext.sni.
const maxSNIBytes = 255

// sdsNameLimit is the length below which an SDS secret name is kept whole,
// Contour's limit for the names it gives secrets.
const sdsNameLimit = 60

// errSecretNotFound is the lookup failure Contour reports as "Secret not found".
var errSecretNotFound = errors.New("Secret not found")

// errNotDelegated means a Secret in another namespace was referenced without
// a TLSCertificateDelegation allowing it.
var errNotDelegated = errors.New("certificate delegation not permitted")

// clientCertificateSDSName checks the Secret the clientCertificate setting
// names and returns the SDS name Envoy fetches it under. Only tls.crt is
// read: the private key never reaches this service, so unlike Contour it is
// not checked, and unlike Contour an Opaque Secret is refused, since the
// setting is documented to name a kubernetes.io/tls Secret.
func (b *Builder) clientCertificateSDSName(name source.NamespacedName) (string, error) {
	secret := b.index.Secret(name)
	if secret == nil {
		return "", errSecretNotFound
	}
	if secret.Type != secretTypeTLS {
		return "", fmt.Errorf("secret type is not %q", secretTypeTLS)
	}
	if secret.TLSCrt == nil {
		return "", errors.New("missing TLS certificate")
	}
	if err := checkServingBundle(secret.TLSCrt); err != nil {
		return "", fmt.Errorf("invalid TLS certificate: %w", err)
	}
	return sdsSecretName(name, secret.TLSCrt), nil
}

// sdsSecretName is "<namespace>/<name>/<first 10 hex digits of sha1(tls.crt)>",
// shortened as Contour shortens it, so Envoy fetches the certificate under
// the name a Contour-managed SDS server serves it by. The digest makes the
// name change whenever the certificate does.
func sdsSecretName(name source.NamespacedName, tlsCrt []byte) string {
	sum := sha1.Sum(tlsCrt) //nolint:gosec // names a certificate, protects nothing
	return shortenName(sdsNameLimit, name.Namespace, name.Name, hex.EncodeToString(sum[:5]))
}

// shortenName joins parts with "/" and, when the result is limit bytes or
// longer, shortens it the way Contour's Hashname does: from the last part
// to the first, each part longer than limit/len(parts) is cut and ends in
// "-" plus the first 6 hex digits of sha256 of the whole joined name, until
// the name fits; if cutting every part is not enough, the name is the
// sha256 hex itself, cut to limit.
//
// One difference from Contour: a cut never splits a UTF-8 sequence (it
// backs off to the previous character), so the name stays valid UTF-8, as
// protobuf strings must be. Kubernetes names are ASCII, where the two agree.
func shortenName(limit int, parts ...string) string {
	joined := strings.Join(parts, "/")
	if len(joined) < limit {
		return joined
	}
	sum := sha256.Sum256([]byte(joined))
	digest := hex.EncodeToString(sum[:])
	suffix := digest[:6]
	cut := make([]string, len(parts))
	copy(cut, parts)
	for i := len(cut) - 1; i >= 0; i-- {
		cut[i] = cutPart(limit/len(cut), cut[i], suffix)
		if joined = strings.Join(cut, "/"); len(joined) < limit {
			return joined
		}
	}
	return digest[:min(len(digest), limit)]
}

// cutPart shortens s to at most n bytes ending in "-"+suffix (or to a prefix
// of suffix when n leaves no room for more).
func cutPart(n int, s, suffix string) string {
	if len(s) <= n {
		return s
	}
	if n <= len(suffix) {
		return suffix[:n]
	}
	return prefixBytes(s, n-len(suffix)-1) + "-" + suffix
}

// prefixBytes returns the longest prefix of s of at most n bytes that does
// not end inside a UTF-8 sequence.
func prefixBytes(s string, n int) string {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// upstreamValidation is a checked spec.validation.
type upstreamValidation struct {
	caCertificate []byte
	subjectNames  []string
}

// lookupUpstreamValidation checks spec.validation of an ExtensionService in
// namespace, in Contour's order: delegation, the CA Secret, then the subject
// names. An error wrapping errNotDelegated means the CA Secret was not
// delegated; any other error is a policy error with Contour's wording.
func (b *Builder) lookupUpstreamValidation(v *source.UpstreamValidation, namespace string) (upstreamValidation, error) {
	caName := CASecretName(v.CASecret, namespace)
	ca, err := b.lookupCASecret(caName, namespace)
	if err != nil {
		if errors.Is(err, errNotDelegated) {
			return upstreamValidation{}, err
		}
		return upstreamValidation{}, fmt.Errorf("invalid CA Secret %q: %w", caName.String(), err)
	}

	if v.SubjectName == "" {
		return upstreamValidation{}, errors.New("missing subject alternative name")
	}
	// Contour leaves UTF-8 to the API server; here invalid UTF-8 would make
	// a Cluster (and a status message) that protobuf cannot encode.
	if !utf8.ValidString(v.SubjectName) {
		return upstreamValidation{}, fmt.Errorf("subject name %q is not valid UTF-8", v.SubjectName)
	}
	for _, n := range v.SubjectNames {
		if !utf8.ValidString(n) {
			return upstreamValidation{}, fmt.Errorf("subject name %q is not valid UTF-8", n)
		}
	}
	names := v.SubjectNames
	if len(names) == 0 {
		names = []string{v.SubjectName}
	} else if names[0] != v.SubjectName {
		return upstreamValidation{}, fmt.Errorf("first entry of SubjectNames (%s) does not match SubjectName (%s)", names[0], v.SubjectName)
	}
	// Contour leaves the SNI limit to Envoy, which would refuse the Cluster.
	if len(names[0]) > maxSNIBytes {
		return upstreamValidation{}, fmt.Errorf("subject name %q is %d bytes long, but as the SNI it must be at most %d bytes", names[0], len(names[0]), maxSNIBytes)
	}
	return upstreamValidation{caCertificate: ca, subjectNames: names}, nil
}

// CASecretName reads spec.validation.caSecret: "name" or "namespace/name";
// a missing namespace means the ExtensionService's own.
func CASecretName(ref, namespace string) source.NamespacedName {
	ns, name, found := strings.Cut(ref, "/")
	if !found {
		ns, name = "", ref
	}
	if ns == "" {
		ns = namespace
	}
	return source.NamespacedName{Namespace: ns, Name: name}
}

// lookupCASecret returns the checked ca.crt of the named Secret for use by
// an object in namespace.
func (b *Builder) lookupCASecret(name source.NamespacedName, namespace string) ([]byte, error) {
	if !b.delegationPermitted(name, namespace) {
		return nil, errNotDelegated
	}
	secret := b.index.Secret(name)
	if secret == nil {
		return nil, errSecretNotFound
	}
	if secret.Type != secretTypeTLS && secret.Type != secretTypeOpaque {
		return nil, fmt.Errorf("secret type is not %q or %q", secretTypeTLS, secretTypeOpaque)
	}
	if len(secret.CACrt) == 0 {
		return nil, errors.New(`empty "ca.crt" key`)
	}
	if err := checkCABundle(secret.CACrt); err != nil {
		return nil, fmt.Errorf("invalid CA certificate bundle: %w", err)
	}
	return secret.CACrt, nil
}

// delegationPermitted reports whether an object in namespace may use the
// named Secret: always within its own namespace, otherwise only through a
// TLSCertificateDelegation in the Secret's namespace that names the Secret
// and lists namespace among its targets. As in Contour, "*" means every
// namespace only when it is the sole target listed.
func (b *Builder) delegationPermitted(secret source.NamespacedName, namespace string) bool {
	if secret.Namespace == namespace {
		return true
	}
	for _, d := range b.index.Delegations(secret.Namespace) {
		for _, entry := range d.Delegations {
			if entry.SecretName == secret.Name && delegatesTo(entry.TargetNamespaces, namespace) {
				return true
			}
		}
	}
	return false
}

func delegatesTo(targets []string, namespace string) bool {
	if len(targets) == 1 && targets[0] == "*" {
		return true
	}
	for _, t := range targets {
		if t == namespace {
			return true
		}
	}
	return false
}

// checkCABundle accepts PEM data holding at least one certificate and only
// certificates, each of which must parse as X.509. Contour checks only the
// PEM block types; parsing as well keeps a bundle Envoy would refuse out of
// the Cluster.
func checkCABundle(data []byte) error {
	return eachPEMCertificate(data, func(*x509.Certificate, int) error { return nil })
}

// checkServingBundle accepts what checkCABundle accepts, provided the first
// certificate has a common name or a DNS or IP subject alternative name.
func checkServingBundle(data []byte) error {
	return eachPEMCertificate(data, func(c *x509.Certificate, i int) error {
		if i == 0 && strings.TrimSpace(c.Subject.CommonName) == "" && len(c.DNSNames) == 0 && len(c.IPAddresses) == 0 {
			return errors.New("certificate has no common name or subject alt name")
		}
		return nil
	})
}

// eachPEMCertificate parses the PEM blocks of data in order, calling check
// on each certificate with its position. Like OpenSSL (and so Envoy) and
// Contour, it ignores text around the blocks; a BEGIN line that does not
// decode is an error.
func eachPEMCertificate(data []byte, check func(*x509.Certificate, int) error) error {
	n := 0
	for hasPEMBeginLine(data) {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return errors.New("failed to parse PEM block")
		}
		if block.Type != "CERTIFICATE" {
			// The type comes from Secret bytes, which need not be UTF-8;
			// a status message must be.
			return fmt.Errorf("unexpected block type '%s'", strings.ToValidUTF8(block.Type, "\uFFFD"))
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return err
		}
		if err := check(cert, n); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return errors.New("failed to locate certificate")
	}
	return nil
}

// hasPEMBeginLine reports whether data still holds something that looks
// like a PEM BEGIN line: "-----BEGIN" and a closing "-----" on one line.
func hasPEMBeginLine(data []byte) bool {
	const begin = "-----BEGIN"
	i := bytes.Index(data, []byte(begin))
	if i < 0 {
		return false
	}
	rest := data[i+len(begin):]
	j := bytes.Index(rest, []byte("-----"))
	return j >= 0 && bytes.IndexByte(rest[:j], '\n') < 0
}
