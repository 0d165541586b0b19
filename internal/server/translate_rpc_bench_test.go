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
	// The request's bytes, built and marshalled once; the objects are
	// then dropped, so that the heap the loop sees is the server's.
	request := func() []byte {
		extensionServices, services, endpointSlices := workload.APIObjects(workload.Standard(n, m))
		objects := make([]*tributaryv1.KubernetesObject, 0, len(extensionServices)+len(services)+len(endpointSlices))
		objects = append(append(append(objects, extensionServices...), services...), endpointSlices...)
		wire, err := proto.Marshal(&tributaryv1.TranslateRequest{Objects: objects})
		if err != nil {
			b.Fatal(err)
		}
		return wire
	}()
	runtime.GC()

	conn := dialTranslateRPC(b, quietOptions())
	// A hang fails the call instead of the benchmark blocking for good; a
	// call takes well under a second on an idle machine.
	const callTimeout = 2 * time.Minute
	call := func(reply any, codec grpc.CallOption) {
		ctx, cancel := context.WithTimeout(b.Context(), callTimeout)
		defer cancel()
		if err := conn.Invoke(ctx, tributaryv1.TranslationService_Translate_FullMethodName, request, reply, codec); err != nil {
			b.Fatal(err)
		}
	}

	// Once, untimed: the response decoded as a client would, so that a
	// broken setup (a refused call, an empty answer) cannot pass.
	var response []byte
	call(&response, grpc.ForceCodecV2(grpctest.RawCodec{}))
	var decoded tributaryv1.TranslateResponse
	if err := proto.Unmarshal(response, &decoded); err != nil {
		b.Fatal(err)
	}
	if len(decoded.GetClusters()) != n || len(decoded.GetClusterLoadAssignments()) != n || len(decoded.GetStatuses()) != n {
		b.Fatalf("got %d Clusters, %d CLAs, %d statuses; want %d of each",
			len(decoded.GetClusters()), len(decoded.GetClusterLoadAssignments()), len(decoded.GetStatuses()), n)
	}
	responseSize := len(response)
	response, decoded = nil, tributaryv1.TranslateResponse{}
	runtime.GC()

	b.ReportAllocs()
	cpu, ops := cputime.OfProcess(), 0
	for b.Loop() {
		ops++
		var got int
		call(&got, grpc.ForceCodecV2(rawRPCCodec{}))
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
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	grpctest.Serve(b, NewGRPCServer(opts), lis)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(orDefault(opts.MaxSendMsgSize, DefaultMaxMsgSize))))
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
// name "proto", the codec the server expects.
type rawRPCCodec struct{}

func (rawRPCCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}

func (rawRPCCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*(v.(*int)) = data.Len()
	return nil
}

func (rawRPCCodec) Name() string { return "proto" }
