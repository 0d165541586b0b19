package server

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/workload"
)

// heldTranslate wraps the real service: a Translate whose xDS cluster name
// is "hold" signals entered and waits for release (or its context), so a
// test can keep a request in flight for as long as it needs; one named
// "wait" waits the same without signalling.
type heldTranslate struct {
	tributaryv1.TranslationServiceServer
	entered chan struct{}
	release chan struct{}
}

func (h heldTranslate) Translate(ctx context.Context, req *tributaryv1.TranslateRequest) (*tributaryv1.TranslateResponse, error) {
	switch req.GetSettings().GetXdsClusterName() {
	case "hold":
		h.entered <- struct{}{}
		fallthrough
	case "wait":
		select {
		case <-h.release:
		case <-ctx.Done():
		}
	}
	return h.TranslationServiceServer.Translate(ctx, req)
}

// paddedRequest is a valid TranslateRequest of exactly size bytes on the
// wire: an EndpointSlice-free Secret whose ca_crt fills the rest.
func paddedRequest(t *testing.T, clusterName string, size int) *tributaryv1.TranslateRequest {
	t.Helper()
	secret := &tributaryv1.Secret{Metadata: meta("ns", "padding")}
	req := &tributaryv1.TranslateRequest{
		Settings: &tributaryv1.Settings{XdsClusterName: clusterName},
		Objects:  []*tributaryv1.KubernetesObject{{Kind: &tributaryv1.KubernetesObject_Secret{Secret: secret}}},
	}
	secret.CaCrt = make([]byte, size)
	for proto.Size(req) > size {
		secret.CaCrt = secret.CaCrt[:len(secret.CaCrt)-(proto.Size(req)-size)]
	}
	if proto.Size(req) != size {
		t.Fatalf("padded request is %d bytes, want %d", proto.Size(req), size)
	}
	return req
}

// TestInflightBudget: requests in flight share MaxInflightBytes, counted as
// DecodeAmplification times their wire size; one that does not fit beside
// those in flight is refused at once with ResourceExhausted, and fits again
// once they end.
func TestInflightBudget(t *testing.T) {
	held := heldTranslate{NewTranslationService(), make(chan struct{}), make(chan struct{})}
	opts, codec, _ := observedOptions(DecodeAmplification * 3000) // room for 3000 wire bytes
	// A call gives its share back at its End, which gRPC reports after
	// the client may have read the response: the next call that needs
	// the share waits for it.
	givenBack := func() {
		waitUntil(t, "the calls' shares to be given back", func() bool { return codec.budget.used.Load() == 0 })
	}
	translation := tributaryv1.NewTranslationServiceClient(dialBufconn(t, newGRPCServer(opts, held)))

	first := make(chan error, 1)
	go func() {
		_, err := translation.Translate(t.Context(), paddedRequest(t, "hold", 2000))
		first <- err
	}()
	<-held.entered

	_, err := translation.Translate(t.Context(), paddedRequest(t, "other", 1001))
	want := fmt.Sprintf("the server has no memory for a request of 1001 bytes now (requests in flight may use %d bytes, --max-inflight-bytes, and a request costs about %d times its size); retry later",
		DecodeAmplification*3000, DecodeAmplification)
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || st.Message() != want {
		t.Errorf("a request that does not fit beside the one in flight: %v, want ResourceExhausted %q", err, want)
	}
	if _, err := translation.Translate(t.Context(), paddedRequest(t, "other", 1000)); err != nil {
		t.Errorf("a request that fits beside the one in flight: %v", err)
	}

	close(held.release)
	if err := <-first; err != nil {
		t.Fatalf("the request held: %v", err)
	}
	// Everything is given back: the larger request fits now, and so
	// does one of the whole budget.
	for _, size := range []int{1001, 3000} {
		givenBack()
		if _, err := translation.Translate(t.Context(), paddedRequest(t, "other", size)); err != nil {
			t.Errorf("a request of %d bytes once nothing is in flight: %v", size, err)
		}
	}
	if _, err := translation.Translate(t.Context(), paddedRequest(t, "other", 3001)); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("a request over the whole budget: %v, want ResourceExhausted", err)
	}
}

// TestInflightBudgetSync: a Sync message that does not fit in the budget
// ends the stream with ResourceExhausted after the answers owed; the budget
// a message held is given back when the next is read and when the stream
// ends, so a later session is served.
func TestInflightBudgetSync(t *testing.T) {
	opts := quietOptions()
	opts.MaxInflightBytes = DecodeAmplification * 2000
	conn := dialBufconn(t, NewGRPCServer(opts))

	for range 3 { // the budget comes back after each stream
		c := openSync(t.Context(), t, conn, nil)
		c.send(batch(1, plainES("h2c"), service("a"), slice("a", "10.0.0.1")))
		big := make([]string, 200)
		for i := range big {
			big[i] = fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)
		}
		c.send(batch(2, slice("a", big...))) // over 2000 bytes
		if d := c.delta(); d.GetBatchId() != 1 || !d.GetFullState() {
			t.Fatalf("got %v, want the full state after batch 1", d)
		}
		err := c.end()
		if st := status.Convert(err); st.Code() != codes.ResourceExhausted || st.Message() == "" {
			t.Fatalf("a batch over the in-flight budget: %v, want ResourceExhausted", err)
		}
	}
	c := started(t, conn)
	c.closeAndEnd()
}

