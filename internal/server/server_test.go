package server

import (
	"context"
	"fmt"

	"log/slog"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/testproc"
)

// panicOn wraps the real service and panics on requests whose xDS cluster
// name is "panic", standing in for a bug anywhere below the handler.
type panicOn struct {
	tributaryv1.TranslationServiceServer
}

func (p panicOn) Translate(ctx context.Context, req *tributaryv1.TranslateRequest) (*tributaryv1.TranslateResponse, error) {
	if req.GetSettings().GetXdsClusterName() == "panic" {
		panic("injected failure")
	}
	return p.TranslationServiceServer.Translate(ctx, req)
}

// TestPanicBecomesInternal: a panicking handler answers Internal without
// leaking the panic value, the panic and its stack are logged, and the
// server goes on serving.
func TestPanicBecomesInternal(t *testing.T) {
	var logs testproc.Buffer
	opts := Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	translation := tributaryv1.NewTranslationServiceClient(dialBufconn(t, newGRPCServer(opts, panicOn{NewTranslationService()})))

	_, err := translation.Translate(t.Context(), &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{XdsClusterName: "panic"}})
	if st := status.Convert(err); st.Code() != codes.Internal || st.Message() != "internal error" {
		t.Fatalf("got %v, want Internal \"internal error\"", err)
	}
	for _, want := range []string{`msg="panic in gRPC handler" panic="injected failure"`, "panicOn.Translate", "grpc.code=Internal"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}

	resp, err := translation.Translate(t.Context(), &tributaryv1.TranslateRequest{})
	if err != nil {
		t.Fatalf("call after the panic: %v", err)
	}
	if !proto.Equal(resp, &tributaryv1.TranslateResponse{}) {
		t.Errorf("call after the panic: got %v, want an empty response", resp)
	}
}

// TestHealth: the standard health service reports SERVING for the server
// and for TranslationService, and knows no other service.
func TestHealth(t *testing.T) {
	for name, dial := range map[string]func(*testing.T, *grpc.Server) *grpc.ClientConn{"bufconn": dialBufconn, "tcp": dialTCP} {
		t.Run(name, func(t *testing.T) {
			health := healthpb.NewHealthClient(dial(t, NewGRPCServer(quietOptions())))
			for _, service := range []string{"", "tributary.v1.TranslationService"} {
				resp, err := health.Check(t.Context(), &healthpb.HealthCheckRequest{Service: service})
				if err != nil {
					t.Fatalf("Check(%q): %v", service, err)
				}
				if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
					t.Errorf("Check(%q) = %v, want SERVING", service, resp.GetStatus())
				}
			}
			_, err := health.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "tributary.v1.Other"})
			if status.Code(err) != codes.NotFound {
				t.Errorf("Check of an unknown service: got %v, want NotFound", err)
			}
		})
	}
}

// TestReflection: reflection lists the services and describes the Envoy
// types inside the responses' Any fields, which is what lets grpcurl print
// the resources.
func TestReflection(t *testing.T) {
	stream, err := reflectionpb.NewServerReflectionClient(dialBufconn(t, NewGRPCServer(quietOptions()))).ServerReflectionInfo(t.Context())
	if err != nil {
		t.Fatalf("ServerReflectionInfo: %v", err)
	}
	defer func() { _ = stream.CloseSend() }() // the test is over; nothing to report
	ask := func(req *reflectionpb.ServerReflectionRequest) *reflectionpb.ServerReflectionResponse {
		t.Helper()
		if err := stream.Send(req); err != nil {
			t.Fatalf("Send: %v", err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		return resp
	}

	var services []string
	for _, s := range ask(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}).GetListServicesResponse().GetService() {
		services = append(services, s.GetName())
	}
	slices.Sort(services)
	want := []string{"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection", "tributary.v1.TranslationService"}
	if !slices.Equal(services, want) {
		t.Errorf("services = %q, want %q", services, want)
	}

	for _, symbol := range []string{"tributary.v1.TranslateRequest", "envoy.config.cluster.v3.Cluster", "envoy.config.endpoint.v3.ClusterLoadAssignment"} {
		resp := ask(&reflectionpb.ServerReflectionRequest{
			MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: symbol},
		})
		if e := resp.GetErrorResponse(); e != nil {
			t.Errorf("FileContainingSymbol(%q): %v", symbol, e.GetErrorMessage())
		} else if len(resp.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
			t.Errorf("FileContainingSymbol(%q): no file descriptors", symbol)
		}
	}
}

