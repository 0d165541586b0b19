package server

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/metrics"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/translate"
	"github.com/tributary-dev/tributary/internal/xds"
)

// translationService implements TranslationService: Translate over
// translate.Translate, Sync over package session (see sync.go). It holds no
// state of its own but where to report (logger, metrics): a Translate
// request is translated on its own, and a Sync session lives exactly as long
// as its stream.
type translationService struct {
	tributaryv1.UnimplementedTranslationServiceServer
	logger  *slog.Logger
	metrics *metrics.Metrics // nil records nothing
	xds     *xds.Publisher   // nil serves no xDS: Sync sessions cannot name a node group
	limits  syncLimits
	// draining is closed when Sync calls should end (Options.Draining);
	// nil never is.
	draining <-chan struct{}
}

// NewTranslationService returns the TranslationService implementation. It
// needs no gRPC server: the command line calls Translate in process, with the
// same checks and results as a remote call.
func NewTranslationService() tributaryv1.TranslationServiceServer {
	return translationService{logger: slog.Default()}
}

// Translate checks req, translates it and returns every resource and status.
// A malformed request fails with InvalidArgument (see decodeRequest); an
// ExtensionService that is well formed but invalid is reported in its status.
// With include_json, every resource also carries its protojson form.
//
// A response that could exceed the send limit (Options.MaxSendMsgSize) fails
// with ResourceExhausted before anything is built, naming what makes it
// large (see translate.Estimator); so does one whose memory does not fit
// in the in-flight budget now (see reserveResponse), which the call holds
// until it ends. A cancelled call or a passed deadline
// stops the translation within about one ExtensionService per CPU, and the
// call ends with Canceled or DeadlineExceeded: the code the client got,
// which the call log and metrics then carry too.
func (t translationService) Translate(ctx context.Context, req *tributaryv1.TranslateRequest) (*tributaryv1.TranslateResponse, error) {
	return t.translate(ctx, req, nil)
}

// translate is Translate for a request the wire fast path read, offWire
// being what it kept of the EndpointSlices outside their messages (see
// sliceOffWire), or, with offWire nil, whose messages hold everything.
func (t translationService) translate(ctx context.Context, req *tributaryv1.TranslateRequest, offWire []*sliceOffWire) (*tributaryv1.TranslateResponse, error) {
	res, err := t.result(ctx, req, offWire)
	if err != nil {
		return nil, err
	}
	resp := encodeResult(res)
	if req.GetIncludeJson() {
		if err := addJSON(resp.GetClusters(), resp.GetClusterLoadAssignments()); err != nil {
			return nil, err
		}
	}
	countSent(t.metrics, metrics.RPCTranslate, len(res.Clusters), len(res.ClusterLoadAssignments))
	return resp, nil
}

// answer is translate for a call the server's own handler takes (see
// translateMethod): an answer without protojson is handed to the codec as
// the Result itself, which it encodes without messages
// (wireTranslateResponse).
func (t translationService) answer(ctx context.Context, req *tributaryv1.TranslateRequest, offWire []*sliceOffWire) (any, error) {
	if req.GetIncludeJson() {
		return t.translate(ctx, req, offWire)
	}
	res, err := t.result(ctx, req, offWire)
	if err != nil {
		return nil, err
	}
	countSent(t.metrics, metrics.RPCTranslate, len(res.Clusters), len(res.ClusterLoadAssignments))
	return &wireTranslateResponse{result: res}, nil
}

// result checks req and translates it.
func (t translationService) result(ctx context.Context, req *tributaryv1.TranslateRequest, offWire []*sliceOffWire) (*translate.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	objs, settings, err := decodeTranslate(req, offWire)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	began := time.Now()
	limits := t.limits.output(req.GetIncludeJson())
	if call := callAdmissionOf(ctx); call != nil { // nil in process (the command line)
		limits.Reserve = call.reserveResponse
	}
	res, err := translate.Bounded(ctx, objs, settings, limits)
	if err != nil {
		return nil, translationError(err)
	}
	t.metrics.ObserveTranslation(metrics.RPCTranslate, time.Since(began))
	return res, nil
}

// output is the bound of one answer's output under l: the send limit, with
// JSON counted when the client asked for it.
func (l syncLimits) output(json bool) translate.Limits {
	return translate.Limits{MaxOutputBytes: int64(orDefault(l.maxSendBytes, DefaultMaxMsgSize)), JSON: json}
}

// translationError is the status of a translation that failed: a context's
// error becomes its code; an output over the limit ResourceExhausted.
func translationError(err error) error {
	if tooLarge, ok := errors.AsType[*translate.TooLargeError](err); ok {
		return status.Error(codes.ResourceExhausted, tooLarge.Describe("the response"))
	}
	if _, ok := status.FromError(err); ok { // the response's reservation refused
		return err
	}
	return status.FromContextError(err).Err()
}

