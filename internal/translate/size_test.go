package translate_test

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/testctx"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/workload"
)

// TestEstimateBoundsOutput holds the Estimator to its promise: for every
// ExtensionService of generated object sets, the Estimate is at least the
// encoded size of its Cluster and ClusterLoadAssignment as a response
// holds them (tributary.v1.Resource), and with JSON at least that with
// their protojson. Half the sets are amplified the ways an attacker would:
// CA bundles of many certificates, a long xdsClusterName, many long cipher
// suites, long IPv6 addresses, slices with many ports.
func TestEstimateBoundsOutput(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 60
	}
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 0x73697a65))
		g := objectgen.New(objectgen.FromRand(r), objectgen.Defaults())
		settings := g.Settings()
		objs := g.Objects()
		if seed%2 == 1 {
			amplify(r, objs, &settings)
		}
		checkEstimates(t, objs, settings)
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

// TestEstimateBoundsShortAddresses: the endpoints whose JSON is the
// largest share of their size (the shortest IPv6 addresses, on port 1),
// many of them, so that no fixed allowance hides a per-endpoint shortfall.
func TestEstimateBoundsShortAddresses(t *testing.T) {
	var endpoints []source.Endpoint
	for i := range 2000 {
		endpoints = append(endpoints, objectgen.ReadyAt(fmt.Sprintf("::%x", i+1)))
	}
	objs := &source.Objects{
		ExtensionServices: []source.ExtensionService{{
			Meta: source.Meta{Namespace: "n", Name: "e"},
			Spec: source.ExtensionServiceSpec{Services: []source.ExtensionServiceTarget{{Name: "s", Port: 1}}, Protocol: new("h2c")},
		}},
		Services:       []source.Service{{Meta: source.Meta{Namespace: "n", Name: "s"}, Type: "ClusterIP", Ports: []source.ServicePort{{Port: 1, Protocol: "TCP"}}}},
		EndpointSlices: []source.EndpointSlice{objectgen.Slice("s-1", "s", "IPv6", objectgen.Ports(objectgen.TCPPort("", 1)), endpoints...)},
	}
	objs.EndpointSlices[0].Namespace = "n"
	if res := translate.Translate(objs, source.Settings{}); len(res.ClusterLoadAssignments) != 1 {
		t.Fatalf("the ExtensionService is invalid: %+v", res.Statuses)
	}
	checkEstimates(t, objs, source.Settings{})
}

// TestQuickBoundsEstimate: Quick ≥ Estimate ≥ the encoded output (through
// checkEstimates) where the two bounds count differently: endpoints with
// several addresses (translation uses the first), with none, whose first
// address is too long or zoned (refused), FQDN slices (no endpoints), and
// the longest addresses each type allows (where Quick is exact).
func TestQuickBoundsEstimate(t *testing.T) {
	for seed := range uint64(100) {
		r := rand.New(rand.NewPCG(seed, 0x717569636b))
		g := objectgen.New(objectgen.FromRand(r), objectgen.Defaults())
		settings := g.Settings()
		objs := g.Objects()
		for i := range objs.EndpointSlices {
			s := &objs.EndpointSlices[i]
			if r.IntN(4) == 0 {
				s.AddressType = []string{"IPv4", "IPv6", "FQDN"}[r.IntN(3)]
			}
			eps := s.Endpoints.Unpack()
			for j := range eps {
				switch r.IntN(6) {
				case 0:
					eps[j].Address = ""
				case 1:
					eps[j].Address = "255.255.255.255"
				case 2:
					eps[j].Address = fmt.Sprintf("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.%d", 100+r.IntN(156))
				case 3:
					eps[j].Address = "fe80::1%" + strings.Repeat("e", 60)
				case 4:
					eps[j].Address = "host.example.com"
				}
			}
			s.Endpoints = source.MakeEndpoints(eps...)
		}
		checkEstimates(t, objs, settings)
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
	}
}

// FuzzEstimate is TestEstimateBoundsOutput on fuzz input.
func FuzzEstimate(f *testing.F) {
	f.Add([]byte{}, uint64(0))
	f.Add(bytes.Repeat([]byte{7}, 64), uint64(1))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		g := objectgen.New(objectgen.FromBytes(data), objectgen.Defaults())
		settings := g.Settings()
		objs := g.Objects()
		amplify(rand.New(rand.NewPCG(seed, 0)), objs, &settings)
		checkEstimates(t, objs, settings)
	})
}