// TestMessageSizeLimits: requests and responses above the limits fail with
// ResourceExhausted, with the 64 MiB default and with explicit options.
func TestMessageSizeLimits(t *testing.T) {
	// A request one byte over the limit once encoded: a Secret whose
	// ca_crt fills the rest.
	oversized := func(limit int) *tributaryv1.TranslateRequest {
		secret := &tributaryv1.Secret{Metadata: meta("ns", "big")}
		req := &tributaryv1.TranslateRequest{Objects: []*tributaryv1.KubernetesObject{{Kind: &tributaryv1.KubernetesObject_Secret{Secret: secret}}}}
		secret.CaCrt = make([]byte, limit)
		for proto.Size(req) > limit+1 {
			secret.CaCrt = secret.CaCrt[:len(secret.CaCrt)-(proto.Size(req)-limit-1)]
		}
		if proto.Size(req) != limit+1 {
			t.Fatalf("oversized request is %d bytes, want %d", proto.Size(req), limit+1)
		}
		return req
	}

	t.Run("default request limit", func(t *testing.T) {
		translation := tributaryv1.NewTranslationServiceClient(dialBufconn(t, NewGRPCServer(quietOptions())))
		_, err := translation.Translate(t.Context(), oversized(DefaultMaxMsgSize))
		if status.Code(err) != codes.ResourceExhausted {
			t.Errorf("got %v, want ResourceExhausted", err)
		}
	})

	t.Run("explicit request limit", func(t *testing.T) {
		opts := quietOptions()
		opts.MaxRecvMsgSize = 1024
		translation := tributaryv1.NewTranslationServiceClient(dialBufconn(t, NewGRPCServer(opts)))
		_, err := translation.Translate(t.Context(), oversized(1024))
		if status.Code(err) != codes.ResourceExhausted {
			t.Errorf("got %v, want ResourceExhausted", err)
		}
		// At the limit exactly, the request passes.
		atLimit := oversized(1024)
		secret := atLimit.GetObjects()[0].GetSecret()
		secret.CaCrt = secret.CaCrt[:len(secret.CaCrt)-1]
		if _, err := translation.Translate(t.Context(), atLimit); err != nil {
			t.Errorf("request of exactly the limit: %v", err)
		}
	})

	t.Run("explicit response limit", func(t *testing.T) {
		// ExtensionServices without targets are invalid, so each one adds a
		// status to the response without needing any Envoy resource.
		req := &tributaryv1.TranslateRequest{}
		for i := range 20 {
			req.Objects = append(req.Objects, extensionServiceObject(meta("ns", fmt.Sprintf("ext-%d", i)), nil))
		}
		unlimited := tributaryv1.NewTranslationServiceClient(dialBufconn(t, NewGRPCServer(quietOptions())))
		resp, err := unlimited.Translate(t.Context(), req)
		if err != nil {
			t.Fatalf("Translate: %v", err)
		}
		opts := quietOptions()
		opts.MaxSendMsgSize = proto.Size(resp) - 1
		limited := tributaryv1.NewTranslationServiceClient(dialBufconn(t, NewGRPCServer(opts)))
		if _, err := limited.Translate(t.Context(), req); status.Code(err) != codes.ResourceExhausted {
			t.Errorf("got %v, want ResourceExhausted", err)
		}
	})
}

// TestCallLog: each call gives one log line when it ends, with its code
// (a malformed request is a warning); health checks give none at info (see
// TestStandardServicesLogAtDebug).
func TestCallLog(t *testing.T) {
	var logs testproc.Buffer
	conn := dialBufconn(t, NewGRPCServer(Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	if _, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("Check: %v", err)
	}
	_, err := tributaryv1.NewTranslationServiceClient(conn).Translate(t.Context(), &tributaryv1.TranslateRequest{Settings: &tributaryv1.Settings{ConnectTimeout: "x"}})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Translate: got %v, want InvalidArgument", err)
	}
	lines := strings.Split(strings.TrimSuffix(logs.String(), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d log lines, want 1:\n%s", len(lines), logs.String())
	}
	for _, want := range []string{"level=WARN", `msg="finished call"`, "grpc.service=tributary.v1.TranslationService", "grpc.method=Translate", "grpc.code=InvalidArgument"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line lacks %q:\n%s", want, lines[0])
		}
	}
}
