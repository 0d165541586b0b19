package translate

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
)

// Output bounds. A handful of input bytes can become a great deal of
// output: one CA Secret is inlined into every Cluster that validates
// against it, the xdsClusterName and the cipher suites are repeated in
// every Cluster, and one Service's endpoints in every ClusterLoadAssignment
// that targets it. Building such an output before finding it too large to
// send costs its whole size in memory and the CPU to encode it, so the size
// is bounded first, from the objects alone, without building anything.
//
// Estimator gives, per ExtensionService, an upper bound of the encoded size
// of its Cluster and ClusterLoadAssignment (each wrapped in its
// tributary.v1.Resource), whatever translation makes of it: it counts an
// ExtensionService as valid, the first address of every endpoint of every
// IPv4 or IPv6 EndpointSlice of its targets as an endpoint once per slice
// port, a CA bundle whether or not it parses, every option group present
// in spec.options, annotations or the settings' extensionDefaults at its
// widest, and a STRICT_DNS Cluster's inline endpoints besides a
// ClusterLoadAssignment (size_options.go). Quick is a looser bound with
// every address at its longest, which costs nothing per endpoint. It adds
// an estimate of the status, which is not a bound (a status holds
// messages), but small. The bound is proven against the real
// encodings by TestEstimateBoundsOutput, and is tight where sizes are
// large: within a few percent for endpoints and inlined CA bundles.

// Estimate is an upper bound of what one ExtensionService translates into,
// and what the largest parts of it are.
type Estimate struct {
	// Bytes bounds the ExtensionService's encoded output: Cluster,
	// ClusterLoadAssignment and status, as a response holds them.
	Bytes int64
	// CASecret names the CA Secret inlined into the Cluster, with CABytes
	// its ca.crt length; CABytes is 0 without one.
	CASecret source.NamespacedName
	CABytes  int64
	// Endpoints bounds the endpoints of the ClusterLoadAssignment and
	// EndpointBytes their encoded size.
	Endpoints, EndpointBytes int64
	// TLS says whether the Cluster carries the settings' TLS parameters
	// (an h2 extension).
	TLS bool
}

// Estimator bounds the output of ExtensionServices against one Index and
// Settings (see Estimate). It remembers what it counted per large target
// Service until Forget, so that a thousand ExtensionServices targeting one
// large Service cost one pass over its endpoints: call Forget whenever the
// Index changes. An Estimator is not safe for concurrent use.
type Estimator struct {
	index *model.Index
	// perCluster is what the settings put into every Cluster, and
	// perTLSCluster what they add to an h2 one.
	perCluster, perTLSCluster int64
	// xds is the xDS cluster name's length.
	xds int
	// defaults measures the settings' extensionDefaults (see
	// size_options.go); externalNames is the setting that allows
	// ExternalName targets.
	defaults      optionSizes
	externalNames bool
	targets       map[source.NamespacedName]targetEstimate
	// found is the scratch Estimate and Quick look an ExtensionService's
	// targets up in.
	found []model.TargetService
}

// targetEstimate bounds the endpoints one target Service contributes:
// precisely, and as Quick counts them.
type targetEstimate struct {
	precise, quick endpointCount
}

// endpointCount is a number of endpoints and their encoded size.
type endpointCount struct {
	endpoints, bytes int64
}

// Bounds of fields whose content the objects do not show directly.
const (
	// clusterFixedBytes is what a Cluster holds besides the strings the
	// Estimator counts: 381 bytes for an h2 Cluster with every option at
	// its largest (timeouts, circuit breakers, TLS versions), the fixed
	// fields around the CA bundle and the client certificate's SDS config,
	// and room for the lengths of the messages around large strings to
	// grow to five bytes each.
	clusterFixedBytes = 512
	// sdsNameBytes bounds a client certificate's SDS name: model shortens
	// it below 60 bytes, as Contour does.
	sdsNameBytes = 64
	// resourceFixedBytes is what a tributary.v1.Resource adds to its body
	// and name: its version (16 hex digits), the Any's type URL (at most
	// 64 bytes) and the tags and lengths around them.
	resourceFixedBytes = 96
	// statusFixedBytes is a valid status's fixed strings and numbers;
	// statuses are estimated, not bounded (see Estimate).
	statusFixedBytes = 128
	// subZonePortBytes is a sub-zone's "/" and port number.
	subZonePortBytes = 6
	// localityFixedBytes is a locality's weight and the message around
	// its sub-zone.
	localityFixedBytes = 16
	// subjectNameFixedBytes is the SubjectAltNameMatcher around a name.
	subjectNameFixedBytes = 16
)

