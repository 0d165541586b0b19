package server

import (
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/testproc"
)

// TestCodeTheClientGot: a handler that returns OK after the client's
// deadline passed, or after the client cancelled, is logged and counted
// with the code the client got: DeadlineExceeded, Canceled.
func TestCodeTheClientGot(t *testing.T) {
	var log testproc.Buffer
	held := heldTranslate{NewTranslationService(), make(chan struct{}, 1), make(chan struct{})}
	m := metrics.New()
	opts := Options{Logger: slog.New(slog.NewTextHandler(&log, nil)), Metrics: m}
	translation := tributaryv1.NewTranslationServiceClient(dialBufconn(t, newGRPCServer(opts, held)))
	hold := &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{XdsClusterName: "hold"}}

	// The handler waits for its context to end, then translates and
	// returns OK anyway: the client is gone by then.
	// A deadline long enough for the call to reach the handler.
	deadlined, cancelDeadline := context.WithTimeout(t.Context(), time.Second)
	defer cancelDeadline()
	wait := &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{XdsClusterName: "wait"}}
	if _, err := translation.Translate(deadlined, wait); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("Translate past its deadline: %v, want DeadlineExceeded", err)
	}
	cancelled, cancel := context.WithCancel(t.Context())
	go func() { <-held.entered; cancel() }()
	if _, err := translation.Translate(cancelled, hold); status.Code(err) != codes.Canceled {
		t.Fatalf("Translate cancelled: %v, want Canceled", err)
	}

	for _, code := range []string{"DeadlineExceeded", "Canceled"} {
		line := regexp.MustCompile(`msg="finished call" .*grpc.method=Translate .*grpc.code=` + code + ` `)
		for deadline := time.Now().Add(5 * time.Second); !line.MatchString(log.String()) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond) // the handler ends after the client has its answer
		}
		if !line.MatchString(log.String()) {
			t.Errorf("no call logged with grpc.code=%s; log:\n%s", code, log.String())
		}
		if n := handledTotal(t, m, "Translate", code); n != 1 {
			t.Errorf("grpc_server_handled_total{grpc_method=Translate,grpc_code=%s} = %v, want 1", code, n)
		}
	}
	if n := handledTotal(t, m, "Translate", "OK"); n != 0 {
		t.Errorf("grpc_server_handled_total{grpc_method=Translate,grpc_code=OK} = %v, want 0", n)
	}
	if strings.Contains(log.String(), "grpc.code=OK") {
		t.Errorf("a call the client gave up on was logged OK; log:\n%s", log.String())
	}
}

// handledTotal reads grpc_server_handled_total for one method and code.
func handledTotal(t *testing.T, m *metrics.Metrics, method, code string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "grpc_server_handled_total" {
			continue
		}
		for _, metric := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range metric.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["grpc_method"] == method && labels["grpc_code"] == code {
				return metric.GetCounter().GetValue()
			}
		}
	}
	return 0
}