// amplify makes objs and settings larger in the ways that make output
// large, each one time in two.
func amplify(r *rand.Rand, objs *source.Objects, settings *source.Settings) {
	amplifyOptions(r, objs, settings)
	if r.IntN(2) == 0 {
		for i := range objs.Secrets {
			if len(objs.Secrets[i].CACrt) > 0 {
				objs.Secrets[i].CACrt = bytes.Repeat(objectgen.CA, 1+r.IntN(300))
			}
		}
	}
	if r.IntN(2) == 0 {
		settings.XDSClusterName = strings.Repeat("x", 1+r.IntN(16<<10))
	}
	if r.IntN(2) == 0 {
		suites := make([]string, 1+r.IntN(200))
		for i := range suites {
			suites[i] = strings.Repeat("C", 1+r.IntN(1<<10))
		}
		settings.UpstreamTLS = &source.UpstreamTLS{CipherSuites: suites}
	}
	if r.IntN(2) == 0 {
		for i := range objs.EndpointSlices {
			s := &objs.EndpointSlices[i]
			eps := s.Endpoints.Unpack()
			for j := range eps {
				switch r.IntN(3) {
				case 0: // the longest IPv6 literal
					eps[j].Address = fmt.Sprintf("ffff:ffff:ffff:ffff:ffff:ffff:255.255.%d.%d", r.IntN(256), r.IntN(256))
				case 1: // the shortest, whose JSON is the largest share
					eps[j].Address = fmt.Sprintf("::%x", 1+j)
				}
			}
			s.Endpoints = source.MakeEndpoints(eps...)
			switch r.IntN(3) {
			case 0:
				s.Ports = append(s.Ports, objectgen.TCPPort("", 65535), objectgen.TCPPort("", 40000))
			case 1:
				s.Ports = []source.EndpointPort{objectgen.TCPPort("", 1)}
			}
		}
	}
}

// amplifyOptions gives option groups their largest valid values, each
// one time in two: ExtensionServices' spec.options or annotations, and
// the settings' extensionDefaults, hold every group with the longest
// strings model takes and a health check port (which every endpoint
// repeats); ExternalName Services get the longest DNS names, and the
// setting allows them.
func amplifyOptions(r *rand.Rand, objs *source.Objects, settings *source.Settings) {
	if r.IntN(2) == 0 {
		return
	}
	if r.IntN(2) == 0 {
		settings.ExtensionDefaults = largestOptions(r)
		if r.IntN(2) == 0 {
			settings.ExtensionDefaults.TLS.ClientCertificate = nil
		}
	}
	for i := range objs.ExtensionServices {
		es := &objs.ExtensionServices[i]
		if r.IntN(4) == 0 {
			es.Spec.LoadBalancerPolicy = &source.LoadBalancerPolicy{Strategy: "ClientSideWeightedRoundRobin"}
		}
		switch r.IntN(4) {
		case 0:
			es.Spec.Options = largestOptions(r)
			fitOptions(r, es.Spec.Options, &es.Spec)
		case 1:
			es.Annotations = largestAnnotations(r)
			if p := es.Spec.Protocol; p != nil && *p != "h2" || r.IntN(2) == 0 {
				for k := range es.Annotations {
					if strings.HasPrefix(k, source.AnnotationPrefix+"tls-") || strings.HasPrefix(k, source.AnnotationPrefix+"slow-start-") {
						delete(es.Annotations, k)
					}
				}
			}
		}
	}
	if r.IntN(2) == 0 {
		settings.ExternalNameTargets = true
		for i := range objs.Services {
			if svc := &objs.Services[i]; svc.ExternalName != "" {
				svc.ExternalName = longestDNSName(r, i)
			}
		}
	}
}

// fitOptions drops the groups of o that would make an ExtensionService of
// spec invalid (TLS unless h2, health checks and HTTP/2 keepalive over
// HTTP/1.1, slow start unless round robin), and one time in two its
// client certificate, whose Secret may not be one.
func fitOptions(r *rand.Rand, o *source.ExtensionOptions, spec *source.ExtensionServiceSpec) {
	if p := spec.Protocol; p != nil && *p != "h2" {
		o.TLS = nil
		if *p == "http/1.1" {
			o.HealthCheck, o.HTTP2Keepalive = nil, nil
		}
	} else if r.IntN(2) == 0 {
		o.TLS.ClientCertificate = nil
	}
	if p := spec.LoadBalancerPolicy; p != nil && p.Strategy != "" && p.Strategy != "RoundRobin" && p.Strategy != "WeightedLeastRequest" {
		o.SlowStart = nil
	}
}

// The longest strings model takes in options: health check names and
// the SNI (255 bytes), cipher suites (64 names of 128 bytes).
const (
	longestOptionString = 255
	mostCipherSuites    = 64
	longestCipherSuite  = 128
)

