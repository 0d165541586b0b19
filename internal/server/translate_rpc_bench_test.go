package server

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/cputime"
	"github.com/tributary-dev/tributary/internal/grpctest"
	"github.com/tributary-dev/tributary/internal/workload"
)

// BenchmarkTranslateRPC measures one Translate call end to end over a real
// gRPC connection (HTTP/2 over loopback TCP to a server with the production
// options): the server receiving and decoding the request (the admission
// codec's proto Unmarshal, then decodeRequest), translating it, and gRPC
// marshalling and sending the response. The workload is the standard one
// (see workload.Standard), as in BenchmarkTranslate: N ExtensionServices ×
// 2 Services × M endpoints, sent as one TranslateRequest.
//
// The figure is meant to be the server's cost. The request is marshalled
// once, before timing, and the same bytes are sent on every call; the
// response's bytes are counted and dropped, never decoded (rawRPCCodec).
// What the client still does is unavoidable on a real connection and is in
// the figures, since client and server share the process: framing the
// request onto HTTP/2 and reading the response's frames. The process's CPU
// time (cpu-ns/op) counts every thread, the garbage collector's included.
// The request and response sizes are reported as request-MB and
// response-MB.
//
// When this is compared with Contour's translation of the same workload,
// note that Contour decodes nothing: its translation starts from objects
// already in memory, while this figure includes decoding the request from
// the wire and encoding the response onto it.
//
// No limit is raised: the server runs with the production defaults. The
// largest call (N=10000, M=100, two million endpoints) sends a 55.5 MB
// request and gets a 59.3 MB response, both under the default 64 MiB
// (67.1 MB) message size, and its share of the in-flight budget
// (DecodeAmplification times the request, responseAmplification times the
// response's estimate) fits in the default DefaultMaxInflightBytes. A
// workload much larger would need MaxRecvMsgSize, MaxSendMsgSize and
// MaxInflightBytes raised, as an operator raises them with
// --max-message-size and --max-inflight-bytes.
func BenchmarkTranslateRPC(b *testing.B) {
	for _, size := range []struct{ n, m int }{{10000, 100}, {10000, 10}, {1000, 100}} {
		b.Run(fmt.Sprintf("N=%d/M=%d", size.n, size.m), func(b *testing.B) {
			benchmarkTranslateRPC(b, size.n, size.m)
		})
	}
}

func benchmarkTranslateRPC(b *testing.B, n, m int) {
	request := translateRPCRequest(b, n, m)
	conn := dialTranslateRPC(b, quietOptions())
	responseSize := len(translateRPCResponse(b, conn, request, n))
	runtime.GC()
	measureRPC(b, conn, request, responseSize)
}

// BenchmarkTranslateRPCTransport measures what BenchmarkTranslateRPC's
// calls cost with no translation at all: the same request's bytes sent to
// a gRPC server with the same message size limits, whose handler neither
// decodes them nor builds anything, and answers with the bytes of the real
// response, made once before timing. The client's side is the same as in
// BenchmarkTranslateRPC. It is the floor of that benchmark's CPU time on
// this machine, gRPC's and the kernel's share of every call: the part of
// the RPC that no translator, however fast, removes.
func BenchmarkTranslateRPCTransport(b *testing.B) {
	for _, size := range []struct{ n, m int }{{10000, 100}, {10000, 10}, {1000, 100}} {
		b.Run(fmt.Sprintf("N=%d/M=%d", size.n, size.m), func(b *testing.B) {
			request := translateRPCRequest(b, size.n, size.m)
			response := translateRPCResponse(b, dialTranslateRPC(b, quietOptions()), request, size.n)
			runtime.GC()
			echo := grpc.NewServer(grpc.ForceServerCodecV2(rawRPCCodec{}),
				grpc.MaxRecvMsgSize(DefaultMaxMsgSize), grpc.MaxSendMsgSize(DefaultMaxMsgSize),
				grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
					var got int
					if err := stream.RecvMsg(&got); err != nil {
						return err
					}
					if got != len(request) {
						return fmt.Errorf("request of %d bytes, want %d", got, len(request))
					}
					return stream.SendMsg(response)
				}))
			measureRPC(b, serveLoopback(b, echo, DefaultMaxMsgSize), request, len(response))
		})
	}
}