// NewEstimator returns an Estimator over idx and settings (parsed and
// checked at the API boundary, defaults not yet filled).
func NewEstimator(idx *model.Index, settings source.Settings) *Estimator {
	xds := settings.XDSClusterName
	if xds == "" {
		xds = source.DefaultXDSClusterName
	}
	e := &Estimator{
		index: idx, targets: map[source.NamespacedName]targetEstimate{},
		xds: len(xds), defaults: sizesOf(settings.ExtensionDefaults), externalNames: settings.ExternalNameTargets,
	}
	// The EDS config source names the xDS cluster twice (cluster name and
	// authority), in every Cluster; so does the client certificate's SDS
	// config source, in an h2 one.
	e.perCluster = clusterFixedBytes + 2*stringField(len(xds))
	if settings.ClientCertificate != nil {
		e.perTLSCluster += stringField(sdsNameBytes) + 2*stringField(len(xds))
	}
	if tls := settings.UpstreamTLS; tls != nil {
		for _, c := range tls.CipherSuites {
			e.perTLSCluster += stringField(len(c))
		}
	}
	return e
}

// Forget drops what e remembers of target Services: the Index changed.
func (e *Estimator) Forget() {
	if len(e.targets) > forgetInPlace {
		// A map keeps its size after clear, and clearing costs that size:
		// after a pass over many targets, every later Forget would pay for
		// them.
		e.targets = map[source.NamespacedName]targetEstimate{}
		return
	}
	clear(e.targets)
}

// forgetInPlace is the size up to which Forget clears the map it has.
const forgetInPlace = 64

// Estimate bounds the output of es precisely: it counts the first address
// of every endpoint at its own length. It costs a pass over the endpoints
// of es's targets; Quick does not.
func (e *Estimator) Estimate(es *source.ExtensionService) Estimate {
	_, est := e.estimate(es, e.lookUp(es), true)
	return est
}

// Quick is a bound of es's output at least Estimate's Bytes, in a time
// that does not grow with the number of endpoints: it counts every
// endpoint of a slice at the longest address the slice's addressType
// allows. Callers check against Quick, and decide with Estimate only when
// Quick says the output may be too large.
func (e *Estimator) Quick(es *source.ExtensionService) int64 {
	quick, _ := e.estimate(es, e.lookUp(es), false)
	return quick
}

// lookUp finds es's targets in the Index, into e's scratch.
func (e *Estimator) lookUp(es *source.ExtensionService) []model.TargetService {
	return e.index.LookUpTargetServices(&e.found, es)
}

// estimate returns Quick's bound of es, whose targets found are (what
// Index.AppendTargetServices gives), and when precise the Estimate (a zero
// one otherwise). The two differ only in the endpoints they count.
func (e *Estimator) estimate(es *source.ExtensionService, found []model.TargetService, precise bool) (int64, Estimate) {
	var est Estimate
	name := clusterNameBytes(es.Namespace, es.Name)
	// name, alt_stat_name and the EDS service_name.
	cluster := e.perCluster + 3*stringField(name)
	if est.TLS = speaksTLS(es.Spec.Protocol); est.TLS {
		cluster += e.perTLSCluster
		if v := es.Spec.Validation; v != nil {
			est.CASecret = model.CASecretName(v.CASecret, es.Namespace)
			if secret := e.index.Secret(est.CASecret); secret != nil {
				est.CABytes = int64(len(secret.CACrt))
				cluster += stringField(len(secret.CACrt))
			}
			// The SNI is the first subject name.
			cluster += stringField(len(v.SubjectName)) + subjectNameFixedBytes + stringField(len(v.SubjectName))
			for _, n := range v.SubjectNames {
				cluster += subjectNameFixedBytes + stringField(len(n))
			}
		}
	}
	opts := e.optionsOf(es)
	cluster += e.clusterBytes(&opts, name, est.TLS)
	health := int64(opts.perEndpoint())
	cla, quickCLA := stringField(name), stringField(name)
	status := statusFixedBytes + stringField(len(es.Namespace)) + stringField(len(es.Name)) + stringField(name)
	// A STRICT_DNS Cluster holds one locality per ExternalName target.
	var dns int64
	for i, t := range es.Spec.Services {
		var target targetEstimate
		if precise {
			target = e.target(source.NamespacedName{Namespace: es.Namespace, Name: t.Name}, found[i].Slices)
		} else {
			target = countTarget(found[i].Slices, false)
		}
		// Targets are counted without a health check port, which adds the
		// same bytes to every endpoint (and are remembered so).
		target.precise.bytes += target.precise.endpoints * health
		target.quick.bytes += target.quick.endpoints * health
		est.Endpoints += target.precise.endpoints
		est.EndpointBytes += target.precise.bytes
		subZone := len(es.Namespace) + 1 + len(t.Name) + subZonePortBytes
		locality := localityFixedBytes + stringField(subZone)
		cla += messageField(locality + target.precise.bytes)
		quickCLA += messageField(locality + target.quick.bytes)
		if e.externalNames {
			if svc := found[i].Service; svc != nil && svc.ExternalName != "" {
				dns += dnsLocality(subZone, len(svc.ExternalName), int(health))
			}
		}
		status += messageField(availabilityFixedBytes + stringField(len(t.Name)))
	}
	if dns > 0 {
		cluster += dnsFixedBytes + messageField(stringField(name)+dns)
	}
	quick := resource(name, cluster) + resource(name, quickCLA) + status
	if !precise {
		return quick, Estimate{}
	}
	est.Bytes = resource(name, cluster) + resource(name, cla) + status
	return quick, est
}