// largestOptions is every option group with its largest valid values;
// the strings one time in two at their longest, else short, and a health
// check port at its widest or narrowest.
func largestOptions(r *rand.Rand) *source.ExtensionOptions {
	suites := make([]string, 1+r.IntN(mostCipherSuites))
	for i := range suites {
		suites[i] = strings.Repeat("C", 1+r.IntN(longestCipherSuite))
	}
	return &source.ExtensionOptions{
		HealthCheck: &source.HealthCheck{
			ServiceName: new(strings.Repeat("s", 1+r.IntN(longestOptionString))), Authority: new(strings.Repeat("a", 1+r.IntN(longestOptionString))),
			Interval: new("23h59m59.999999999s"), Timeout: new("23h59m59.999999999s"),
			UnhealthyThreshold: new(uint32(4294967295)), HealthyThreshold: new(uint32(4294967295)),
			Port: new([]uint32{1, 65535}[r.IntN(2)]),
		},
		OutlierDetection: &source.OutlierDetection{
			ConsecutiveGatewayFailure: new(uint32(4294967295)), ConsecutiveLocalOriginFailure: new(uint32(4294967295)),
			FailurePercentageThreshold: new(uint32(100)), FailurePercentageMinimumHosts: new(uint32(4294967295)),
			FailurePercentageRequestVolume: new(uint32(4294967295)), Interval: new("23h59m59.999999999s"),
			BaseEjectionTime: new("23h59m59.999999999s"), MaxEjectionTime: new("23h59m59.999999999s"), MaxEjectionPercent: new(uint32(100)),
		},
		TLS: &source.ExtensionTLS{
			SNI: new(sniOf(1 + r.IntN(longestOptionString))), ClientCertificate: new("client"),
			MinimumProtocolVersion: new("1.2"), MaximumProtocolVersion: new("1.3"), CipherSuites: suites,
		},
		HTTP2Keepalive:   &source.HTTP2Keepalive{Interval: new("23h59m59.999999999s"), Timeout: new("23h59m59.999999999s")},
		TCPKeepalive:     &source.TCPKeepalive{Probes: new(uint32(127)), Time: new("9h6m7s"), Interval: new("9h6m7s")},
		ConnectionLimits: &source.ConnectionLimits{MaxConnectionDuration: new("23h59m59.999999999s"), MaxRequestsPerConnection: new(uint32(4294967295))},
		SlowStart:        &source.SlowStart{Window: new("23h59m59.999999999s"), Aggression: new(1e300), MinWeightPercent: new(99.999999)},
		ClientSideWeightedRoundRobin: &source.ClientSideWeightedRoundRobin{
			EnableOOBLoadReport: new(true), OOBReportingPeriod: new("23h59m59.999999999s"), BlackoutPeriod: new("23h59m59.999999999s"),
			WeightExpirationPeriod: new("23h59m59.999999999s"), WeightUpdatePeriod: new("23h59m59.999999999s"), ErrorUtilizationPenalty: new(3.4e38),
		},
	}
}

// sniOf is a host name of n bytes: labels of up to 63 letters.
func sniOf(n int) string {
	b := []byte(strings.Repeat("a", n))
	for i := 62; i < n-1; i += 63 {
		b[i] = '.'
	}
	return string(b)
}

// longestDNSName is a DNS name of up to 253 bytes, one time in two the
// longest, starting with the i-th letter, so that different i give
// different names.
func longestDNSName(r *rand.Rand, i int) string {
	n := 253
	if r.IntN(2) == 0 {
		n = 1 + r.IntN(253)
	}
	return string(rune('a'+i%26)) + sniOf(n)[1:]
}

// largestAnnotations is largestOptions as annotations write it.
func largestAnnotations(r *rand.Rand) map[string]string {
	o := largestOptions(r)
	a := map[string]string{}
	add := func(key, value string) { a[source.AnnotationPrefix+key] = value }
	add("health-check-service-name", *o.HealthCheck.ServiceName)
	add("health-check-authority", *o.HealthCheck.Authority)
	add("health-check-interval", *o.HealthCheck.Interval)
	add("health-check-port", fmt.Sprint(*o.HealthCheck.Port))
	add("outlier-detection-consecutive-gateway-failure", "4294967295")
	add("outlier-detection-max-ejection-time", *o.OutlierDetection.MaxEjectionTime)
	add("tls-sni", *o.TLS.SNI)
	add("tls-client-certificate", "client")
	add("tls-cipher-suites", strings.Join(o.TLS.CipherSuites, ","))
	add("http2-keepalive-interval", "1s")
	add("tcp-keepalive-probes", "127")
	add("connection-limits-max-requests-per-connection", "4294967295")
	add("slow-start-window", "23h59m59.999999999s")
	add("client-side-weighted-round-robin-blackout-period", "1s")
	return a
}

