package attack

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
)

// Row 9: eight concurrent large Translate requests, together far beyond
// the server-wide cap on what requests in flight may cost
// (--max-inflight-bytes, which counts a request as 32 times its size).
// What does not fit is refused with RESOURCE_EXHAUSTED at once, so the
// server's memory stays bounded; each call either succeeds or is refused.
// At the size the server runs with its defaults (a 1 GiB cap), as
// deployed.
func inflightBytes(t *testing.T) {
	r := report(t)
	req := encode(t, heavyRequest(sized(100, 1000), sized(250, 350)))
	reqSize := len(req)
	// CI: room for one and a half requests, so one at a time.
	args := sized([]string{"--max-inflight-bytes", fmt.Sprint(48 * reqSize)}, nil)
	srv := startServer(t, r, ballastBytes, args...)
	r.sent = fmt.Sprintf("8 concurrent Translate calls of %s, %s", kilobytes(reqSize), sized(strings.Join(args, " "), "default limits"))
	var errs []error
	r.timed(func() {
		errs = concurrently(t, srv, 8, req.translate)
	})
	ok, refused := 0, 0
	for i, err := range errs {
		switch status.Code(err) {
		case codes.OK:
			ok++
		case codes.ResourceExhausted:
			refused++
		default:
			t.Errorf("call %d ended with %v, want OK or ResourceExhausted", i, err)
		}
		if err != nil {
			r.got = outcome(err)
		}
	}
	r.got = fmt.Sprintf("%d OK, %d refused: %s", ok, refused, r.got)
	if refused == 0 {
		t.Errorf("all 8 calls of %s were admitted: the in-flight cap refused none", kilobytes(reqSize))
	}
	srv.checkHeld(t)
}

// Row 10: calls carrying 15 MiB of metadata each, sent over hand-driven
// HTTP/2 connections that ignore the header list size the server
// advertises, as an attacker's client would: each is refused (the stream
// reset, or the connection ended) before the service sees it, and the
// server is fine.
func hugeMetadata(t *testing.T) {
	r := report(t)
	srv := startServer(t, r, ballastBytes)
	n := sized(2, 32)
	headers := map[string]string{}
	for i := range 15 {
		headers[fmt.Sprintf("x-attack-%02d", i)] = strings.Repeat("m", 1<<20)
	}
	r.sent = fmt.Sprintf("%d concurrent Translate calls with 15 MiB of metadata each, past the advertised header list size", n)
	answers := make([]string, n)
	r.timed(func() {
		var wg sync.WaitGroup
		for i := range answers {
			wg.Go(func() { answers[i] = rawTranslate(srv.Address, headers, legitRequest()) })
		}
		wg.Wait()
	})
	r.got = gotText(answers[0])
	for i, a := range answers {
		if strings.HasPrefix(a, "grpc-status") {
			t.Errorf("call %d with 15 MiB of metadata was answered with %s, want it refused before the service", i, a)
		}
	}
	srv.checkHeld(t)
}

// Row 12: a 1 MiB type URL on the xDS port and a 1 MiB target name in a
// Translate request. Neither reaches a log line, an error or a status
// message whole: the longest log line and every message stay small. The
// target name is not the request's to refuse (Contour's CRD does not bound
// it): the ExtensionService that names it is invalid, its Service not
// found, and the rest of the request is translated.
func hugeStringsInLogs(t *testing.T) {
	r := report(t)
	srv := startServer(t, r, ballastBytes, "--xds-address", "127.0.0.1:0")
	huge := strings.Repeat("u", 1<<20)
	r.sent = "xDS: a DiscoveryRequest with a 1 MiB type URL; Translate: a 1 MiB target name"

	var xdsErr, translateErr error
	var resp *tributaryv1.TranslateResponse
	r.timed(func() {
		ctx, cancel := context.WithTimeout(t.Context(), guard)
		defer cancel()
		xdsConn := dial(t, srv.XDSAddress)
		defer func() { _ = xdsConn.Close() }()
		ads, err := discoveryv3.NewAggregatedDiscoveryServiceClient(xdsConn).StreamAggregatedResources(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = ads.Send(&discoveryv3.DiscoveryRequest{Node: &corev3.Node{Id: "attack"}, TypeUrl: "type.googleapis.com/" + huge})
		// A type URL the server does not serve ends the stream.
		_, xdsErr = ads.Recv()

		req := legitRequest()
		req.Objects = append(req.Objects, extensionService(attackNamespace, "huge", "h2c", nil, huge))
		resp, translateErr = translate(t, srv.legitConn, req)
	})
	r.got = "xDS: " + outcome(xdsErr) + "; Translate: " + outcome(translateErr)

	if status.Code(xdsErr) == codes.OK {
		t.Errorf("the xDS stream with a 1 MiB type URL ended with %v, want an error status", xdsErr)
	}
	if m := status.Convert(xdsErr).Message(); len(m) > maxStatusMessage {
		t.Errorf("the xDS status message is %d bytes long, over %d", len(m), maxStatusMessage)
	}
	if translateErr != nil {
		t.Errorf("the Translate with a 1 MiB target name ended with %v, want it translated", translateErr)
	}
	unresolved := false
	for _, st := range resp.GetStatuses() {
		if st.GetName() == "huge" {
			for _, c := range st.GetConditions() {
				for _, e := range c.GetErrors() {
					unresolved = unresolved || e.GetReason() == "ServiceUnresolvedReference"
				}
			}
		}
		for _, c := range st.GetConditions() {
			for _, sc := range append(append([]*tributaryv1.SubCondition{{Message: c.GetMessage()}}, c.GetErrors()...), c.GetWarnings()...) {
				if len(sc.GetMessage()) > maxStatusMessage {
					t.Errorf("a status message of %s/%s is %d bytes long, over %d", st.GetNamespace(), st.GetName(), len(sc.GetMessage()), maxStatusMessage)
				}
			}
		}
	}
	if !unresolved {
		t.Errorf("ExtensionService %s/huge has no ServiceUnresolvedReference error in its status", attackNamespace)
	}
	srv.checkHeld(t)
	if n := srv.longestLogLine(); n > maxLogLine {
		t.Errorf("the server logged a line of %d bytes, over %d", n, maxLogLine)
	}
}
