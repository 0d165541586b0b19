package attack

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/client"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/tlsfiles/testcerts"
	"github.com/tributary-dev/tributary/internal/workload"
)

// TestAttack runs one scenario per row of issue 10's table, in its order,
// each against a fresh server.
func TestAttack(t *testing.T) {
	for _, sc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"01-inlined-ca-secret", inlinedCASecret},
		{"02-cipher-suites", cipherSuites},
		{"03-xds-cluster-name", xdsClusterName},
		{"04-sync-shared-ca", syncSharedCA},
		{"05-many-targets", manyTargets},
		{"06-client-certificate-bundle", clientCertificateBundle},
		{"07-deadline-and-shutdown", deadlineAndShutdown},
		{"08-silent-sync-streams", silentSyncStreams},
		{"09-inflight-bytes", inflightBytes},
		{"10-huge-metadata", hugeMetadata},
		{"11-unlabelled-endpointslice", unlabelledEndpointSlice},
		{"12-huge-strings-in-logs", hugeStringsInLogs},
	} {
		t.Run(sc.name, sc.run)
	}
}

// ballastBytes is the size of the ballast request (see backToLevel): under
// the CI scale's 1 MiB message size limit.
var ballastBytes = sized(256<<10, 8<<20)

// smallMessages are the flags that bring the send limit down to the CI
// scale's inputs, which are a tenth of the issue's: the amplification is
// the same, the bytes fewer.
var smallMessages = sized([]string{"--max-message-size", "1Mi", "--max-response-size", "1Mi"}, nil)

// Bounds on what one client string may grow into: a status message and a
// log line. The server quotes at most a few hundred bytes of any input
// string; these leave room for the rest of the message.
const (
	maxStatusMessage = 4 << 10
	maxLogLine       = 8 << 10
)

// translate calls Translate with a deadline of guard.
func translate(t *testing.T, conn *grpc.ClientConn, req *tributaryv1.TranslateRequest) (*tributaryv1.TranslateResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	defer cancel()
	return tributaryv1.NewTranslationServiceClient(conn).Translate(ctx, req)
}

// outcome is what a row shows of a call's result.
func outcome(err error) string {
	if err == nil {
		return "OK"
	}
	st := status.Convert(err)
	return gotText(st.Code().String() + ": " + st.Message())
}

// wantStatus fails the test unless err has code and a message matching
// message (a regular expression; empty matches any).
func wantStatus(t *testing.T, err error, code codes.Code, message string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code || !regexp.MustCompile(message).MatchString(st.Message()) {
		t.Errorf("the attacker's call ended with %v: %.300q, want %v matching %q", st.Code(), st.Message(), code, message)
	}
	if len(st.Message()) > maxStatusMessage {
		t.Errorf("the status message is %d bytes long, over %d", len(st.Message()), maxStatusMessage)
	}
}

// Row 1: one Secret whose ca.crt holds many copies of a CA, which every
// one of many h2 ExtensionServices validates against. Each Cluster inlines
// the whole bundle, so the response would be copies × ExtensionServices of
// CA certificates: it fails fast with RESOURCE_EXHAUSTED naming the Secret,
// before it costs that memory.
func inlinedCASecret(t *testing.T) {
	r := report(t)
	srv := startServer(t, r, ballastBytes, smallMessages...)
	copies, n := sized(100, 1000), sized(100, 1000)
	bundle := bytes.Repeat(testcerts.NewCA(t, "attack-ca").PEM, copies)
	req := &tributaryv1.TranslateRequest{Objects: append(append(
		[]*tributaryv1.KubernetesObject{secret(attackNamespace, "ca", "Opaque", bundle, nil)},
		backend()...), validatingExtensionServices(n)...)}
	r.sent = fmt.Sprintf("Translate: ca.crt of %d CAs (%s) for %d h2 ExtensionServices (%s)", copies, kilobytes(len(bundle)), n, size(req))
	var err error
	r.timed(func() { _, err = translate(t, srv.legitConn, req) })
	r.got = outcome(err)
	wantStatus(t, err, codes.ResourceExhausted, `Secret "?attack/ca"?`)
	srv.checkHeld(t)
}

// Row 2: settings.upstreamTls.cipherSuites of 1,024 strings of 1 KB, which
// every h2 Cluster would carry: refused as INVALID_ARGUMENT naming the
// field.
func cipherSuites(t *testing.T) {
	r := report(t)
	srv := startServer(t, r, ballastBytes)
	n := sized(20, 2000)
	suites := make([]string, 1024)
	for i := range suites {
		suites[i] = fmt.Sprintf("%04d", i) + strings.Repeat("X", 1020)
	}
	req := &tributaryv1.TranslateRequest{
		Settings: &tributaryv1.Settings{UpstreamTls: &tributaryv1.UpstreamTLS{CipherSuites: suites}},
		Objects:  append(backend(), plainExtensionServices(n, "h2")...),
	}
	r.sent = fmt.Sprintf("Translate: 1,024 cipher suites of 1 KB for %d h2 ExtensionServices (%s)", n, size(req))
	var err error
	r.timed(func() { _, err = translate(t, srv.legitConn, req) })
	r.got = outcome(err)
	wantStatus(t, err, codes.InvalidArgument, `settings\.upstreamTls\.cipherSuites`)
	srv.checkHeld(t)
}

