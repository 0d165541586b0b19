package server

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/testproc"
)

var sessionIDPattern = regexp.MustCompile(`^[0-9a-f]{12}$`)

// TestSyncLogLinesCarryTheSession runs two Sync sessions, one after the
// other, against a server logging at debug level, and checks that every
// line either logged (the handler's own and the call log's) names its
// session, and that the two sessions have different ids.
func TestSyncLogLinesCarryTheSession(t *testing.T) {
	logs := &testproc.Buffer{}
	conn := dialBufconn(t, NewGRPCServer(Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}))
	client := tributaryv1.NewTranslationServiceClient(conn)

	raw, err := os.ReadFile("../../examples/grpc/translate-request.json")
	if err != nil {
		t.Fatal(err)
	}
	example := &tributaryv1.TranslateRequest{}
	if err := protojson.Unmarshal(raw, example); err != nil {
		t.Fatal(err)
	}

	var sessions [][]map[string]any
	for range 2 {
		before := len(logs.String())
		stream, err := client.Sync(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range []*tributaryv1.SyncRequest{
			{Message: &tributaryv1.SyncRequest_Start{Start: &tributaryv1.SyncStart{}}},
			{Message: &tributaryv1.SyncRequest_Batch{Batch: &tributaryv1.SyncBatch{Id: 1, Upserts: example.GetObjects()}}},
			// A delete of no kind: rejected, and logged.
			{Message: &tributaryv1.SyncRequest_Batch{Batch: &tributaryv1.SyncBatch{Id: 2, Deletes: []*tributaryv1.ObjectReference{{Namespace: "auth", Name: "x"}}}}},
		} {
			if err := stream.Send(req); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.CloseSend(); err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := stream.Recv(); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		// The call log's line is written before the client sees the end.
		sessions = append(sessions, parseLines(t, logs.String()[before:]))
	}

	var ids []string
	for i, lines := range sessions {
		var msgs []string
		id, _ := lines[0][sessionKey].(string)
		if !sessionIDPattern.MatchString(id) {
			t.Fatalf("session %d: first line has session %q, want 12 hex digits: %v", i, id, lines[0])
		}
		for _, line := range lines {
			if line[sessionKey] != id {
				t.Errorf("session %d: line without session %s: %v", i, id, line)
			}
			msgs = append(msgs, line["msg"].(string))
		}
		want := []string{"sync session started", "sync batch rejected", "sync session ended", "finished call"}
		if !slices.Equal(msgs, want) {
			t.Errorf("session %d logged %q, want %q", i, msgs, want)
		}
		ids = append(ids, id)
	}
	if ids[0] == ids[1] {
		t.Errorf("two sessions share the id %s", ids[0])
	}
}

func parseLines(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
		line := map[string]any{}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		t.Fatal("nothing logged")
	}
	return lines
}