// clusterNameBytes is the length of model.ClusterName(namespace, name),
// without building it (which would read both names' bytes).
// TestClusterNameBytes holds it to model.ClusterName.
func clusterNameBytes(namespace, name string) int {
	return len("extension/") + len(namespace) + len("/") + len(name)
}

// Address lengths the collector can carry into a ClusterLoadAssignment: it
// encodes an endpoint's first address as written, once netip.ParseAddr
// reads it as an unzoned address of the slice's type. IPv4 is at most
// 255.255.255.255; IPv6 at most six fields of four hex digits and a dotted
// quad (netip takes no longer fields, no leading zeros in the quad, and a
// zone is refused).
const (
	maxIPv4Bytes = len("255.255.255.255")
	maxIPv6Bytes = len("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255")
)

// maxAddressBytes is the longest address a slice of addressType yields an
// endpoint for, and false for the types that yield none (FQDN: EDS cannot
// carry host names).
func maxAddressBytes(addressType string) (int, bool) {
	switch addressType {
	case "IPv4":
		return maxIPv4Bytes, true
	case "IPv6":
		return maxIPv6Bytes, true
	}
	return 0, false
}

// target bounds the endpoints of the Service named service, whose slices
// are slices: the first address of every endpoint of every slice (the only one
// translation uses), once per port of the slice (an unnamed Service port
// matches every TCP port of a slice). Addresses longer than the slice's
// type allows are not counted: the collector refuses them. Only large
// targets are remembered: counting a small one again costs less than a map
// entry, and most targets are small and used once.
func (e *Estimator) target(service source.NamespacedName, slices []*source.EndpointSlice) targetEstimate {
	if t, ok := e.targets[service]; ok {
		return t
	}
	t := countTarget(slices, true)
	if t.precise.endpoints >= rememberedTarget {
		e.targets[service] = t
	}
	return t
}

// countTarget bounds the endpoints of a Service's slices as Quick counts
// them, without reading the endpoints: every one at the longest address of
// its slice's type; and when precise, as target says.
func countTarget(slices []*source.EndpointSlice, precise bool) targetEstimate {
	var t targetEstimate
	for _, slice := range slices {
		longest, ok := maxAddressBytes(slice.AddressType)
		if !ok {
			continue
		}
		// The endpoints a slice counts are the same for every port.
		all := int64(slice.Endpoints.Len())
		var endpoints, addressBytes int64
		if precise {
			endpoints, addressBytes = addressesUpTo(slice.Endpoints, longest)
		}
		for _, p := range slice.Ports {
			if p.Port == nil {
				continue // serves nothing
			}
			// An IP endpoint is its address and a fixed part.
			fixed := ipEndpointFixedBytes(protowire.SizeVarint(uint64(*p.Port)))
			t.quick.endpoints += all
			t.quick.bytes += all * (int64(longest) + fixed)
			t.precise.endpoints += endpoints
			t.precise.bytes += addressBytes + endpoints*fixed
		}
	}
	return t
}

