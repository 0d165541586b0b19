// Command xdscaller is the proxyless data-plane client of the end-to-end
// test: it resolves its target with gRPC-Go's own xDS client and calls
// envoy.service.auth.v3.Authorization/Check, counting which backend
// answered each call (the backends name themselves in the
// x-backend-identity header of their answer).
//
// Usage:
//
//	xdscaller --target xds:///NAME [--calls N] [--call-timeout 5s]
//
// The xDS client reads its bootstrap from GRPC_XDS_BOOTSTRAP_CONFIG (inline
// JSON) or GRPC_XDS_BOOTSTRAP (a file), as every gRPC xDS client does.
// gRPC-Go speaks only state-of-the-world ADS
// (StreamAggregatedResources); it has no incremental (delta) mode.
//
// With --calls N it makes N calls, prints one tally and exits. Without it,
// it keeps one channel (and so one xDS client and one ADS stream) open and
// reads commands from stdin, one per line: a number N makes N calls and
// prints their tally as one line. It exits at EOF. The long-running form
// lets a test watch one client follow configuration changes, and survive a
// management server that goes away and comes back.
//
// A tally is a JSON object:
//
//	{"calls":2000,"identities":{"a-0":812,"a-1":788,...},"errors":{"Unavailable: ...":3}}
//
// Calls run one after another, each wait-for-ready with its own timeout, so
// a call made before the first configuration arrives waits for it rather
// than failing.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	_ "google.golang.org/grpc/xds" // registers the xds:/// resolver and the xDS balancers
)

// identityHeader is the header authzbackend names itself in.
const identityHeader = "x-backend-identity"

// Tally counts the outcome of a run of calls.
type Tally struct {
	Calls int `json:"calls"`
	// Identities counts successful calls by the identity that answered.
	Identities map[string]int `json:"identities"`
	// Errors counts failed calls by their status ("Code: message"), and
	// answers that named no identity under "missing identity".
	Errors map[string]int `json:"errors,omitempty"`
}

func main() {
	target := flag.String("target", "", "the `xds:///NAME` target to dial (required)")
	calls := flag.Int("calls", 0, "make `N` calls, print the tally and exit; 0 reads counts from stdin")
	callTimeout := flag.Duration("call-timeout", 5*time.Second, "how long one call may wait, including for the first configuration")
	flag.Parse()
	if *target == "" {
		fmt.Fprintln(os.Stderr, "xdscaller: --target is required")
		os.Exit(2)
	}
	if err := run(*target, *calls, *callTimeout); err != nil {
		fmt.Fprintln(os.Stderr, "xdscaller:", err)
		os.Exit(1)
	}
}

func run(target string, calls int, callTimeout time.Duration) error {
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	authz := authv3.NewAuthorizationClient(conn)
	out := json.NewEncoder(os.Stdout)

	if calls > 0 {
		return out.Encode(callN(authz, calls, callTimeout))
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		if line == "" {
			continue
		}
		n, err := strconv.Atoi(line)
		if err != nil || n < 1 {
			return fmt.Errorf("command %q: want a positive number of calls", line)
		}
		if err := out.Encode(callN(authz, n, callTimeout)); err != nil {
			return err
		}
	}
	return in.Err()
}

// callN makes n Check calls one after another and counts who answered.
func callN(authz authv3.AuthorizationClient, n int, callTimeout time.Duration) Tally {
	t := Tally{Calls: n, Identities: map[string]int{}, Errors: map[string]int{}}
	for range n {
		identity, err := check(authz, callTimeout)
		switch {
		case err != nil:
			st := status.Convert(err)
			t.Errors[st.Code().String()+": "+st.Message()]++
		case identity == "":
			t.Errors["missing identity"]++
		default:
			t.Identities[identity]++
		}
	}
	return t
}

func check(authz authv3.AuthorizationClient, callTimeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := authz.Check(ctx, &authv3.CheckRequest{}, grpc.WaitForReady(true))
	if err != nil {
		return "", err
	}
	for _, h := range resp.GetOkResponse().GetHeaders() {
		if h.GetHeader().GetKey() == identityHeader {
			return h.GetHeader().GetValue(), nil
		}
	}
	return "", nil
}