// Row 3: a 16 KB settings.xdsClusterName, which every Cluster's eds_config
// would carry: refused as INVALID_ARGUMENT naming the field.
func xdsClusterName(t *testing.T) {
	r := report(t)
	srv := startServer(t, r, ballastBytes)
	n := sized(20, 4000)
	req := &tributaryv1.TranslateRequest{
		Settings: &tributaryv1.Settings{XdsClusterName: strings.Repeat("x", 16<<10)},
		Objects:  append(backend(), plainExtensionServices(n, "h2c")...),
	}
	r.sent = fmt.Sprintf("Translate: a 16 KB xdsClusterName for %d ExtensionServices (%s)", n, size(req))
	var err error
	r.timed(func() { _, err = translate(t, srv.legitConn, req) })
	r.got = outcome(err)
	wantStatus(t, err, codes.InvalidArgument, `settings\.xdsClusterName`)
	srv.checkHeld(t)
}

// Row 5: one ExtensionService with thousands of targets, each a Service
// with an endpoint of its own: translated (in linear-ish time, which is
// not asserted), with one locality per target.
func manyTargets(t *testing.T) {
	r := report(t)
	srv := startServer(t, r, ballastBytes)
	n := sized(5000, 40000)
	targets := make([]string, n)
	objs := make([]*tributaryv1.KubernetesObject, 0, 2*n+1)
	for i := range targets {
		targets[i] = fmt.Sprintf("svc-%05d", i)
		objs = append(objs, service(attackNamespace, targets[i]),
			endpointSlice(attackNamespace, targets[i]+"-1", targets[i], workload.PodAddress(uint32(i)).String()))
	}
	req := &tributaryv1.TranslateRequest{Objects: append(objs, extensionService(attackNamespace, "wide", "h2c", nil, targets...))}
	r.sent = fmt.Sprintf("Translate: one ExtensionService with %d targets (%s)", n, size(req))
	var resp *tributaryv1.TranslateResponse
	var err error
	r.timed(func() { resp, err = translate(t, srv.legitConn, req) })
	r.got = outcome(err)
	if err != nil {
		t.Fatalf("Translate of %d targets: %v", n, err)
	}
	tr, err := client.Unpack(resp)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.ClusterLoadAssignments) != 1 {
		t.Fatalf("got %d ClusterLoadAssignments, want 1", len(tr.ClusterLoadAssignments))
	}
	localities := len(tr.ClusterLoadAssignments[0].GetEndpoints())
	r.got = fmt.Sprintf("OK: %d localities", localities)
	if localities != n {
		t.Errorf("the ClusterLoadAssignment has %d localities, want one per target, %d", localities, n)
	}
	srv.checkHeld(t)
}

// Row 6: a clientCertificate Secret whose tls.crt holds 100 certificates,
// used by every h2 ExtensionService: translated, every Cluster valid.
func clientCertificateBundle(t *testing.T) {
	r := report(t)
	srv := startServer(t, r, ballastBytes)
	n := sized(100, 1000)
	chain := bytes.Repeat(testcerts.NewCA(t, "attack-ca").Server(t).CertPEM, 100)
	req := &tributaryv1.TranslateRequest{
		Settings: &tributaryv1.Settings{ClientCertificate: attackNamespace + "/client"},
		Objects: append(append([]*tributaryv1.KubernetesObject{secret(attackNamespace, "client", "kubernetes.io/tls", nil, chain)},
			backend()...), plainExtensionServices(n, "h2")...),
	}
	r.sent = fmt.Sprintf("Translate: a client certificate Secret of 100 certificates (%s) for %d h2 ExtensionServices", kilobytes(len(chain)), n)
	var resp *tributaryv1.TranslateResponse
	var err error
	r.timed(func() { resp, err = translate(t, srv.legitConn, req) })
	r.got = outcome(err)
	if err != nil {
		t.Fatalf("Translate: %v", err)
	}
	valid := 0
	for _, st := range resp.GetStatuses() {
		if st.GetConditions()[0].GetStatus() == "True" {
			valid++
		}
	}
	r.got = fmt.Sprintf("OK: %d Clusters, %d valid", len(resp.GetClusters()), valid)
	if len(resp.GetClusters()) != n || valid != n {
		t.Errorf("got %d Clusters and %d valid statuses, want %d of each", len(resp.GetClusters()), valid, n)
	}
	srv.checkHeld(t)
}

// Row 11: an EndpointSlice without the kubernetes.io/service-name label
// beside the legitimate objects: ignored, as Contour ignores it, so the
// answer is exactly the legitimate one.
func unlabelledEndpointSlice(t *testing.T) {
	r := report(t)
	srv := startServer(t, r, ballastBytes)
	req := legitRequest()
	req.Objects = append(req.Objects, endpointSlice(legitNamespace, "mirrored-1", "", "10.3.0.1"))
	r.sent = "Translate: the legitimate objects and an EndpointSlice without kubernetes.io/service-name"
	var resp *tributaryv1.TranslateResponse
	var err error
	r.timed(func() { resp, err = translate(t, srv.legitConn, req) })
	r.got = outcome(err)
	if err != nil {
		t.Fatalf("Translate: %v", err)
	}
	if !proto.Equal(resp, srv.legitAnswer) {
		t.Errorf("with the unlabelled EndpointSlice the answer is\n%v\nwant exactly the legitimate answer\n%v", resp, srv.legitAnswer)
	}
	srv.checkLegitStillServed(t)
	srv.backToLevel(t)
}
