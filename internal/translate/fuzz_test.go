package translate_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/internal/envoy"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/tlsfiles/testcerts"
	"github.com/tributary-dev/tributary/internal/translate"
)

// FuzzTranslate drives the whole pipeline with object sets generated from
// the fuzz input over a small universe of names, so that lookups, weights,
// duplicates and TLS references collide often. Every run must: not panic,
// give one status per ExtensionService, give resources exactly for the
// valid ones, encode every Cluster and ClusterLoadAssignment to the same
// bytes as marshalling the reference protos, and emit only resources that
// pass ValidateAll and the contract's extra checks.
func FuzzTranslate(f *testing.F) {
	for _, seed := range [][]byte{
		{},
		{0, 1, 2, 3, 4, 5, 6, 7, 8, 9},
		bytes.Repeat([]byte{7}, 64),
		[]byte("tributary fuzz seed with some words in it"),
		{255, 254, 253, 252, 1, 0, 1, 0, 200, 100, 50, 25, 12, 6, 3, 1},
		bytes.Repeat([]byte{1, 2, 3, 250}, 40),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, settings := generateObjects(&fuzzBytes{data: data})
		got := translate.Translate(objs, settings)
		checkResult(t, objs, got)
		want := translate.TranslateReference(objs, settings)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("fast path differs from the reference encoding (-reference +fast):\n%s", diff)
		}
	})
}

// checkResult asserts the invariants every Result must hold.
func checkResult(t *testing.T, objs *source.Objects, res *translate.Result) {
	t.Helper()
	if len(res.Statuses) != len(objs.ExtensionServices) {
		t.Fatalf("got %d statuses for %d ExtensionServices", len(res.Statuses), len(objs.ExtensionServices))
	}
	valid := map[string]bool{}
	for _, st := range res.Statuses {
		if len(st.Condition.Errors) == 0 {
			if st.Condition.Status != model.ConditionTrue {
				t.Errorf("%s/%s: no errors but status %q", st.Namespace, st.Name, st.Condition.Status)
			}
			valid[st.ClusterName] = true
		} else if st.ClusterName != "" {
			t.Errorf("%s/%s: invalid but names cluster %q", st.Namespace, st.Name, st.ClusterName)
		}
	}
	if len(res.Clusters) != len(valid) || len(res.ClusterLoadAssignments) != len(valid) {
		t.Fatalf("got %d clusters and %d CLAs for %d valid ExtensionServices",
			len(res.Clusters), len(res.ClusterLoadAssignments), len(valid))
	}
	for i, r := range res.Clusters {
		c := new(clusterv3.Cluster)
		if err := proto.Unmarshal(r.Body, c); err != nil {
			t.Fatalf("cluster %s: %v", r.Name, err)
		}
		if err := c.ValidateAll(); err != nil {
			t.Errorf("cluster %s fails ValidateAll: %v", r.Name, err)
		}
		if c.GetName() != r.Name || !valid[r.Name] {
			t.Errorf("cluster %q listed as %q", c.GetName(), r.Name)
		}
		if cla := res.ClusterLoadAssignments[i]; cla.Name != r.Name {
			t.Errorf("cluster %d is %q but its CLA is %q", i, r.Name, cla.Name)
		}
	}
	for _, r := range res.ClusterLoadAssignments {
		cla := new(endpointv3.ClusterLoadAssignment)
		if err := proto.Unmarshal(r.Body, cla); err != nil {
			t.Fatalf("CLA %s: %v", r.Name, err)
		}
		if err := cla.ValidateAll(); err != nil {
			t.Errorf("CLA %s fails ValidateAll: %v", r.Name, err)
		}
		if err := envoy.CheckClusterLoadAssignment(cla); err != nil {
			t.Errorf("CLA %s fails the extra checks: %v", r.Name, err)
		}
		if cla.GetClusterName() != r.Name {
			t.Errorf("CLA %q listed as %q", cla.GetClusterName(), r.Name)
		}
	}
}

// fuzzBytes hands out fuzz input a byte at a time, then zeros.
type fuzzBytes struct {
	data []byte
	pos  int
}

func (b *fuzzBytes) byte() byte {
	if b.pos >= len(b.data) {
		return 0
	}
	b.pos++
	return b.data[b.pos-1]
}

func (b *fuzzBytes) intn(n int) int { return int(b.byte()) % n }

func (b *fuzzBytes) bool() bool { return b.byte()&1 == 1 }

func pick[T any](b *fuzzBytes, choices ...T) T { return choices[b.intn(len(choices))] }

var (
	fuzzCA       = testcerts.SelfSignedPEM("fuzz-ca")
	fuzzLeaf     = testcerts.SelfSignedPEM("envoy-client")
	namespaces   = []string{"auth", "other"}
	serviceNames = []string{"s0", "s1", "s2"}
	timeouts     = []string{"", "1s", "500ms", "infinity", "infinite", "-1s", "bogus", "0s", "1.5h"}
	addresses    = []string{
		"10.0.0.1", "10.0.0.2", "10.0.0.10", "9.255.255.255", "192.168.1.1",
		"2001:db8::1", "2001:db8::2", "::1", "fe80::1%eth0", "not-an-ip", "", "::ffff:10.0.0.1",
	}
)

func str(s string) *string { return &s }
func i32(i int32) *int32   { return &i }
func boolp(v bool) *bool   { return &v }

