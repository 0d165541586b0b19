package server

import (
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/testproc"
)

// TestRefusedCallLogged: a call gRPC refuses before the service sees it (a
// request over the size limit) is logged once, with its method and code; a
// call that reaches the service is left to the call log.
func TestRefusedCallLogged(t *testing.T) {
	var log testproc.Buffer
	opts := Options{Logger: slog.New(slog.NewTextHandler(&log, nil)), MaxRecvMsgSize: 1024}
	translation := tributaryv1.NewTranslationServiceClient(dialBufconn(t, NewGRPCServer(opts)))

	big := &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{{Kind: &tributaryv1.KubernetesObject_Secret{
		Secret: &tributaryv1.Secret{Metadata: meta("ns", "big"), CaCrt: make([]byte, 2048)}}}}}
	if _, err := translation.Translate(t.Context(), big); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("oversized Translate: got %v, want ResourceExhausted", err)
	}
	if _, err := translation.Translate(t.Context(), &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{{}}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("malformed Translate: got %v, want InvalidArgument", err)
	}

	refused := regexp.MustCompile(`level=WARN msg="refused a call before it reached the service" grpc.method=/tributary.v1.TranslationService/Translate grpc.code=ResourceExhausted grpc.error="grpc: received message larger than max \(\d+ vs\. 1024\)"`)
	deadline := time.Now().Add(5 * time.Second)
	for !refused.MatchString(log.String()) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // the stats handler runs after the client has its answer
	}
	got := log.String()
	if n := len(refused.FindAllString(got, -1)); n != 1 {
		t.Errorf("refused-call lines: %d, want 1; log:\n%s", n, got)
	}
	if n := strings.Count(got, "refused a call"); n != 1 {
		t.Errorf("the InvalidArgument call, which reached the service, was logged as refused too; log:\n%s", got)
	}
	if !strings.Contains(got, `msg="finished call"`) || !strings.Contains(got, "grpc.code=InvalidArgument") {
		t.Errorf("the call log lost the call that reached the service; log:\n%s", got)
	}
}

// TestGRPCLog: gRPC's start and stop chatter goes to debug, a connection it
// refuses before any call to info with gRPC's reason, warnings and errors
// keep their level but for a status it cannot write to a client that left
// (see TestClientGoingAwayLoggedAtDebug for the real thing).
func TestGRPCLog(t *testing.T) {
	var log testproc.Buffer
	var g GRPCLog
	g.Use(slog.New(slog.NewTextHandler(&log, nil))) // info and above
	g.Infof("[core] [Server #%d] Server created", 1)
	g.Infoln("[core] [Server #1] grpc: Server.Serve failed to create ServerTransport: connection error: desc = \"transport: http2Server.HandleStreams received bogus greeting from client: \\\"junk\\\"\"")
	g.Warningf("[core] something odd: %d", 7)
	// A status that cannot reach a client that left is routine (debug); a
	// status that fails otherwise is still a warning.
	g.Warningln("[core] [Server #1] grpc: Server.processRPC failed to write status: connection error: desc = \"transport is closing\"")
	g.Warningln("[core] [Server #1] grpc: Server.processRPC failed to write status: header list size to send violates the maximum size (1024 bytes) set by client")
	g.Error("[core] something wrong")
	if g.V(0) || g.V(2) {
		t.Error("V reports verbose logging on")
	}

	want := []string{
		`level=INFO msg="refused a connection before any call" grpc.log="[core] [Server #1] grpc: Server.Serve failed to create ServerTransport: connection error: desc = \"transport: http2Server.HandleStreams received bogus greeting from client: \\\"junk\\\"\""`,
		`level=WARN msg=grpc grpc.log="[core] something odd: 7"`,
		`level=WARN msg=grpc grpc.log="[core] [Server #1] grpc: Server.processRPC failed to write status: header list size to send violates the maximum size (1024 bytes) set by client"`,
		`level=ERROR msg=grpc grpc.log="[core] something wrong"`,
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), log.String())
	}
	for i, line := range lines {
		if _, rest, _ := strings.Cut(line, " "); rest != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i+1, rest, want[i])
		}
	}
}
