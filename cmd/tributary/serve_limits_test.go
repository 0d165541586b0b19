package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/tributary-dev/tributary/internal/server"
)

// TestLimitDefaultsFollowMemory: --max-inflight-bytes defaults to a
// quarter of GOMEMLIMIT (1GiB without it) and --max-message-size to what
// the in-flight budget admits, at most 64MiB; a message size the budget
// could never admit is refused. --max-response-size is 64MiB whatever the
// budget: the decode amplification that bounds requests has nothing to do
// with what the server sends.
func TestLimitDefaultsFollowMemory(t *testing.T) {
	for _, c := range []struct {
		name                            string
		args                            []string
		memory                          int64
		wantInflight, wantMsg, wantResp byteSize
		wantErr                         string
	}{
		{"no GOMEMLIMIT", nil, math.MaxInt64, 1 << 30, 32 << 20, 64 << 20, ""},
		{"the deployment's 1GiB", nil, 1 << 30, 256 << 20, 8 << 20, 64 << 20, ""},
		// The budget is capped at 2GiB-1, what a size flag holds.
		{"a large machine", nil, 64 << 30, math.MaxInt32, math.MaxInt32 / server.DecodeAmplification, 64 << 20, ""},
		{"explicit", []string{"--max-inflight-bytes", "2Mi", "--max-message-size", "64Ki", "--max-response-size", "128Mi"}, 1 << 30, 2 << 20, 64 << 10, 128 << 20, ""},
		{"message over the budget", []string{"--max-inflight-bytes", "2Mi", "--max-message-size", "1Mi"}, math.MaxInt64, 0, 0, 0,
			"--max-message-size 1Mi needs --max-inflight-bytes of at least 32Mi (32 times the message size: what a message costs once decoded), not 2Mi"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			limits := registerLimitFlags(fs)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			err := limits.resolve(c.memory)
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("resolve = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if limits.inflightBytes != c.wantInflight || limits.messageSize != c.wantMsg || limits.responseSize != c.wantResp {
				t.Errorf("in flight %d, message %d, response %d; want %d, %d, %d", limits.inflightBytes, limits.messageSize, limits.responseSize, c.wantInflight, c.wantMsg, c.wantResp)
			}
		})
	}
}

// TestStopWithinLeavesStuckHandlers: a handler that ignores its context
// does not hold the shutdown: once the timeout passes, stopWithin closes
// the connections, waits handlerStopGrace for the handlers and returns,
// saying so in the log.
func TestStopWithinLeavesStuckHandlers(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release) // lets the handler end once the test is over
	srv := grpc.NewServer(grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error {
		close(entered)
		<-release
		return nil
	}))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	called := make(chan error, 1)
	go func() {
		called <- conn.Invoke(context.Background(), "/any.Service/Stuck", &emptypb.Empty{}, &emptypb.Empty{})
	}()
	<-entered

	var log bytes.Buffer
	stopWithin(srv, time.Millisecond, slog.New(slog.NewTextHandler(&log, nil)), "late")
	for _, want := range []string{`level=WARN msg=late`, `level=ERROR msg="handlers still running after their calls were cancelled; exiting without them" waited=1s`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, log.String())
		}
	}
	if err := <-called; status.Code(err) != codes.Unavailable {
		t.Errorf("the call cut by the stop: %v, want Unavailable", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}
