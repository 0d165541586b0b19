package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/testproc"
	"github.com/tributary-dev/tributary/internal/translate"
)

// amplifiedCA is the amplification at a test's scale: Secret ns/ca
// holding copies CA certificates, and n h2 ExtensionServices validating
// against it, all targeting Service b with one endpoint.
func amplifiedCA(t *testing.T, copies, n int) []*tributaryv1.KubernetesObject {
	secret := caSecret(t, 1)
	secret.GetSecret().CaCrt = bytes.Repeat(secret.GetSecret().GetCaCrt(), copies)
	objs := []*tributaryv1.KubernetesObject{secret, service("b"), slice("b", "10.0.1.1")}
	for i := range n {
		objs = append(objs, extensionServiceObject(meta("ns", fmt.Sprintf("tls-%03d", i)), &tributaryv1.ExtensionServiceSpec{
			Services:   []*tributaryv1.ExtensionServiceTarget{{Name: "b", Port: 9000}},
			Validation: &tributaryv1.UpstreamValidation{CaSecret: "ca", SubjectName: "authz.ns.svc"},
		}))
	}
	return objs
}

// estimated is what the server estimates objs's output to be: the sum of
// the Estimates of its ExtensionServices.
func estimated(t *testing.T, objs []*tributaryv1.KubernetesObject) string {
	t.Helper()
	decoded, settings, err := decodeRequest(&tributaryv1.TranslateRequest{Objects: objs})
	if err != nil {
		t.Fatal(err)
	}
	e := translate.NewEstimator(model.NewIndex(decoded), settings)
	var n int64
	for i := range decoded.ExtensionServices {
		n += e.Estimate(&decoded.ExtensionServices[i]).Bytes
	}
	return translate.FormatBytes(n)
}

// TestTranslateOutputOverSendLimit: a Translate whose response would
// exceed the send limit fails with ResourceExhausted naming the Secret
// inlined into every Cluster, logged with that code; the server goes on
// answering.
func TestTranslateOutputOverSendLimit(t *testing.T) {
	var log testproc.Buffer
	opts := quietOptions()
	opts.Logger = slog.New(slog.NewTextHandler(&log, nil))
	opts.MaxSendMsgSize = 1 << 20
	client := tributaryv1.NewTranslationServiceClient(dialBufconn(t, NewGRPCServer(opts)))
	objs := amplifiedCA(t, 100, 100)
	_, err := client.Translate(t.Context(), &tributaryv1.TranslateRequest{Objects: objs})
	want := fmt.Sprintf(`the response would be about %s, over the 1 MiB limit: Secret "ns/ca" (%s) is inlined into 100 Clusters`,
		estimated(t, objs), translate.FormatBytes(int64(len(objs[0].GetSecret().GetCaCrt()))))
	if status.Code(err) != codes.ResourceExhausted || status.Convert(err).Message() != want {
		t.Fatalf("got %v, want ResourceExhausted: %s", err, want)
	}
	logged := regexp.MustCompile(`msg="finished call" .*grpc.method=Translate .*grpc.code=ResourceExhausted .*is inlined into 100 Clusters`)
	resp, err := client.Translate(t.Context(), smallRequest())
	if err != nil {
		t.Fatalf("the next Translate: %v", err)
	}
	if diff := cmp.Diff(smallResponse(t), resp, protocmp.Transform(), ignoreVersion); diff != "" {
		t.Errorf("the next Translate (-want +got):\n%s", diff)
	}
	// The first call's line was written before its answer was sent.
	if !logged.MatchString(log.String()) {
		t.Errorf("the call was not logged as ResourceExhausted; log:\n%s", log.String())
	}
}