// addressesUpTo counts the endpoints whose first address is at most
// longest bytes, and sums those addresses' lengths. Nearly always every
// address is short enough, which the Endpoints know without a pass.
func addressesUpTo(endpoints source.Endpoints, longest int) (count, bytes int64) {
	if endpoints.LongestAddress() <= longest {
		return int64(endpoints.Len()), int64(endpoints.AddressBytes())
	}
	for i := range endpoints.Len() {
		if n := endpoints.Address(i).Len(); n <= longest {
			count++
			bytes += int64(n)
		}
	}
	return count, bytes
}

// ipEndpointFixedBytes is what an IP endpoint on a port of port bytes
// holds besides its address: lbEndpoint(n, port, 0) is n +
// ipEndpointFixedBytes(port) for every n up to maxIPv6Bytes, since every
// message around such an endpoint is under 128 bytes and each length is
// one byte whatever n is. So a slice port's endpoints sum to their
// addresses' bytes and a fixed part each, with no arithmetic per
// endpoint. TestIPEndpointFixedBytes holds it to lbEndpoint at every
// address length and port width.
func ipEndpointFixedBytes(port int) int64 { return lbEndpoint(0, port, 0) }

// rememberedTarget is the number of endpoints from which a target's
// estimate is remembered (see target).
const rememberedTarget = 1024

// speaksTLS reports whether an ExtensionService of that spec.protocol gets
// a TLS transport socket: every protocol but the cleartext ones (an
// unknown one makes it invalid, which a bound need not know).
func speaksTLS(protocol *string) bool {
	return protocol == nil || (*protocol != "h2c" && *protocol != "http/1.1")
}

// lbEndpoint is the size of one lb_endpoints entry for an address of n
// bytes, a port of port bytes and health bytes of health_check_config:
// four nested messages around the address and the port, the Endpoint
// holding the health check config too.
func lbEndpoint(n, port, health int) int64 {
	socket := messageField(int64(n)) + 1 + int64(port)
	return messageField(messageField(messageField(messageField(socket)) + int64(health)))
}

// resource bounds a tributary.v1.Resource holding a body of at most body
// bytes under a name of name bytes.
func resource(name int, body int64) int64 {
	return messageField(resourceFixedBytes + stringField(name) + body + int64(protowire.SizeVarint(uint64(body))))
}

// stringField is the size of a length-delimited field of n bytes, with a
// tag of up to two bytes (field numbers up to 2047).
func stringField(n int) int64 { return messageField(int64(n)) + 1 }

// messageField is the size of a length-delimited field (one-byte tag)
// holding n bytes.
func messageField(n int64) int64 { return 1 + int64(protowire.SizeVarint(uint64(n))) + n }

// Tally sums Estimates and remembers what makes the sum large, to say so
// when it is too large.
type Tally struct {
	// Bytes is the sum of the Estimates added.
	Bytes int64
	// extensions counts the Estimates added; tlsClusters those with TLS.
	extensions, tlsClusters int64
	secrets                 map[source.NamespacedName]*secretUse
	endpoints, endpointByte int64
	// most is the ExtensionService with the most endpoint bytes.
	most      source.NamespacedName
	mostBytes int64
	mostCount int64
}

type secretUse struct {
	bytes    int64
	clusters int64
}

// Add counts est, the Estimate of the ExtensionService named name.
func (t *Tally) Add(name source.NamespacedName, est *Estimate) {
	t.Bytes += est.Bytes
	t.extensions++
	if est.TLS {
		t.tlsClusters++
	}
	if est.CABytes > 0 {
		if t.secrets == nil {
			t.secrets = map[source.NamespacedName]*secretUse{}
		}
		use := t.secrets[est.CASecret]
		if use == nil {
			use = &secretUse{bytes: est.CABytes}
			t.secrets[est.CASecret] = use
		}
		use.clusters++
	}
	t.endpoints += est.Endpoints
	t.endpointByte += est.EndpointBytes
	// Ties go to the first name, so the cause does not depend on the
	// order of adding.
	if est.EndpointBytes > t.mostBytes || est.EndpointBytes == t.mostBytes && est.EndpointBytes > 0 && name.Compare(t.most) < 0 {
		t.most, t.mostBytes, t.mostCount = name, est.EndpointBytes, est.Endpoints
	}
}

