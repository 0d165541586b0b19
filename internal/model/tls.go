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
// names (see secretEntry.clientCertificate) and returns the SDS name Envoy
// fetches it under.
func (b *Builder) clientCertificateSDSName(name source.NamespacedName) (string, error) {
	entry := b.index.secretEntry(name)
	if entry == nil {
		return "", errSecretNotFound
	}
	c := entry.clientCertificate()
	return c.sdsName, c.err
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
	return source.Prefix(s, n-len(suffix)-1) + "-" + suffix
}

// upstreamValidation is a checked spec.validation.
type upstreamValidation struct {
	caCertificate []byte
	subjectNames  []string
	// caSkipped describes the blocks of the CA bundle left out, for a
	// warning; "" when there are none.
	caSkipped string
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
		return upstreamValidation{}, fmt.Errorf("invalid CA Secret %s: %w", source.Quote(caName.String()), err)
	}

	if v.SubjectName == "" {
		return upstreamValidation{}, errors.New("missing subject alternative name")
	}
	// Contour leaves UTF-8 to the API server; here invalid UTF-8 would make
	// a Cluster (and a status message) that protobuf cannot encode.
	if !utf8.ValidString(v.SubjectName) {
		return upstreamValidation{}, fmt.Errorf("subject name %s is not valid UTF-8", source.Quote(v.SubjectName))
	}
	for _, n := range v.SubjectNames {
		if !utf8.ValidString(n) {
			return upstreamValidation{}, fmt.Errorf("subject name %s is not valid UTF-8", source.Quote(n))
		}
	}
	names := v.SubjectNames
	if len(names) == 0 {
		names = []string{v.SubjectName}
	} else if names[0] != v.SubjectName {
		return upstreamValidation{}, fmt.Errorf("first entry of SubjectNames (%s) does not match SubjectName (%s)", source.Truncate(names[0]), source.Truncate(v.SubjectName))
	}
	// Contour leaves the SNI limit to Envoy, which would refuse the Cluster.
	if len(names[0]) > maxSNIBytes {
		return upstreamValidation{}, fmt.Errorf("subject name %s is %d bytes long, but as the SNI it must be at most %d bytes", source.Quote(names[0]), len(names[0]), maxSNIBytes)
	}
	// Contour's CRD bounds subjectName but not the other entries of
	// subjectNames, each of which is copied into the Cluster: one longer
	// than any DNS name can match no certificate, and is refused here, in
	// the status, rather than made into a Cluster of that size.
	for _, n := range names[1:] {
		if len(n) > maxSNIBytes {
			return upstreamValidation{}, fmt.Errorf("subject name %s is %d bytes long, but a subject name must be at most %d bytes", source.Quote(n), len(n), maxSNIBytes)
		}
	}
	return upstreamValidation{caCertificate: ca.pem, subjectNames: names, caSkipped: ca.skipped}, nil
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

// lookupCASecret returns the checked CA bundle of the named Secret for use
// by an object in namespace.
func (b *Builder) lookupCASecret(name source.NamespacedName, namespace string) (*caBundle, error) {
	if !b.delegationPermitted(name, namespace) {
		return nil, errNotDelegated
	}
	entry := b.index.secretEntry(name)
	if entry == nil {
		return nil, errSecretNotFound
	}
	ca := entry.caBundle()
	if ca.err != nil {
		return nil, ca.err
	}
	return ca, nil
}

// delegationPermitted reports whether an object in namespace may use the
// named Secret: always within its own namespace, otherwise only through a
// TLSCertificateDelegation in the Secret's namespace that names the Secret
// and lists namespace among its targets. As in Contour, "*" means every
// namespace only when it is the sole target listed.
func (b *Builder) delegationPermitted(secret source.NamespacedName, namespace string) bool {
	return secret.Namespace == namespace || b.index.delegationGrant(secret).permits(namespace)
}

// checkServingBundle accepts PEM data holding at least one certificate and
// only certificates, each of which must parse as X.509, provided the first
// has a common name or a DNS or IP subject alternative name.
func checkServingBundle(data []byte) error {
	n := 0
	err := eachPEMBlock(data, func(block *pem.Block, problem error) error {
		if problem != nil {
			return problem
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return err
		}
		if n == 0 && strings.TrimSpace(c.Subject.CommonName) == "" && len(c.DNSNames) == 0 && len(c.IPAddresses) == 0 {
			return errors.New("certificate has no common name or subject alt name")
		}
		n++
		return nil
	})
	if err == nil && n == 0 {
		return errFailedToLocateCertificate
	}
	return err
}

// errFailedToParsePEM is the problem of a block whose BEGIN line is not
// followed by a block that decodes.
var errFailedToParsePEM = errors.New("failed to parse PEM block")

// eachPEMBlock calls visit on the PEM blocks of data in order, stopping at
// the first error visit returns. A block visit is given with a problem
// either did not decode (block is nil) or is not a CERTIFICATE. Like
// OpenSSL (and so Envoy) and Contour, it ignores text around the blocks.
func eachPEMBlock(data []byte, visit func(block *pem.Block, problem error) error) error {
	for {
		at := pemBeginLine(data)
		if at < 0 {
			return nil
		}
		data = data[at:]
		block, rest := pem.Decode(data)
		// pem.Decode passes over blocks that do not decode to return the
		// next one that does, or nil (and all of data) when none does:
		// every BEGIN line it passed over is a broken block.
		broken := countPEMBeginLines(data)
		if block != nil {
			broken = countPEMBeginLines(data[:len(data)-len(rest)]) - 1
		}
		for range broken {
			if err := visit(nil, errFailedToParsePEM); err != nil {
				return err
			}
		}
		if block == nil {
			return nil
		}
		var problem error
		if block.Type != "CERTIFICATE" {
			// The type comes from Secret bytes, which need not be UTF-8;
			// a status message must be.
			problem = fmt.Errorf("unexpected block type '%s'", source.Prefix(strings.ToValidUTF8(block.Type, "\uFFFD"), source.MaxQuotedBytes))
		}
		if err := visit(block, problem); err != nil {
			return err
		}
		data = rest
	}
}

// countPEMBeginLines counts the BEGIN lines of data (see pemBeginLine).
func countPEMBeginLines(data []byte) int {
	n := 0
	for at := pemBeginLine(data); at >= 0; at = pemBeginLine(data) {
		n++
		data = data[at+len(pemBegin):]
	}
	return n
}

const pemBegin = "-----BEGIN"

// pemBeginLine is the index in data of the first thing that looks like a
// PEM BEGIN line, "-----BEGIN" and a closing "-----" on one line, or -1.
func pemBeginLine(data []byte) int {
	i := bytes.Index(data, []byte(pemBegin))
	if i < 0 {
		return -1
	}
	rest := data[i+len(pemBegin):]
	j := bytes.Index(rest, []byte("-----"))
	if j < 0 || bytes.IndexByte(rest[:j], '\n') >= 0 {
		return -1
	}
	return i
}