// TestTranslationError: what a failed translation answers. A context's
// error becomes the code the client got (so the call log and metrics say
// the same), an output over the limit ResourceExhausted.
func TestTranslationError(t *testing.T) {
	for _, c := range []struct {
		err  error
		code codes.Code
		msg  string
	}{
		{context.Canceled, codes.Canceled, "context canceled"},
		{context.DeadlineExceeded, codes.DeadlineExceeded, "context deadline exceeded"},
		{&translate.TooLargeError{Bytes: 575e6, Limit: 64 << 20, Cause: `Secret "ns/ca" (574 KB) is inlined into 1,000 Clusters`},
			codes.ResourceExhausted, `the response would be about 575 MB, over the 64 MiB limit: Secret "ns/ca" (574 KB) is inlined into 1,000 Clusters`},
	} {
		st := status.Convert(translationError(c.err))
		if st.Code() != c.code || st.Message() != c.msg {
			t.Errorf("%v: got %v: %s, want %v: %s", c.err, st.Code(), st.Message(), c.code, c.msg)
		}
	}
}

// TestTranslateCancelled: the in-process Translate (the command line's)
// answers a cancelled or expired context with its code.
func TestTranslateCancelled(t *testing.T) {
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancelExpired := context.WithDeadline(t.Context(), time.Unix(0, 0))
	defer cancelExpired()
	for ctx, code := range map[context.Context]codes.Code{cancelled: codes.Canceled, expired: codes.DeadlineExceeded} {
		if _, err := NewTranslationService().Translate(ctx, smallRequest()); status.Code(err) != code {
			t.Errorf("got %v, want %v", err, code)
		}
	}
}

// TestSyncOutputOverSendLimit is the Sync amplification at a
// test's scale: a batch that grows the CA Secret 100 ExtensionServices
// validate against would make the next answer larger than the send limit.
// It is rejected with BatchRejected naming the Secret, changes nothing, and
// the session goes on; a new stream sending the large Secret at once is
// rejected the same way, not ended.
func TestSyncOutputOverSendLimit(t *testing.T) {
	opts := quietOptions()
	opts.MaxSendMsgSize = 1 << 20
	conn := dialBufconn(t, NewGRPCServer(opts))
	c := openSync(t.Context(), t, conn, nil)
	small := amplifiedCA(t, 1, 100)
	c.send(batch(1, small...))
	if d := c.delta(); d.GetBatchId() != 1 || len(d.GetClusters()) != 100 {
		t.Fatalf("first batch: got batch %d with %d Clusters, want batch 1 with 100", d.GetBatchId(), len(d.GetClusters()))
	}
	large := amplifiedCA(t, 200, 100)
	want := fmt.Sprintf(`with this batch, the session's output would be about %s, over the 1 MiB limit: Secret "ns/ca" (%s) is inlined into 100 Clusters`,
		estimated(t, large), translate.FormatBytes(int64(len(large[0].GetSecret().GetCaCrt()))))
	c.send(batch(2, large[0]))
	wantRejected(t, c, 2, ReasonResourceExhausted, want)

	// Nothing changed: an endpoint that moves changes the 100 CLAs alone,
	// with the small Secret's Clusters kept (as many endpoints are ready, so
	// no status changes).
	c.send(batch(3, slice("b", "10.0.1.2")))
	if d := c.delta(); d.GetBatchId() != 3 || len(d.GetClusterLoadAssignments()) != 100 || len(d.GetClusters()) != 0 || len(d.GetStatuses()) != 0 {
		t.Fatalf("after the rejection: got batch %d with %d CLAs, %d Clusters, %d statuses; want batch 3 with 100 CLAs alone",
			d.GetBatchId(), len(d.GetClusterLoadAssignments()), len(d.GetClusters()), len(d.GetStatuses()))
	}
	c.closeAndEnd()

	again := openSync(t.Context(), t, conn, nil)
	again.send(batch(1, large...))
	wantRejected(t, again, 1, ReasonResourceExhausted, want)
	again.send(batch(2, small...))
	if d := again.delta(); d.GetBatchId() != 2 || !d.GetFullState() || len(d.GetClusters()) != 100 {
		t.Fatalf("a new stream: got batch %d (full state %t) with %d Clusters, want batch 2, full, with 100", d.GetBatchId(), d.GetFullState(), len(d.GetClusters()))
	}
	again.closeAndEnd()
}
