package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/testproc"
)

// loggedServer serves NewGRPCServer on loopback TCP with its log and
// gRPC's own at debug level in logs, and returns a client connection and
// the events of its calls: each call's End comes after everything the
// server logs of the call, gRPC's own lines included.
func loggedServer(t *testing.T) (conn *grpc.ClientConn, logs *testproc.Buffer, events callEvents) {
	t.Helper()
	logs = &testproc.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	captureGRPCLog(t, logger)
	events = newCallEvents()
	return dialTCP(t, NewGRPCServer(Options{Logger: logger, statsHandlers: []stats.Handler{events}})), logs, events
}

var serverCreated = regexp.MustCompile(`^\[core\] \[(Server #\d+)\] Server created$`)

// callLines summarises what the server of loggedServer logged, one line
// per record: the level, the message and what the record is about. gRPC's
// lines about anything but that server (its client side, servers other
// tests left) are left out, and so is its debug chatter, which says
// nothing about calls.
func callLines(t *testing.T, logs *testproc.Buffer) []string {
	t.Helper()
	lines := parseLines(t, logs.String())
	server := ""
	for _, line := range lines {
		if m := serverCreated.FindStringSubmatch(fmt.Sprint(line["grpc.log"])); m != nil {
			server = m[1]
			break
		}
	}
	if server == "" {
		t.Fatalf("gRPC did not log the server's creation:\n%s", logs.String())
	}
	var got []string
	for _, line := range lines {
		level, msg := line["level"], line["msg"]
		switch {
		case msg == "finished call":
			got = append(got, fmt.Sprintf("%s finished call %s/%s %s", level, line["grpc.service"], line["grpc.method"], line["grpc.code"]))
		case msg == "grpc":
			text := fmt.Sprint(line["grpc.log"])
			if !strings.Contains(text, "["+server+"]") || (level == "DEBUG" && !strings.Contains(text, "failed to write status")) {
				continue
			}
			got = append(got, fmt.Sprintf("%s grpc %s", level, strings.Replace(text, server, "Server #N", 1)))
		case level != "DEBUG":
			got = append(got, fmt.Sprintf("%s %s", level, msg))
		}
	}
	return got
}

// TestClientGoingAwayLoggedAtDebug: a client that closes its connection
// while calls are open, as grpcurl does with its reflection stream and a
// Sync client does when it exits, ends those calls with CANCELLED, and gRPC
// then cannot write their statuses. That is routine: the status gRPC could
// not write goes to debug, not warn, and the only line above debug is the
// Sync call's end at info (reflection's is at debug, see
// TestStandardServicesLogAtDebug). This pins gRPC's wording, which the
// level depends on (see clientGone).
func TestClientGoingAwayLoggedAtDebug(t *testing.T) {
	conn, logs, events := loggedServer(t)

	sync, err := tributaryv1.NewTranslationServiceClient(conn).Sync(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []*tributaryv1.SyncRequest{
		{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}},
		{Message: &tributaryv1.SyncRequest_Batch{Batch: &tributaryv1.SyncBatch{Id: 1}}},
	} {
		if err := sync.Send(req); err != nil {
			t.Fatal(err)
		}
	}
	// The answer to the batch: the session is open, its handler waiting
	// for the next batch.
	if _, err := sync.Recv(); err != nil {
		t.Fatal(err)
	}
	reflection, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := reflection.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := reflection.Recv(); err != nil {
		t.Fatal(err)
	}

	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	<-events.ended
	<-events.ended

	got := callLines(t, logs)
	slices.Sort(got) // the two calls end at the same moment, in either order
	const gone = `DEBUG grpc [core] [Server #N] grpc: Server.processRPC failed to write status: connection error: desc = "transport is closing"`
	want := []string{
		"DEBUG finished call grpc.reflection.v1.ServerReflection/ServerReflectionInfo Canceled",
		gone,
		gone,
		"INFO finished call tributary.v1.TranslationService/Sync Canceled",
	}
	if !slices.Equal(got, want) {
		t.Errorf("logged\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestStandardServicesLogAtDebug: the routine calls of health and
// reflection (v1 and v1alpha, as grpcurl tries both) end at debug, while
// TranslationService's keep their level, and a standard service's call that
// fails for real keeps its own.
func TestStandardServicesLogAtDebug(t *testing.T) {
	conn, logs, events := loggedServer(t)
	health := healthpb.NewHealthClient(conn)

	if _, err := health.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	<-events.ended
	if _, err := health.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "tributary.v1.Other"}); status.Code(err) != codes.NotFound {
		t.Fatalf("Check of an unknown service: %v, want NotFound", err)
	}
	<-events.ended

	v1, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	drainReflection(t, v1, &reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
	<-events.ended
	// v1alpha's messages are v1's on the wire; its Go types are deprecated.
	v1alpha := rawCall(t.Context(), t, conn, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
	drainReflection(t, v1alpha, &reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
	<-events.ended

	// Two requests on Watch, which takes one: gRPC fails the call with
	// INTERNAL, an error whichever service it is.
	watch := rawCall(t.Context(), t, conn, healthpb.Health_Watch_FullMethodName)
	_ = watch.SendMsg(&healthpb.HealthCheckRequest{})
	_ = watch.SendMsg(&healthpb.HealthCheckRequest{})
	if err := watch.RecvMsg(new(healthpb.HealthCheckResponse)); status.Code(err) != codes.Internal {
		t.Fatalf("two requests on Watch: %v, want Internal", err)
	}
	<-events.ended

	if _, err := tributaryv1.NewTranslationServiceClient(conn).Translate(t.Context(), &tributaryv1.TranslateRequest{}); err != nil {
		t.Fatal(err)
	}
	<-events.ended

	want := []string{
		"DEBUG finished call grpc.health.v1.Health/Check OK",
		"DEBUG finished call grpc.health.v1.Health/Check NotFound",
		"DEBUG finished call grpc.reflection.v1.ServerReflection/ServerReflectionInfo OK",
		"DEBUG finished call grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo OK",
		"ERROR finished call grpc.health.v1.Health/Watch Internal",
		"INFO finished call tributary.v1.TranslationService/Translate OK",
	}
	if got := callLines(t, logs); !slices.Equal(got, want) {
		t.Errorf("logged\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// drainReflection sends req on a reflection stream, half-closes it and
// reads to its end, as a client that is done does.
func drainReflection(t *testing.T, stream grpc.ClientStream, req *reflectionpb.ServerReflectionRequest) {
	t.Helper()
	if err := stream.SendMsg(req); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	for {
		if err := stream.RecvMsg(new(reflectionpb.ServerReflectionResponse)); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			t.Fatal(err)
		}
	}
}