// checkEstimates checks every ExtensionService's Estimate against what
// Translate makes of it.
func checkEstimates(t *testing.T, objs *source.Objects, settings source.Settings) {
	t.Helper()
	res := translate.Translate(objs, settings)
	clusters, clas := byName(res.Clusters), byName(res.ClusterLoadAssignments)
	estimator := translate.NewEstimator(model.NewIndex(objs), settings)
	for i := range objs.ExtensionServices {
		es := &objs.ExtensionServices[i]
		est := estimator.Estimate(es)
		if quick := estimator.Quick(es); quick < est.Bytes {
			t.Errorf("%s/%s: Quick is %d bytes, under the Estimate of %d (%+v)", es.Namespace, es.Name, quick, est.Bytes, est)
		}
		name := model.ClusterName(es.Namespace, es.Name)
		cluster, ok := clusters[name]
		if !ok {
			continue // invalid: no output to bound
		}
		// A STRICT_DNS Cluster has no ClusterLoadAssignment.
		cla, hasCLA := clas[name]
		size := func(withJSON bool) int64 {
			n := resourceSize(t, cluster, resourcev3.ClusterType, withJSON)
			if hasCLA {
				n += resourceSize(t, cla, resourcev3.EndpointType, withJSON)
			}
			return n
		}
		binary := size(false)
		if binary > est.Bytes {
			t.Errorf("%s/%s: output is %d bytes, over its estimate of %d (%+v)", es.Namespace, es.Name, binary, est.Bytes, est)
		}
		withJSON := size(true)
		if withJSON > est.Bytes*(1+translate.JSONExpansion) {
			t.Errorf("%s/%s: output with JSON is %d bytes, over its estimate of %d × %d", es.Namespace, es.Name, withJSON, est.Bytes, 1+translate.JSONExpansion)
		}
	}
}

func byName(rs []translate.Resource) map[string]translate.Resource {
	m := make(map[string]translate.Resource, len(rs))
	for _, r := range rs {
		m[r.Name] = r
	}
	return m
}

// resourceSize is the encoded size of r as a response holds it, with its
// protojson when withJSON is set (as include_json renders it).
func resourceSize(t *testing.T, r translate.Resource, typeURL string, withJSON bool) int64 {
	t.Helper()
	pb := &tributaryv1.Resource{Name: r.Name, Version: r.Version, Resource: &anypb.Any{TypeUrl: typeURL, Value: r.Body}}
	if withJSON {
		mt, err := protoregistry.GlobalTypes.FindMessageByURL(typeURL)
		if err != nil {
			t.Fatal(err)
		}
		m := mt.New().Interface()
		if err := proto.Unmarshal(r.Body, m); err != nil {
			t.Fatal(err)
		}
		j, err := protojson.MarshalOptions{Resolver: protoregistry.GlobalTypes}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		pb.Json = string(j)
	}
	return int64(proto.Size(pb))
}

// caAmplification is the reproduction, scaled by n: one Secret
// whose ca.crt holds 1,000 copies of one CA, and n h2 ExtensionServices
// validating against it.
func caAmplification(n int) *source.Objects {
	objs := &source.Objects{
		Secrets: []source.Secret{{Meta: source.Meta{Namespace: "ns", Name: "ca"}, Type: "Opaque", CACrt: bytes.Repeat(objectgen.CA, 1000)}},
	}
	for i := range n {
		objs.ExtensionServices = append(objs.ExtensionServices, source.ExtensionService{
			Meta: source.Meta{Namespace: "ns", Name: fmt.Sprintf("ext-%d", i)},
			Spec: source.ExtensionServiceSpec{
				Services:   []source.ExtensionServiceTarget{{Name: "svc", Port: 9000}},
				Validation: &source.UpstreamValidation{CASecret: "ca", SubjectName: "ext.ns.svc"},
			},
		})
	}
	return objs
}

// TestBoundedTooLarge: the CA amplification fails before
// anything is built, naming the Secret; so do the other amplifications.
func TestBoundedTooLarge(t *testing.T) {
	const limit = 64 << 20
	ca := int64(len(objectgen.CA)) * 1000
	longName := strings.Repeat("x", 16<<10)
	manyEndpoints := workload.Standard(4, 100_000)
	// The one whose addresses are longest.
	most := slices.MaxFunc(manyEndpoints.ExtensionServices, func(a, b source.ExtensionService) int {
		return cmp.Compare(endpointBytesOf(&source.Objects{ExtensionServices: []source.ExtensionService{a}, EndpointSlices: manyEndpoints.EndpointSlices}),
			endpointBytesOf(&source.Objects{ExtensionServices: []source.ExtensionService{b}, EndpointSlices: manyEndpoints.EndpointSlices}))
	})
	for _, c := range []struct {
		name     string
		objs     *source.Objects
		settings source.Settings
		json     bool
		want     string
	}{{
		name: "CA Secret",
		objs: caAmplification(1000),
		want: fmt.Sprintf(`the output would be about %s, over the 64 MiB limit: Secret "ns/ca" (%s) is inlined into 1,000 Clusters`,
			translate.FormatBytes(estimateOf(caAmplification(1000), source.Settings{})), translate.FormatBytes(ca)),
	}, {
		name:     "xdsClusterName",
		objs:     caAmplification(0),
		settings: source.Settings{XDSClusterName: longName},
	}, {
		name: "endpoints",
		objs: manyEndpoints,
		json: true,
		want: fmt.Sprintf(`the output would be about %s, over the 64 MiB limit: 4 ExtensionServices have up to 800,000 endpoints (%s), ExtensionService "%s" the most (200,000)`,
			translate.FormatBytes((1+translate.JSONExpansion)*estimateOf(manyEndpoints, source.Settings{})), translate.FormatBytes(endpointBytesOf(manyEndpoints)), most.NamespacedName()),
	}} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "xdsClusterName" {
				for i := range 4000 {
					c.objs.ExtensionServices = append(c.objs.ExtensionServices, source.ExtensionService{
						Meta: source.Meta{Namespace: "ns", Name: fmt.Sprintf("ext-%d", i)},
						Spec: source.ExtensionServiceSpec{Services: []source.ExtensionServiceTarget{{Name: "svc", Port: 9000}}, Protocol: new("h2c")},
					})
				}
				c.want = fmt.Sprintf(`the output would be about %s, over the 64 MiB limit: settings.xdsClusterName (16 KB) is repeated in 4,000 Clusters`,
					translate.FormatBytes(estimateOf(c.objs, c.settings)))
			}
			res, err := translate.Bounded(t.Context(), c.objs, c.settings, translate.Limits{MaxOutputBytes: limit, JSON: c.json})
			if tooLarge, ok := errors.AsType[*translate.TooLargeError](err); !ok || err.Error() != c.want || res != nil {
				t.Fatalf("got %v, %v; want a *TooLargeError saying\n%s", res, err, c.want)
			} else if tooLarge.Limit != limit {
				t.Errorf("limit %d, want %d", tooLarge.Limit, limit)
			}
		})
	}
}