// translateRPCRequest is the marshalled TranslateRequest of the standard
// workload of N ExtensionServices over M endpoints per Service; the
// objects are dropped, so that the heap the loop sees is the server's.
func translateRPCRequest(b *testing.B, n, m int) []byte {
	extensionServices, services, endpointSlices := workload.APIObjects(workload.Standard(n, m))
	objects := make([]*tributaryv1.KubernetesObject, 0, len(extensionServices)+len(services)+len(endpointSlices))
	objects = append(append(append(objects, extensionServices...), services...), endpointSlices...)
	wire, err := proto.Marshal(&tributaryv1.TranslateRequest{Objects: objects})
	if err != nil {
		b.Fatal(err)
	}
	return wire
}

// translateRPCResponse calls Translate once, untimed, and returns the
// response's bytes, decoded once as a client would so that a broken setup
// (a refused call, an empty answer) cannot pass.
func translateRPCResponse(b *testing.B, conn *grpc.ClientConn, request []byte, n int) []byte {
	var response []byte
	invokeRPC(b, conn, request, &response, grpc.ForceCodecV2(grpctest.RawCodec{}))
	var decoded tributaryv1.TranslateResponse
	if err := proto.Unmarshal(response, &decoded); err != nil {
		b.Fatal(err)
	}
	if len(decoded.GetClusters()) != n || len(decoded.GetClusterLoadAssignments()) != n || len(decoded.GetStatuses()) != n {
		b.Fatalf("got %d Clusters, %d CLAs, %d statuses; want %d of each",
			len(decoded.GetClusters()), len(decoded.GetClusterLoadAssignments()), len(decoded.GetStatuses()), n)
	}
	return response
}

// invokeRPC makes one Translate call on conn. A hang fails the call instead
// of the benchmark blocking for good; a call takes well under a second on
// an idle machine.
func invokeRPC(b *testing.B, conn *grpc.ClientConn, request []byte, reply any, codec grpc.CallOption) {
	ctx, cancel := context.WithTimeout(b.Context(), 2*time.Minute)
	defer cancel()
	if err := conn.Invoke(ctx, tributaryv1.TranslationService_Translate_FullMethodName, request, reply, codec); err != nil {
		b.Fatal(err)
	}
}

// measureRPC times calls of request on conn, each answer counted, not
// decoded (rawRPCCodec), and checked to be responseSize bytes long; it
// reports the process's CPU time per call (every thread, the garbage
// collector's included) and both messages' sizes.
func measureRPC(b *testing.B, conn *grpc.ClientConn, request []byte, responseSize int) {
	b.ReportAllocs()
	cpu, ops := cputime.OfProcess(), 0
	for b.Loop() {
		ops++
		var got int
		invokeRPC(b, conn, request, &got, grpc.ForceCodecV2(rawRPCCodec{}))
		if got != responseSize {
			b.Fatalf("response of %d bytes, want %d as the first time", got, responseSize)
		}
	}
	b.ReportMetric(cputime.PerOp(cpu, ops), "cpu-ns/op")
	// After the loop: its first iteration resets the timer, which deletes
	// the metrics reported before.
	b.ReportMetric(float64(len(request))/1e6, "request-MB")
	b.ReportMetric(float64(responseSize)/1e6, "response-MB")
}

// dialTranslateRPC serves a server with opts on 127.0.0.1 and returns a
// client connection taking responses up to the server's own size limit;
// both stop when the benchmark ends.
func dialTranslateRPC(b *testing.B, opts Options) *grpc.ClientConn {
	return serveLoopback(b, NewGRPCServer(opts), orDefault(opts.MaxSendMsgSize, DefaultMaxMsgSize))
}

// serveLoopback serves srv on 127.0.0.1 and returns a client connection
// taking responses up to maxResponse bytes; both stop when the benchmark
// ends.
func serveLoopback(b *testing.B, srv *grpc.Server, maxResponse int) *grpc.ClientConn {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	grpctest.Serve(b, srv, lis)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxResponse)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return conn
}

// rawRPCCodec sends a []byte, an already marshalled message, as it is, and
// receives a message by storing its length in an *int: the response is
// neither decoded nor copied, so the client's work stays out of the
// benchmark's figures as far as a real connection allows. It takes the
// name "proto", the codec the server expects. BenchmarkTranslateRPCTransport's
// server uses it too, to take a request without decoding it and to send
// the response's bytes as they are.
type rawRPCCodec struct{}

func (rawRPCCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}

func (rawRPCCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*(v.(*int)) = data.Len()
	return nil
}

func (rawRPCCodec) Name() string { return "proto" }