func generateObjects(b *fuzzBytes) (*source.Objects, source.Settings) {
	objs := &source.Objects{}
	var settings source.Settings
	if b.bool() {
		settings.XDSClusterName = pick(b, "contour", "tributary", "ns/xds")
	}
	settings.ConnectTimeout = time.Duration(b.intn(4)) * 250 * time.Millisecond
	if b.bool() {
		settings.GlobalCircuitBreakers = &source.CircuitBreakers{MaxConnections: uint32(b.intn(3)), PerHostMaxConnections: uint32(b.intn(2))}
	}
	if b.intn(4) == 0 {
		settings.ClientCertificate = &source.NamespacedName{Namespace: "auth", Name: pick(b, "client", "missing", "ca")}
	}
	if b.bool() {
		settings.UpstreamTLS = &source.UpstreamTLS{
			MinimumProtocolVersion: pick(b, "", "1.2", "1.3", "1.1"),
			MaximumProtocolVersion: pick(b, "", "1.2", "1.3"),
			CipherSuites:           pick(b, []string(nil), []string{"ECDHE-ECDSA-AES128-GCM-SHA256"}),
		}
	}
	for _, ns := range namespaces {
		for _, name := range serviceNames {
			if b.intn(5) == 0 {
				continue
			}
			svc := source.Service{Meta: source.Meta{Namespace: ns, Name: name}}
			if b.intn(8) == 0 {
				svc.Type, svc.ExternalName = "ExternalName", "example.com"
			}
			for p := range 1 + b.intn(2) {
				svc.Ports = append(svc.Ports, source.ServicePort{
					Name:     pick(b, "", "grpc", "9000", "http"),
					Port:     int32(9000 + p + b.intn(2)),
					Protocol: pick(b, "", "TCP", "TCP", "UDP"),
				})
			}
			objs.Services = append(objs.Services, svc)
			for s := range b.intn(3) {
				slice := source.EndpointSlice{
					Meta: source.Meta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, s),
						Labels: map[string]string{source.ServiceNameLabel: name}},
					AddressType: pick(b, "IPv4", "IPv4", "IPv6", "FQDN"),
				}
				for range b.intn(6) {
					ep := source.Endpoint{}
					for range b.intn(3) {
						ep.Addresses = append(ep.Addresses, pick(b, addresses...))
					}
					ep.Ready = pick(b, nil, boolp(true), boolp(false))
					slice.Endpoints = append(slice.Endpoints, ep)
				}
				for range b.intn(3) {
					port := source.EndpointPort{}
					if b.intn(4) != 0 {
						port.Port = i32(int32(pick(b, 9000, 9001, 8080, 65535, 1)))
					}
					if b.intn(4) != 0 {
						port.Protocol = str(pick(b, "TCP", "TCP", "UDP"))
					}
					if b.bool() {
						port.Name = str(pick(b, "", "grpc", "http"))
					}
					slice.Ports = append(slice.Ports, port)
				}
				objs.EndpointSlices = append(objs.EndpointSlices, slice)
			}
		}
	}
	objs.Secrets = []source.Secret{
		{Meta: source.Meta{Namespace: "auth", Name: "ca"}, Type: "Opaque", CACrt: fuzzCA},
		{Meta: source.Meta{Namespace: "other", Name: "ca"}, Type: "Opaque", CACrt: fuzzCA},
		{Meta: source.Meta{Namespace: "auth", Name: "empty-ca"}, Type: "Opaque"},
		{Meta: source.Meta{Namespace: "auth", Name: "bad-ca"}, Type: "Opaque", CACrt: []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")},
		{Meta: source.Meta{Namespace: "auth", Name: "client"}, Type: "kubernetes.io/tls", TLSCrt: fuzzLeaf},
	}
	if b.bool() {
		objs.TLSCertificateDelegations = []source.TLSCertificateDelegation{{
			Meta:        source.Meta{Namespace: "other", Name: "delegate"},
			Delegations: []source.CertificateDelegation{{SecretName: "ca", TargetNamespaces: []string{pick(b, "auth", "*", "nobody")}}},
		}}
	}
	for e := range 1 + b.intn(4) {
		es := source.ExtensionService{Meta: source.Meta{Namespace: pick(b, namespaces...), Name: fmt.Sprintf("ext-%d", e), Generation: int64(b.intn(5))}}
		for range b.intn(4) {
			es.Spec.Services = append(es.Spec.Services, source.ExtensionServiceTarget{
				Name:   pick(b, serviceNames...),
				Port:   int32(9000 + b.intn(3)),
				Weight: pick[uint32](b, 0, 0, 1, 20, 80, 4294967295),
			})
		}
		if b.intn(3) == 0 {
			es.Spec.Protocol = str(pick(b, "h2", "h2c", "http/1.1", "h3", ""))
		}
		if b.intn(4) == 0 {
			es.Spec.Validation = &source.UpstreamValidation{
				CASecret:    pick(b, "ca", "other/ca", "empty-ca", "bad-ca", "missing", ""),
				SubjectName: pick(b, "ext.example.com", "", "a"),
			}
			if b.bool() {
				es.Spec.Validation.SubjectNames = []string{pick(b, "ext.example.com", "b"), "x.example.com"}
			}
		}
		if b.intn(3) == 0 {
			es.Spec.LoadBalancerPolicy = &source.LoadBalancerPolicy{Strategy: pick(b, "", "Random", "WeightedLeastRequest", "Cookie", "RequestHash", "RoundRobin", "Weird")}
		}
		if b.intn(3) == 0 {
			es.Spec.TimeoutPolicy = &source.TimeoutPolicy{Response: pick(b, timeouts...), Idle: pick(b, timeouts...), IdleConnection: pick(b, timeouts...)}
		}
		if b.intn(4) == 0 {
			es.Spec.CircuitBreakerPolicy = &source.CircuitBreakers{MaxRequests: uint32(b.intn(3)), MaxRetries: uint32(b.intn(2))}
		}
		objs.ExtensionServices = append(objs.ExtensionServices, es)
	}
	return objs, settings
}