// estimateOf is the sum of the Estimates of objs's ExtensionServices.
func estimateOf(objs *source.Objects, settings source.Settings) int64 {
	e := translate.NewEstimator(model.NewIndex(objs), settings)
	var n int64
	for i := range objs.ExtensionServices {
		n += e.Estimate(&objs.ExtensionServices[i]).Bytes
	}
	return n
}

func endpointBytesOf(objs *source.Objects) int64 {
	e := translate.NewEstimator(model.NewIndex(objs), source.Settings{})
	var n int64
	for i := range objs.ExtensionServices {
		n += e.Estimate(&objs.ExtensionServices[i]).EndpointBytes
	}
	return n
}

// TestStandardWorkloadFits: the estimate of the standard workload is
// close above its encoded size (9% at M=100: a Cluster's fixed fields and
// a status, with its availability per target, are counted at their
// largest), so the largest one in BENCHMARKS.md (N=10000, M=100: two
// million endpoints, 59 MB encoded, estimated 64.7 MB) fits in the default
// 64 MiB (67.1 MB).
func TestStandardWorkloadFits(t *testing.T) {
	objs := workload.Standard(1000, 100)
	res := translate.Translate(objs, source.Settings{})
	var encoded int64
	for i := range res.Clusters {
		encoded += resourceSize(t, res.Clusters[i], resourcev3.ClusterType, false) + resourceSize(t, res.ClusterLoadAssignments[i], resourcev3.EndpointType, false)
		st := &res.Statuses[i]
		status := &tributaryv1.ExtensionServiceStatus{Namespace: st.Namespace, Name: st.Name, ClusterName: st.ClusterName, Conditions: []*tributaryv1.DetailedCondition{{
			Type: st.Condition.Type, Status: st.Condition.Status, Reason: st.Condition.Reason, Message: st.Condition.Message,
		}}}
		for _, a := range st.Availability {
			status.Availability = append(status.Availability, &tributaryv1.TargetAvailability{
				Service: a.Service, Port: a.Port, ReadyEndpoints: a.ReadyEndpoints, Weight: a.Weight, Reason: a.Reason,
			})
		}
		encoded += int64(proto.Size(status))
	}
	est := estimateOf(objs, source.Settings{})
	t.Logf("N=1000, M=100: estimate %d, encoded %d (%.1f%% above)", est, encoded, 100*(float64(est)/float64(encoded)-1))
	if est < encoded || float64(est) > 1.1*float64(encoded) {
		t.Errorf("N=1000, M=100: estimate %d, real size %d; want the estimate within 10%% above", est, encoded)
	}
	if testing.Short() {
		return
	}
	large := workload.Standard(10000, 100)
	est = estimateOf(large, source.Settings{})
	t.Logf("N=10000, M=100: estimate %d (%s)", est, translate.FormatBytes(est))
	if est > 64<<20 {
		t.Errorf("N=10000, M=100: estimate %d (%s), over 64 MiB", est, translate.FormatBytes(est))
	}
	_, err := translate.Bounded(t.Context(), large, source.Settings{}, translate.Limits{MaxOutputBytes: 64 << 20})
	if err != nil {
		t.Errorf("N=10000, M=100 under 64 MiB: %v", err)
	}
}