// Cause says what makes the sum large: the largest of the inlined CA
// Secrets, the settings repeated in every Cluster, the endpoints, and the
// ExtensionServices themselves. Names in it passed the API boundary's
// checks (Kubernetes names, at most 253 bytes); the xdsClusterName and
// the cipher suites are never quoted, only measured.
func (t *Tally) Cause(settings source.Settings) string {
	type candidate struct {
		bytes int64
		say   func() string
	}
	var best candidate
	consider := func(c candidate) {
		if c.bytes > best.bytes {
			best = c
		}
	}
	// In name order: with the strict > of consider, a tie goes to the
	// first name, so the message does not depend on map order.
	for _, name := range slices.SortedFunc(maps.Keys(t.secrets), source.NamespacedName.Compare) {
		use := t.secrets[name]
		consider(candidate{use.bytes * use.clusters, func() string {
			return fmt.Sprintf("Secret %q (%s) is inlined into %s", name.String(), FormatBytes(use.bytes), countOf(use.clusters, "Cluster"))
		}})
	}
	if xds := int64(len(settings.XDSClusterName)); xds > 0 {
		consider(candidate{2 * xds * t.extensions, func() string {
			return fmt.Sprintf("settings.xdsClusterName (%s) is repeated in %s", FormatBytes(xds), countOf(t.extensions, "Cluster"))
		}})
	}
	if tls := settings.UpstreamTLS; tls != nil {
		var ciphers int64
		for _, c := range tls.CipherSuites {
			ciphers += int64(len(c))
		}
		consider(candidate{ciphers * t.tlsClusters, func() string {
			return fmt.Sprintf("settings.upstreamTls.cipherSuites (%s) is repeated in %s", FormatBytes(ciphers), countOf(t.tlsClusters, "Cluster"))
		}})
	}
	consider(candidate{t.endpointByte, func() string {
		if 2*t.mostBytes >= t.endpointByte {
			return fmt.Sprintf("ExtensionService %q has up to %s (%s)", t.most.String(), countOf(t.mostCount, "endpoint"), FormatBytes(t.mostBytes))
		}
		return fmt.Sprintf("%s have up to %s (%s), ExtensionService %q the most (%s)",
			countOf(t.extensions, "ExtensionService"), countOf(t.endpoints, "endpoint"), FormatBytes(t.endpointByte), t.most.String(), FormatCount(t.mostCount))
	}})
	if best.say == nil {
		// What is left: names, statuses and the fixed fields of each
		// resource.
		return fmt.Sprintf("%s, about %s each", countOf(t.extensions, "ExtensionService"), FormatBytes(t.Bytes/max(1, t.extensions)))
	}
	return best.say()
}

// TooLargeError is the error of a translation whose output would exceed
// its limit (Limits.MaxOutputBytes).
type TooLargeError struct {
	// Bytes is the bound of the output, Limit the limit.
	Bytes, Limit int64
	// Cause says what makes it large (Tally.Cause).
	Cause string
}

func (e *TooLargeError) Error() string { return e.Describe("the output") }

// Describe says what Error says, of subject ("the response"): "the
// response would be about 575 MB, over the 64 MiB limit: Secret
// "ns/ca" (574 KB) is inlined into 1,000 Clusters".
func (e *TooLargeError) Describe(subject string) string {
	return fmt.Sprintf("%s would be about %s, over the %s limit: %s", subject, FormatBytes(e.Bytes), FormatLimit(e.Limit), e.Cause)
}

// FormatBytes writes n with two or three significant digits and a decimal
// unit: "574 KB", "1.6 GB". Estimates are not exact; their digits should
// not pretend to be.
func FormatBytes(n int64) string {
	units := []string{"bytes", "KB", "MB", "GB", "TB"}
	v, u := float64(n), 0
	for v >= 999.5 && u < len(units)-1 {
		v /= 1000
		u++
	}
	switch {
	case u == 0:
		return strconv.FormatInt(n, 10) + " bytes"
	case v < 9.95:
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[u]
	default:
		return strconv.FormatFloat(v, 'f', 0, 64) + " " + units[u]
	}
}

// FormatLimit writes a configured limit exactly, in the binary unit it
// was most likely given in: "64 MiB".
func FormatLimit(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// FormatCount writes n with thousands separators: "1,000".
func FormatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	start := 0
	if n < 0 {
		start = 1
	}
	for i := len(s) - 3; i > start; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// countOf is n things, with the plural unless n is 1.
func countOf(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return FormatCount(n) + " " + thing + "s"
}
