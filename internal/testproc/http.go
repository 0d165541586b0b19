package testproc

import (
	"context"
	"io"
	"net/http"
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