// TestMalformedTranslateIsInvalidArgument: a Translate request that does
// not decode is the client's error, answered InvalidArgument and logged as
// a warning by the call log (gRPC's own answer would be Internal).
func TestMalformedTranslateIsInvalidArgument(t *testing.T) {
	conn := dialBufconn(t, NewGRPCServer(quietOptions()))
	var reply []byte
	err := conn.Invoke(t.Context(), tributaryv1.TranslationService_Translate_FullMethodName, &junkMessage, &reply, grpc.ForceCodecV2(rawCodec{}))
	const want = "cannot unmarshal the message as tributary.v1.TranslateRequest: proto: cannot parse invalid wire-format data"
	if st := status.Convert(err); st.Code() != codes.InvalidArgument || st.Message() != want {
		t.Errorf("got %v, want InvalidArgument %q", err, want)
	}
}

// TestMaxHeaderListSize: a call whose headers exceed
// DefaultMaxHeaderListSize is refused before it reaches the service.
func TestMaxHeaderListSize(t *testing.T) {
	translation := tributaryv1.NewTranslationServiceClient(dialTCP(t, NewGRPCServer(quietOptions())))
	// The first call learns the server's limit from its settings.
	if _, err := translation.Translate(t.Context(), &tributaryv1.TranslateRequest{}); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, DefaultMaxHeaderListSize)
	for i := range big {
		big[i] = 'x'
	}
	ctx := metadata.AppendToOutgoingContext(t.Context(), "padding", string(big))
	_, err := translation.Translate(ctx, &tributaryv1.TranslateRequest{})
	if status.Code(err) != codes.Internal || status.Convert(err).Message() == "" {
		t.Errorf("a call with %d bytes of headers: %v, want Internal", len(big), err)
	}
	if _, err := translation.Translate(t.Context(), &tributaryv1.TranslateRequest{}); err != nil {
		t.Errorf("a call after it: %v", err)
	}
}

// BenchmarkDecodeAmplification measures what DecodeAmplification stands
// for: the bytes allocated per byte on the wire by decoding a
// TranslateRequest of EndpointSlices (most of any large request), and by
// decoding it and checking it into the pipeline's input, as Translate
// does before translating. Reported as alloc-bytes/wire-byte.
func BenchmarkDecodeAmplification(b *testing.B) {
	// 100 ExtensionServices of 2 Services with 500 endpoints each.
	es, svcs, slices := workload.APIObjects(workload.Standard(100, 500))
	req := &tributaryv1.TranslateRequest{Objects: append(append(es, svcs...), slices...)}
	wire, err := proto.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	measure := func(b *testing.B, step func()) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for b.Loop() {
			step()
		}
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(len(wire)), "alloc-bytes/wire-byte")
	}
	b.Run("decode", func(b *testing.B) {
		measure(b, func() {
			var got tributaryv1.TranslateRequest
			if err := proto.Unmarshal(wire, &got); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("decode+check", func(b *testing.B) {
		measure(b, func() {
			var got tributaryv1.TranslateRequest
			if err := proto.Unmarshal(wire, &got); err != nil {
				b.Fatal(err)
			}
			if _, _, err := decodeRequest(&got); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("translate", func(b *testing.B) {
		service := NewTranslationService()
		measure(b, func() {
			var got tributaryv1.TranslateRequest
			if err := proto.Unmarshal(wire, &got); err != nil {
				b.Fatal(err)
			}
			if _, err := service.Translate(b.Context(), &got); err != nil {
				b.Fatal(err)
			}
		})
	})
	// The server's own path for a plainly encoded Translate request (see
	// wireTranslateRequest); the ones above are protobuf's, which every
	// other request takes, and so what DecodeAmplification must cover.
	b.Run("decode+check/wire", func(b *testing.B) {
		measure(b, func() {
			var got wireTranslateRequest
			if err := unmarshalRequest(mem.BufferSlice{mem.SliceBuffer(wire)}, &got); err != nil || got.slices == nil {
				b.Fatalf("the direct path did not take the request: %v", err)
			}
			if _, _, err := decodeTranslate(&got.request, got.slices); err != nil {
				b.Fatal(err)
			}
		})
	})
}
