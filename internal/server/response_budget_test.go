package server

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/translate"
)

// estimatedOutput is the estimated size of req's response, as Translate's
// bound counts it.
func estimatedOutput(t *testing.T, req *tributaryv1.TranslateRequest) int64 {
	t.Helper()
	objs, settings, err := decodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = translate.Bounded(t.Context(), objs, settings, translate.Limits{MaxOutputBytes: 1, JSON: req.GetIncludeJson()})
	tooLarge, ok := errors.AsType[*translate.TooLargeError](err)
	if !ok {
		t.Fatalf("Bounded with a 1-byte limit: %v, want a *TooLargeError", err)
	}
	return tooLarge.Bytes
}

// TestTranslateReservesItsResponse: a Translate holds, beside its
// request's share of the in-flight budget, responseAmplification times its
// response's estimated size until the call ends, since the response is
// built, then marshalled, while the request may still be live. One that
// does not fit is refused with ResourceExhausted before anything is built,
// and gives everything back.
func TestTranslateReservesItsResponse(t *testing.T) {
	for _, json := range []bool{false, true} {
		t.Run(fmt.Sprintf("include_json=%v", json), func(t *testing.T) {
			req := &tributaryv1.TranslateRequest{
				Objects:     []*tributaryv1.KubernetesObject{plainES("h2c"), service("a"), slice("a", addresses(2000, 1)...)},
				IncludeJson: json,
			}
			estimate := estimatedOutput(t, req)
			need := int64(proto.Size(req))*DecodeAmplification + responseAmplification*estimate
			for _, c := range []struct {
				budget int64
				want   error
			}{
				{need - 1, status.Errorf(codes.ResourceExhausted,
					"the server has no memory now for a response of about %d bytes (requests and responses in flight may use %d bytes, --max-inflight-bytes; a response costs about %d times its size); retry later",
					estimate, need-1, responseAmplification)},
				{need, nil},
			} {
				opts, codec, events := observedOptions(c.budget)
				translation := tributaryv1.NewTranslationServiceClient(dialBufconn(t, NewGRPCServer(opts)))
				resp, err := translation.Translate(t.Context(), req)
				if status.Code(err) != status.Code(c.want) || status.Convert(err).Message() != status.Convert(c.want).Message() {
					t.Errorf("with a budget of %d bytes: %v, want %v", c.budget, err, c.want)
				}
				if c.want == nil && len(resp.GetClusterLoadAssignments()) != 1 {
					t.Errorf("with a budget of %d bytes: %d ClusterLoadAssignments, want 1", c.budget, len(resp.GetClusterLoadAssignments()))
				}
				<-events.ended
				assertNothingHeld(t, codec)
			}
		})
	}
}