// encodeResult converts a Result into a response. The resources' bytes are
// used as they are, never re-marshalled: they are the exact bytes the
// versions hash.
func encodeResult(res *translate.Result) *tributaryv1.TranslateResponse {
	return &tributaryv1.TranslateResponse{
		Clusters:               encodeResources(res.Clusters, resourcev3.ClusterType),
		ClusterLoadAssignments: encodeResources(res.ClusterLoadAssignments, resourcev3.EndpointType),
		Statuses:               encodeStatuses(res.Statuses),
	}
}

func encodeResources(rs []translate.Resource, typeURL string) []*tributaryv1.Resource {
	if len(rs) == 0 {
		return nil
	}
	// One backing array per list instead of three allocations per resource.
	resources := make([]tributaryv1.Resource, len(rs))
	anys := make([]anypb.Any, len(rs))
	out := make([]*tributaryv1.Resource, len(rs))
	for i, r := range rs {
		anys[i].TypeUrl, anys[i].Value = typeURL, r.Body
		resources[i].Name, resources[i].Version, resources[i].Resource = r.Name, r.Version, &anys[i]
		out[i] = &resources[i]
	}
	return out
}

func encodeStatuses(sts []model.Status) []*tributaryv1.ExtensionServiceStatus {
	if len(sts) == 0 {
		return nil
	}
	out := make([]*tributaryv1.ExtensionServiceStatus, len(sts))
	for i, st := range sts {
		c := st.Condition
		out[i] = &tributaryv1.ExtensionServiceStatus{
			Namespace: st.Namespace,
			Name:      st.Name,
			Conditions: []*tributaryv1.DetailedCondition{{
				Type:               c.Type,
				Status:             c.Status,
				ObservedGeneration: c.ObservedGeneration,
				Reason:             c.Reason,
				Message:            c.Message,
				Errors:             encodeSubConditions(c.Errors),
				Warnings:           encodeSubConditions(c.Warnings),
			}},
			ClusterName:     st.ClusterName,
			ResponseTimeout: st.ResponseTimeout,
			Availability:    encodeAvailability(st.Availability),
		}
	}
	return out
}

// encodeAvailability converts the per-target availability, beside the
// conditions: Contour's status has no such field, so nothing of it goes
// into them.
func encodeAvailability(as []model.TargetAvailability) []*tributaryv1.TargetAvailability {
	if len(as) == 0 {
		return nil
	}
	// One backing array for the list, as for resources.
	entries := make([]tributaryv1.TargetAvailability, len(as))
	out := make([]*tributaryv1.TargetAvailability, len(as))
	for i, a := range as {
		entries[i].Service, entries[i].Port = a.Service, a.Port
		entries[i].ReadyEndpoints, entries[i].Weight, entries[i].Reason = a.ReadyEndpoints, a.Weight, a.Reason
		out[i] = &entries[i]
	}
	return out
}

func encodeSubConditions(scs []model.SubCondition) []*tributaryv1.SubCondition {
	if len(scs) == 0 {
		return nil
	}
	out := make([]*tributaryv1.SubCondition, len(scs))
	for i, sc := range scs {
		out[i] = &tributaryv1.SubCondition{Type: sc.Type, Status: sc.Status, Reason: sc.Reason, Message: sc.Message}
	}
	return out
}

// translationServiceDesc is the generated TranslationService_ServiceDesc
// with Translate's handler replaced by translateMethod, so that the codec
// decodes a call's request into a wireTranslateRequest.
var translationServiceDesc = func() grpc.ServiceDesc {
	desc := tributaryv1.TranslationService_ServiceDesc
	desc.Methods = slices.Clone(desc.Methods)
	for i := range desc.Methods {
		if desc.Methods[i].MethodName == "Translate" {
			generatedTranslate = desc.Methods[i].Handler
			desc.Methods[i].Handler = translateMethod
		}
	}
	return desc
}()

// generatedTranslate is the generated Translate handler.
var generatedTranslate grpc.MethodHandler

// translateMethod is the generated Translate handler but for the type it
// decodes the request into, a *wireTranslateRequest, which the
// interceptors see and none of them reads. A server that is not a
// translationService (a test's wrapper) gets the generated handler: it
// takes the request as a message that holds its endpoints.
func translateMethod(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) { //nolint:revive // grpc.MethodHandler's signature
	t, ok := srv.(translationService)
	if !ok {
		return generatedTranslate(srv, ctx, dec, interceptor)
	}
	in := new(wireTranslateRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return t.answer(ctx, &in.request, in.slices)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: tributaryv1.TranslationService_Translate_FullMethodName}
	return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
		r := req.(*wireTranslateRequest)
		return t.answer(ctx, &r.request, r.slices)
	})
}
