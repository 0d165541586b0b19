package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary-dev/tributary/internal/metrics"
)

// assertNoSeries checks that family name has no series at all, so a
// scrape does not show it.
func assertNoSeries(t *testing.T, reg prometheus.Gatherer, name string) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			t.Errorf("%s has %d series, want none", name, len(f.GetMetric()))
		}
	}
}

// TestBuildInfo: tributary_build_info has no series until it is set, then
// exactly one, of value 1, for the last build set.
func TestBuildInfo(t *testing.T) {
	const header = `# HELP tributary_build_info Always 1; the labels say which build of Tributary runs: its version, its VCS revision and the Go version it was built with.
# TYPE tributary_build_info gauge
`
	m := metrics.New()
	assertNoSeries(t, m.Registry(), "tributary_build_info")

	for _, tc := range []struct {
		version, revision, goVersion string
		want                         string
	}{
		{"v1.2.3", "0123456789abcdef0123456789abcdef01234567", "go1.26.8",
			`tributary_build_info{go_version="go1.26.8",revision="0123456789abcdef0123456789abcdef01234567",version="v1.2.3"} 1` + "\n"},
		// A second call replaces the first series rather than adding one.
		{"(devel)", "", "go1.26.8", `tributary_build_info{go_version="go1.26.8",revision="",version="(devel)"} 1` + "\n"},
	} {
		m.SetBuildInfo(tc.version, tc.revision, tc.goVersion)
		if got := exposition(t, m.Registry(), "tributary_build_info"); got != header+tc.want {
			t.Errorf("after SetBuildInfo(%q, %q, %q):\n%s\nwant:\n%s", tc.version, tc.revision, tc.goVersion, got, header+tc.want)
		}
	}

	var none *metrics.Metrics
	none.SetBuildInfo("v1.2.3", "", "go1.26.8") // records nothing, as every method of a nil Metrics
}

// TestCertificateExpiry: each listener's series holds the NotAfter last
// set for it, in whole seconds since the epoch, so a reload moves it; a
// listener never set (plaintext) has none.
func TestCertificateExpiry(t *testing.T) {
	const (
		name   = "tributary_tls_certificate_expiry_timestamp_seconds"
		header = `# HELP tributary_tls_certificate_expiry_timestamp_seconds When the certificate a listener serves now expires (its NotAfter), in seconds since the Unix epoch, by listener (grpc, xds); updated whenever the certificate is reloaded.
# TYPE tributary_tls_certificate_expiry_timestamp_seconds gauge
`
	)
	m := metrics.New()
	assertNoSeries(t, m.Registry(), name)

	first := time.Date(2027, time.March, 2, 12, 0, 0, 0, time.UTC)    // 1803988800
	renewed := time.Date(2027, time.May, 30, 12, 0, 0, 999, time.UTC) // 1811678400, the nanoseconds dropped
	for _, step := range []struct {
		what     string
		listener string
		notAfter time.Time
		want     string
	}{
		{"grpc's first load", "grpc", first,
			`tributary_tls_certificate_expiry_timestamp_seconds{listener="grpc"} 1.8039888e+09` + "\n"},
		{"xds's first load", "xds", first,
			`tributary_tls_certificate_expiry_timestamp_seconds{listener="grpc"} 1.8039888e+09` + "\n" +
				`tributary_tls_certificate_expiry_timestamp_seconds{listener="xds"} 1.8039888e+09` + "\n"},
		{"a reload of grpc's", "grpc", renewed,
			`tributary_tls_certificate_expiry_timestamp_seconds{listener="grpc"} 1.8116784e+09` + "\n" +
				`tributary_tls_certificate_expiry_timestamp_seconds{listener="xds"} 1.8039888e+09` + "\n"},
	} {
		m.SetCertificateExpiry(step.listener, step.notAfter)
		if got := exposition(t, m.Registry(), name); got != header+step.want {
			t.Errorf("after %s:\n%s\nwant:\n%s", step.what, got, header+step.want)
		}
	}

	var none *metrics.Metrics
	none.SetCertificateExpiry("grpc", first)
}
