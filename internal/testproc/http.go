package testproc

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Get fetches url, as a kubelet probe or a Prometheus scrape would, and
// returns the status code and the body. Any failure to get an answer ends
// the test; so does no answer within Guard.
func Get(t testing.TB, url string) (status int, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Guard)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// Metric sums the samples of the metric name on a Prometheus text page
// whose series carry every one of labels (such as `grpc_code="OK"`), and
// reports whether there was any.
func Metric(page, name string, labels ...string) (float64, bool) {
	sum, found := 0.0, false
next:
	for line := range strings.Lines(page) {
		series, value, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if series != name && !strings.HasPrefix(series, name+"{") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(series, l) {
				continue next
			}
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}