// TestBoundedReserves holds the output bound to its contract: Reserve
// is given the sum of the Quick bounds when it is within the limit, and
// the sum of the precise Estimates when it is not or after Reserve
// refused it; and the output is refused when that is over the limit.
// The sets make the bound take the precise Estimates along at different
// points (see checkOutput): never, after the first few hundred, past the
// middle, and early in a set that fits.
func TestBoundedReserves(t *testing.T) {
	uniform := workload.Standard(600, 10)
	secondHalf := workload.Standard(600, 10)
	growExtensions(secondHalf, 300, 600, 60)
	first := workload.Standard(600, 10)
	growExtensions(first, 0, 1, 20000)
	refused := errors.New("no memory now")
	for _, c := range []struct {
		name string
		objs *source.Objects
	}{{"uniform", uniform}, {"second half larger", secondHalf}, {"first largest", first}} {
		quick, precise := quickOf(c.objs), estimateOf(c.objs, source.Settings{})
		// The cause as a Tally of every Estimate in name order says it.
		order := slices.Clone(c.objs.ExtensionServices)
		slices.SortFunc(order, func(a, b source.ExtensionService) int { return a.NamespacedName().Compare(b.NamespacedName()) })
		estimator := translate.NewEstimator(model.NewIndex(c.objs), source.Settings{})
		var tally translate.Tally
		for i := range order {
			est := estimator.Estimate(&order[i])
			tally.Add(order[i].NamespacedName(), &est)
		}
		cause := tally.Cause(source.Settings{})
		if quick <= precise {
			t.Fatalf("%s: Quick %d, Estimate %d: the test needs Quick over the Estimate", c.name, quick, precise)
		}
		for _, json := range []bool{false, true} {
			scale := int64(1)
			if json {
				scale = 1 + translate.JSONExpansion
			}
			for _, limit := range []int64{quick, quick - 1, (quick + precise) / 2, precise, precise - 1} {
				for _, refuseFirst := range []bool{false, true} {
					var want []int64
					wantErr := context.Canceled
					var wantTooLarge *translate.TooLargeError
					switch {
					case limit < precise:
						wantTooLarge = &translate.TooLargeError{Bytes: scale * precise, Limit: scale * limit, Cause: cause}
					case limit < quick:
						want = []int64{scale * precise}
						if refuseFirst {
							wantErr = refused
						}
					case refuseFirst:
						want = []int64{scale * quick, scale * precise}
					default:
						want = []int64{scale * quick}
					}
					// A Reserve that grants cancels the translation: what
					// is built after it is not the test's.
					ctx, cancel := context.WithCancel(t.Context())
					var got []int64
					_, err := translate.Bounded(ctx, c.objs, source.Settings{}, translate.Limits{MaxOutputBytes: scale * limit, JSON: json, Reserve: func(bytes int64) error {
						got = append(got, bytes)
						if refuseFirst && len(got) == 1 {
							return refused
						}
						cancel()
						return nil
					}})
					cancel()
					what := fmt.Sprintf("%s, JSON %v, limit %d (Quick %d, Estimate %d), refusing first %v", c.name, json, limit, quick, precise, refuseFirst)
					if wantTooLarge != nil {
						if tooLarge, ok := errors.AsType[*translate.TooLargeError](err); !ok || *tooLarge != *wantTooLarge {
							t.Errorf("%s: got %v, want %v", what, err, wantTooLarge)
						}
					} else if !errors.Is(err, wantErr) {
						t.Errorf("%s: got %v, want %v", what, err, wantErr)
					}
					if !slices.Equal(got, want) {
						t.Errorf("%s: reserved %v, want %v", what, got, want)
					}
				}
			}
		}
	}
}

// growExtensions gives the slices of the ExtensionServices from to to
// (in name order) of a standard workload m endpoints each.
func growExtensions(objs *source.Objects, from, to, m int) {
	names := make([]string, len(objs.ExtensionServices))
	for i := range objs.ExtensionServices {
		names[i] = objs.ExtensionServices[i].Name
	}
	slices.Sort(names)
	grow := map[string]bool{}
	for _, name := range names[from:to] {
		grow[name] = true
	}
	pod := uint32(1 << 22)
	for i := range objs.EndpointSlices {
		s := &objs.EndpointSlices[i]
		service := s.Service
		if !grow[strings.TrimSuffix(strings.TrimSuffix(service, "-primary"), "-canary")] {
			continue
		}
		var eps source.EndpointsBuilder
		for range m {
			eps.Add(workload.PodAddress(pod).String(), false)
			pod++
		}
		s.Endpoints = eps.Endpoints()
	}
}

// quickOf is the sum of the Quick bounds of objs's ExtensionServices.
func quickOf(objs *source.Objects) int64 {
	e := translate.NewEstimator(model.NewIndex(objs), source.Settings{})
	var n int64
	for i := range objs.ExtensionServices {
		n += e.Quick(&objs.ExtensionServices[i])
	}
	return n
}

