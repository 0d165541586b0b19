package model

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/source"
)

// The tests in the extension*_test.go files build whole ExtensionServices
// against a small world: namespace "ext" holds the Service "grpc" (port 9000, named "grpc")
// with one ready endpoint, a CA Secret "ca" and a client certificate Secret
// "client"; namespace "certs" holds more Secrets for delegation cases.

const xtNS = "ext"

// xtCertPEM returns a self-signed certificate in PEM. An ed25519 key from a
// fixed seed and fixed dates make the bytes identical on every run, which is
// what lets tests spell out SDS names that hash the certificate.
func xtCertPEM(t testing.TB, seed byte, commonName string, dnsNames ...string) []byte {
	t.Helper()
	seedBytes := make([]byte, ed25519.SeedSize)
	for i := range seedBytes {
		seedBytes[i] = seed
	}
	key := ed25519.NewKeyFromSeed(seedBytes)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(int64(seed) + 1),
		Subject:               pkix.Name{CommonName: commonName},
		DNSNames:              dnsNames,
		NotBefore:             time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:              time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func xtStr(s string) *string { return &s }

func xtDuration(d time.Duration) *time.Duration { return &d }

func xtErr(typ, reason, message string) SubCondition {
	return SubCondition{Type: typ, Status: ConditionTrue, Reason: reason, Message: message}
}

// xtWorld is the base set of objects; tests append to it.
func xtWorld(t testing.TB) source.Objects {
	ca := xtCertPEM(t, 1, "test-ca")
	return source.Objects{
		Services: []source.Service{{
			Meta:  source.Meta{Namespace: xtNS, Name: "grpc"},
			Type:  "ClusterIP",
			Ports: []source.ServicePort{{Name: "grpc", Port: 9000, TargetPort: "9000", Protocol: "TCP"}},
		}},
		EndpointSlices: []source.EndpointSlice{{
			Meta:        source.Meta{Namespace: xtNS, Name: "grpc-abc"},
			Service:     "grpc",
			AddressType: "IPv4",
			Endpoints:   source.MakeEndpoints(source.Endpoint{Address: "10.0.0.1"}),
			Ports:       []source.EndpointPort{{Name: xtStr("grpc"), Port: new(int32(9000)), Protocol: xtStr("TCP")}},
		}},
		Secrets: []source.Secret{
			{Meta: source.Meta{Namespace: xtNS, Name: "ca"}, Type: "Opaque", CACrt: ca},
			{Meta: source.Meta{Namespace: xtNS, Name: "client"}, Type: "kubernetes.io/tls", TLSCrt: xtCertPEM(t, 2, "envoy-client")},
			{Meta: source.Meta{Namespace: "certs", Name: "ca"}, Type: "kubernetes.io/tls", CACrt: ca},
			{Meta: source.Meta{Namespace: "certs", Name: "other-ca"}, Type: "kubernetes.io/tls", CACrt: ca},
		},
	}
}

// xtClientSDSName is the SDS name of the "client" Secret's certificate; the
// digest was checked independently with `sha1sum` over the PEM bytes.
const xtClientSDSName = "ext/client/" + xtClientDigest

const xtClientDigest = "da07ae6b63"

func xtBuild(t *testing.T, objs source.Objects, settings source.Settings, spec source.ExtensionServiceSpec) (*ExtensionCluster, Status) {
	t.Helper()
	es := source.ExtensionService{Meta: source.Meta{Namespace: xtNS, Name: "authz", Generation: 7}, Spec: spec}
	objs.ExtensionServices = append(objs.ExtensionServices, es)
	b := NewBuilder(NewIndex(&objs), settings)
	return buildOf(b, &objs.ExtensionServices[len(objs.ExtensionServices)-1], nil)
}

var xtTarget = []source.ExtensionServiceTarget{{Name: "grpc", Port: 9000}}

// xtLocality is the one Locality the base world yields for xtTarget.
var xtLocality = []Locality{{SubZone: "ext/grpc/9000", Weight: 1, Endpoints: []Endpoint{{Address: source.MakeAddress("10.0.0.1"), Port: 9000}}}}

func TestClientCertificateDigest(t *testing.T) {
	// Pins the fixture the SDS name cases rely on: if certificate
	// generation ever stops being deterministic, this fails first.
	world := xtWorld(t)
	got := sdsSecretName(source.NamespacedName{Namespace: xtNS, Name: "client"}, world.Secrets[1].TLSCrt)
	if got != xtClientSDSName {
		t.Fatalf("SDS name = %q, want %q", got, xtClientSDSName)
	}
}

// TestBuildRefusesNamesEnvoyCannotTake: the cluster name comes from the
// object's metadata, which the API does not restrict.
func TestBuildRefusesNamesEnvoyCannotTake(t *testing.T) {
	for _, tc := range []struct{ namespace, name, message string }{
		{xtNS, "a\nb", `cluster name "extension/ext/a\nb" derived from metadata.namespace and metadata.name contains a control character`},
		{"e\x7f", "a", `cluster name "extension/e\x7f/a" derived from metadata.namespace and metadata.name contains a control character`},
		{xtNS, "\xc3", `cluster name "extension/ext/\xc3" derived from metadata.namespace and metadata.name is not valid UTF-8`},
		// Past ASCII the check goes rune by rune: C1 controls are controls.
		{xtNS, "é\u0085", `cluster name "extension/ext/é\u0085" derived from metadata.namespace and metadata.name contains a control character`},
	} {
		objs := xtWorld(t)
		objs.ExtensionServices = []source.ExtensionService{{
			Meta: source.Meta{Namespace: tc.namespace, Name: tc.name},
			Spec: source.ExtensionServiceSpec{Services: xtTarget},
		}}
		ec, st := buildOf(NewBuilder(NewIndex(&objs), source.Settings{}), &objs.ExtensionServices[0], nil)
		if ec != nil {
			t.Errorf("%q/%q: got an ExtensionCluster", tc.namespace, tc.name)
		}
		want := []SubCondition{xtErr(SubConditionSpec, ReasonInvalidName, tc.message)}
		// The target lies in "ext"; other namespaces add a lookup error.
		if diff := cmp.Diff(want, st.Condition.Errors[:1]); diff != "" {
			t.Errorf("%q/%q (-want +got):\n%s", tc.namespace, tc.name, diff)
		}
	}
}

func TestShortenName(t *testing.T) {
	// Expected values come from Contour's Hashname(60, ...) (v1.33.8) run
	// on the same input, except the UTF-8 case, where Contour would split
	// the "é" and this keeps whole characters.
	for _, tc := range []struct {
		limit int
		parts []string
		want  string
	}{
		{60, []string{"ns", "client", "0123456789"}, "ns/client/0123456789"},
		{60, []string{"ns", strings.Repeat("n", 45), "0123456789"}, "ns/" + strings.Repeat("n", 45) + "/0123456789"},
		{60, []string{"ns", strings.Repeat("n", 46), "0123456789"}, "ns/nnnnnnnnnnnnn-90d3af/0123456789"},
		{60, []string{"ns", strings.Repeat("n", 47), "0123456789"}, "ns/nnnnnnnnnnnnn-3ab736/0123456789"},
		{60, []string{"projectcontour", "a-client-certificate-with-a-rather-long-name", "0123456789"}, "projectcontour/a-client-cert-85731a/0123456789"},
		{60, []string{"a-namespace-that-is-quite-long-indeed-yes", "a-client-certificate-with-a-rather-long-name", "0123456789"}, "a-namespace-t-7a8cc8/a-client-cert-7a8cc8/0123456789"},
		{5, []string{"abcdefgh", "ijklmnop", "qrstuvwx"}, "d4e85"},
		{20, []string{"abcdefgh", "ijklmnop", "qrstuvwx"}, "d4e859077ac52479c946"},
		{60, []string{"ns", strings.Repeat("é", 30), "0123456789"}, "ns/éééééé-6fb774/0123456789"},
	} {
		parts := append([]string(nil), tc.parts...)
		if got := shortenName(tc.limit, tc.parts...); got != tc.want {
			t.Errorf("shortenName(%d, %q) = %q, want %q", tc.limit, tc.parts, got, tc.want)
		}
		if diff := cmp.Diff(parts, tc.parts); diff != "" {
			t.Errorf("shortenName changed its argument: %s", diff)
		}
	}
}

func TestParseTimeout(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    timeoutSetting
		str     string
		wantErr string
	}{
		{in: "", want: timeoutSetting{}},
		{in: "0s", want: timeoutSetting{}},
		{in: "0", want: timeoutSetting{}},
		{in: "infinity", want: timeoutSetting{set: true}, str: "infinity"},
		{in: "infinite", want: timeoutSetting{set: true}, str: "infinity"},
		{in: "500ms", want: timeoutSetting{set: true, duration: 500 * time.Millisecond}, str: "500ms"},
		{in: "1.5h", want: timeoutSetting{set: true, duration: 90 * time.Minute}, str: "1h30m0s"},
		{in: "Infinity", wantErr: `unable to parse timeout string "Infinity": time: invalid duration "Infinity"`},
		{in: "-5ms", wantErr: `unable to parse timeout string "-5ms": negative durations are not allowed`},
	} {
		got, err := parseTimeout(tc.in)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("parseTimeout(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseTimeout(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want || got.String() != tc.str {
			t.Errorf("parseTimeout(%q) = %+v (%q), want %+v (%q)", tc.in, got, got.String(), tc.want, tc.str)
		}
	}
}

// BenchmarkBuildTLS measures one ExtensionService with validation and a
// client certificate, whose Secrets are parsed on every Build.
func BenchmarkBuildTLS(b *testing.B) {
	objs := xtWorld(b)
	objs.ExtensionServices = []source.ExtensionService{{
		Meta: source.Meta{Namespace: xtNS, Name: "authz"},
		Spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: &source.UpstreamValidation{CASecret: "ca", SubjectName: "authz"}},
	}}
	builder := NewBuilder(NewIndex(&objs), source.Settings{ClientCertificate: &source.NamespacedName{Namespace: xtNS, Name: "client"}})
	b.ReportAllocs()
	for b.Loop() {
		if ec, _ := buildOf(builder, &objs.ExtensionServices[0], nil); ec == nil {
			b.Fatal("invalid")
		}
	}
}
