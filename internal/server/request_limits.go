package server

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
)

// lengthLimit is the longest a string field may be, and why. Kubernetes
// bounds nearly every string its objects hold, so a client that sends
// longer ones is not sending what Kubernetes stores. Where Kubernetes sets
// no bound, only the settings (our own API, copied into every Cluster) get
// one of ours: an ExtensionService string Contour's CRD leaves unbounded is
// translation's to judge, in that ExtensionService's status.
type lengthLimit struct {
	max int
	// why completes "... is N bytes long; ".
	why string
}

// The limits of the objects' strings.
var (
	caSecretLimit       = lengthLimit{63 + 1 + 253, `at most 317 bytes: a namespace (63), "/" and a Secret name (253)`}
	subjectNameLimit    = lengthLimit{255, "at most 255 bytes: it is the SNI, which Envoy caps at 255 (Contour's CRD allows 250)"}
	keywordLimit        = lengthLimit{32, "at most 32 bytes: the field takes one of a few short keywords"}
	durationLimit       = lengthLimit{64, "at most 64 bytes: a duration needs far fewer"}
	dnsNameLimit        = lengthLimit{253, "at most 253 bytes: it is a DNS name"}
	portNameLimit       = lengthLimit{63, "at most 63 bytes: a port name is a DNS label"}
	targetPortLimit     = lengthLimit{15, "at most 15 bytes: Kubernetes takes a port number or an IANA service name of at most 15 characters"}
	addressLimit        = lengthLimit{253, "at most 253 bytes: an endpoint address is an IP or, at most, a DNS name"}
	secretTypeLimit     = lengthLimit{253, "at most 253 bytes: a Secret type is a qualified name such as kubernetes.io/tls"}
	secretNameLimit     = lengthLimit{253, "at most 253 bytes: a Secret name is a DNS subdomain"}
	namespaceLimit      = lengthLimit{63, "at most 63 bytes: a namespace is a DNS label"}
	xdsClusterNameLimit = lengthLimit{253, "at most 253 bytes: the name is copied into every Cluster (as its EDS cluster and gRPC authority), so its length is multiplied by the ExtensionServices, and 253, the longest DNS name, fits any name a bootstrap gives that cluster"}
	sniLimit            = lengthLimit{255, "at most 255 bytes: Envoy caps an SNI at 255"}
	authorityLimit      = lengthLimit{253 + 1 + 5, `at most 259 bytes: a DNS name (253), ":" and a port`}
	// A gRPC service name is a fully qualified protobuf name
	// ("grpc.health.v1.Health"): a few dozen bytes.
	healthServiceNameLimit = lengthLimit{253, "at most 253 bytes: a gRPC service name is a fully qualified protobuf name, far shorter"}
	// Kubernetes bounds the annotations of an object only as a whole
	// (256 KiB), and a key's name part to 63 bytes. Ours are tighter: every
	// annotation kept is stored with its ExtensionService for as long as a
	// Sync session lives, and no option needs more.
	annotationKeyLimit   = lengthLimit{len(source.AnnotationPrefix) + 63, `at most 77 bytes: "tributary.dev/" and a name, which Kubernetes bounds to 63`}
	annotationValueLimit = lengthLimit{1 << 10, "at most 1024 bytes: the longest value an option takes is a list of cipher suites, and all of BoringSSL's TLS 1.2 suites together take about 600"}
	cipherSuiteLimit     = lengthLimit{128, "at most 128 bytes: the longest BoringSSL cipher suite name is under 40 bytes, and 128 holds an equal-preference group of a few"}
)

// Counts Kubernetes or Envoy bound.
const (
	// maxEndpointAddresses is Kubernetes' limit on the addresses of one
	// endpoint of an EndpointSlice.
	maxEndpointAddresses = 100
	// maxCipherSuites bounds settings.upstreamTls.cipherSuites: BoringSSL
	// knows fewer than 30 suites, so a longer list can only repeat or
	// misspell them, and the list is copied into every h2 Cluster.
	maxCipherSuites = 64
	// maxOptionAnnotations bounds the "tributary.dev/" annotations of one
	// ExtensionService: translation reads fewer than 40 keys (see
	// model.AnnotationKeys), and each unknown one is an error of its own in
	// the status, so a few dozen mistakes are room enough.
	maxOptionAnnotations = 64
	// maxSecretDataBytes is Kubernetes' limit on the data of one Secret.
	maxSecretDataBytes = 1 << 20
)

// tooLong reports whether s is longer than l allows.
func (l lengthLimit) tooLong(s string) bool { return len(s) > l.max }

// report records that the field of the object ref locates is n bytes long.
func (l lengthLimit) report(ref objectRef, p *problems, field string, n int) {
	ref.report(p, field, ReasonOutOfRange, fmt.Sprintf("is %d bytes long; %s", n, l.why))
}

// check reports the field of the object ref locates when s is too long, and
// says whether it is.
func (l lengthLimit) check(ref objectRef, p *problems, field, s string) bool {
	if l.tooLong(s) {
		l.report(ref, p, field, len(s))
		return false
	}
	return true
}

// checkSetting is check for a setting, whose path is field.
func (l lengthLimit) checkSetting(p *problems, field, s string) bool {
	if l.tooLong(s) {
		p.add(field, ReasonOutOfRange, fmt.Sprintf("%s is %d bytes long; %s", field, len(s), l.why))
		return false
	}
	return true
}

const (
	labelKeyRule   = "an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	labelValueRule = "empty, or at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
)

// checkLabels checks labels as Kubernetes does: each key a qualified name,
// each value a label value. The problems are reported in key order, so the
// error does not depend on the order a map is walked in.
func checkLabels(ref objectRef, p *problems, labels map[string]string) {
	valid := true
	for k, v := range labels {
		if !isLabel(k, v) {
			valid = false
			break
		}
	}
	if valid {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		field := "metadata.labels[" + source.Quote(k) + "]"
		if !isQualifiedName(k) {
			ref.report(p, field, ReasonInvalidName, "has an invalid key ("+labelKeyRule+")")
		} else if v := labels[k]; !isLabelValue(v) {
			ref.report(p, field, ReasonInvalidName, fmt.Sprintf("%s is not a valid label value (%s)", source.Quote(v), labelValueRule))
		}
	}
}

// isLabel reports whether key and value make a valid label. The key
// every EndpointSlice carries is known to be valid: checked anew on each
// of 20,000 slices, it cost as much as finding duplicates.
func isLabel[V string | []byte](key string, value V) bool {
	return (key == source.ServiceNameLabel || isQualifiedName(key)) && isLabelValue(value)
}

// isQualifiedName reports whether s is a Kubernetes qualified name, the
// form of a label key: "prefix/name" or "name".
func isQualifiedName(s string) bool {
	name := s
	if prefix, rest, found := strings.Cut(s, "/"); found {
		if prefix == "" || !model.IsDNS1123Subdomain(prefix) {
			return false
		}
		name = rest
	}
	return name != "" && isLabelValue(name)
}

// isLabelValue reports whether s is empty or at most 63 alphanumerics,
// '-', '_' or '.', starting and ending with an alphanumeric.
func isLabelValue[V string | []byte](s V) bool {
	if len(s) == 0 {
		return true
	}
	if len(s) > 63 || !isAlphanumeric(s[0]) || !isAlphanumeric(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlphanumeric(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

func isAlphanumeric(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