// TestBoundedCancelled: a translation stops once its context is
// done, before or while building, and returns the context's error.
func TestBoundedCancelled(t *testing.T) {
	objs := workload.Standard(1000, 10)
	for _, looks := range []int64{1, 2, 500} {
		ctx := testctx.NewCancelAfter(t, looks)
		res, err := translate.Bounded(ctx, objs, source.Settings{}, translate.Limits{MaxOutputBytes: 64 << 20})
		if !errors.Is(err, context.Canceled) || res != nil {
			t.Errorf("cancelled at look %d: got %v, %v; want context.Canceled", looks, res, err)
		}
		// Each worker stops at its next look: 1,000 ExtensionServices
		// estimated, then at most one look per ExtensionService built.
		if got := ctx.Looks(); got > max(looks, 1000)+int64(2*len(objs.ExtensionServices)) {
			t.Errorf("cancelled at look %d: %d looks", looks, got)
		}
	}
	ctx, cancel := context.WithDeadline(t.Context(), time.Unix(0, 0))
	defer cancel()
	if _, err := translate.Bounded(ctx, objs, source.Settings{}, translate.Limits{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("past deadline: got %v, want context.DeadlineExceeded", err)
	}
}

// TestFormat pins the formats of sizes and counts in messages.
func TestFormat(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{translate.FormatBytes(0), "0 bytes"},
		{translate.FormatBytes(999), "999 bytes"},
		{translate.FormatBytes(1000), "1.0 KB"},
		{translate.FormatBytes(574_000), "574 KB"},
		{translate.FormatBytes(9_960), "10 KB"},
		{translate.FormatBytes(1_580_000_000), "1.6 GB"},
		{translate.FormatLimit(64 << 20), "64 MiB"},
		{translate.FormatLimit(1 << 30), "1 GiB"},
		{translate.FormatLimit(1000), "1000 bytes"},
		{translate.FormatCount(1000), "1,000"},
		{translate.FormatCount(999), "999"},
		{translate.FormatCount(2_000_000), "2,000,000"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestCauseTiesGoToTheFirstSecret: two CA Secrets of equal size, each
// inlined into as many Clusters, are an equal cause; the message names the
// first by namespace and name, on every run and whatever the order of
// adding.
func TestCauseTiesGoToTheFirstSecret(t *testing.T) {
	a := source.NamespacedName{Namespace: "ns", Name: "ca-a"}
	b := source.NamespacedName{Namespace: "ns", Name: "ca-b"}
	want := `Secret "ns/ca-a" (1.0 KB) is inlined into 2 Clusters`
	for run := range 50 {
		var tally translate.Tally
		for i, secret := range []source.NamespacedName{b, a, a, b} {
			if run%2 == 1 {
				secret = map[source.NamespacedName]source.NamespacedName{a: b, b: a}[secret]
			}
			tally.Add(source.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("tls-%d", i)}, &translate.Estimate{Bytes: 1100, CASecret: secret, CABytes: 1000})
		}
		if got := tally.Cause(source.Settings{}); got != want {
			t.Fatalf("run %d: got %s, want %s", run, got, want)
		}
	}
}

// TestEstimateBoundsLargestOptions: every option group at its largest
// valid values, from each of the three places options come from, on
// endpoints whose JSON is the largest share of their size and with a
// health check port every endpoint repeats; and a STRICT_DNS Cluster of
// the longest DNS names; strings of random lengths up to their longest.
// Each ExtensionService must be valid and carry its options, so that the
// bound is checked where it is tightest.
func TestEstimateBoundsLargestOptions(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 2))
		var endpoints []source.Endpoint
		for i := range 500 {
			endpoints = append(endpoints, objectgen.ReadyAt(fmt.Sprintf("::%x", i+1)))
		}
		slice := objectgen.Slice("s-1", "s", "IPv6", objectgen.Ports(objectgen.TCPPort("", 1)), endpoints...)
		base := source.Objects{
			Services:       []source.Service{{Meta: source.Meta{Namespace: objectgen.Namespace, Name: "s"}, Type: "ClusterIP", Ports: []source.ServicePort{{Port: 1, Protocol: "TCP"}}}},
			EndpointSlices: []source.EndpointSlice{slice},
			Secrets: []source.Secret{
				{Meta: source.Meta{Namespace: objectgen.Namespace, Name: "client"}, Type: "kubernetes.io/tls", TLSCrt: objectgen.ClientCertificate},
				{Meta: source.Meta{Namespace: objectgen.Namespace, Name: "ca"}, Type: "Opaque", CACrt: bytes.Repeat(objectgen.CA, 3)},
			},
		}
		for i := range 3 {
			base.Services = append(base.Services, source.Service{
				Meta: source.Meta{Namespace: objectgen.Namespace, Name: fmt.Sprintf("dns-%d", i)}, Type: "ExternalName",
				ExternalName: longestDNSName(r, i), Ports: []source.ServicePort{{Port: 65535, Protocol: "TCP"}},
			})
		}
		h2 := func(name string) source.ExtensionService {
			return source.ExtensionService{
				Meta: source.Meta{Namespace: objectgen.Namespace, Name: name},
				Spec: source.ExtensionServiceSpec{
					Services:   []source.ExtensionServiceTarget{{Name: "s", Port: 1, Weight: 4294967295}},
					Validation: &source.UpstreamValidation{CASecret: "ca", SubjectName: sniOf(255)},
				},
			}
		}
		for _, c := range []struct {
			name     string
			es       func() source.ExtensionService
			defaults bool
		}{{
			name: "spec.options",
			es: func() source.ExtensionService {
				es := h2("spec")
				es.Spec.Options = largestOptions(r)
				es.Spec.Options.ClientSideWeightedRoundRobin = nil
				return es
			},
		}, {
			name: "annotations",
			es: func() source.ExtensionService {
				es := h2("annotated")
				es.Annotations = largestAnnotations(r)
				delete(es.Annotations, source.AnnotationPrefix+"client-side-weighted-round-robin-blackout-period")
				return es
			},
		}, {
			name:     "defaults",
			es:       func() source.ExtensionService { return h2("defaulted") },
			defaults: true,
		}, {
			name: "ClientSideWeightedRoundRobin",
			es: func() source.ExtensionService {
				es := h2("cswrr")
				es.Spec.LoadBalancerPolicy = &source.LoadBalancerPolicy{Strategy: "ClientSideWeightedRoundRobin"}
				es.Spec.Options = largestOptions(r)
				es.Spec.Options.SlowStart = nil
				return es
			},
		}, {
			name: "ExternalName",
			es: func() source.ExtensionService {
				es := h2("dns")
				es.Spec.Services = []source.ExtensionServiceTarget{{Name: "dns-0", Port: 65535, Weight: 1}, {Name: "dns-1", Port: 65535}, {Name: "dns-2", Port: 65535, Weight: 4294967294}}
				es.Spec.Options = largestOptions(r)
				es.Spec.Options.ClientSideWeightedRoundRobin = nil // tuning a strategy it does not use is an error
				return es
			},
		}} {
			t.Run(fmt.Sprintf("%s/%d", c.name, seed), func(t *testing.T) {
				objs := base
				objs.ExtensionServices = []source.ExtensionService{c.es()}
				settings := source.Settings{
					XDSClusterName: strings.Repeat("x", 300), ExternalNameTargets: true,
					UpstreamTLS: &source.UpstreamTLS{CipherSuites: []string{strings.Repeat("C", 128)}},
				}
				if c.defaults {
					settings.ExtensionDefaults = largestOptions(r)
					settings.ExtensionDefaults.TLS.ClientCertificate = nil // a Secret in the ExtensionService's namespace
				}
				res := translate.Translate(&objs, settings)
				if st := res.Statuses[0]; len(st.Condition.Errors) > 0 || len(res.Clusters) != 1 {
					t.Fatalf("the ExtensionService is invalid: %+v", st.Condition.Errors)
				}
				cluster := new(clusterv3.Cluster)
				if err := proto.Unmarshal(res.Clusters[0].Body, cluster); err != nil {
					t.Fatal(err)
				}
				if len(cluster.GetHealthChecks()) == 0 || cluster.GetOutlierDetection() == nil || cluster.GetUpstreamConnectionOptions() == nil ||
					cluster.GetTransportSocket() == nil || (cluster.GetLoadBalancingPolicy() == nil) == (cluster.GetRoundRobinLbConfig() == nil) {
					t.Fatalf("the Cluster lacks options: %v", cluster)
				}
				checkEstimates(t, &objs, settings)

				// What the options add is bounded by what the estimate adds
				// for them, so that no fixed allowance elsewhere hides a
				// shortfall.
				plain := objs
				plain.ExtensionServices = []source.ExtensionService{c.es()}
				es := &plain.ExtensionServices[0]
				es.Spec.Options, es.Annotations, es.Spec.LoadBalancerPolicy = nil, nil, nil
				plainSettings := settings
				plainSettings.ExtensionDefaults = nil
				estimate := func(objs *source.Objects, settings source.Settings) int64 {
					return translate.NewEstimator(model.NewIndex(objs), settings).Estimate(&objs.ExtensionServices[0]).Bytes
				}
				size := func(objs *source.Objects, settings source.Settings) int64 {
					res := translate.Translate(objs, settings)
					n := resourceSize(t, res.Clusters[0], resourcev3.ClusterType, false)
					for _, cla := range res.ClusterLoadAssignments {
						n += resourceSize(t, cla, resourcev3.EndpointType, false)
					}
					return n
				}
				added, estimated := size(&objs, settings)-size(&plain, plainSettings), estimate(&objs, settings)-estimate(&plain, plainSettings)
				t.Logf("options add %d bytes, estimated %d", added, estimated)
				if added > estimated {
					t.Errorf("options add %d bytes, over the %d the estimate adds for them", added, estimated)
				}
			})
		}
	}
}
