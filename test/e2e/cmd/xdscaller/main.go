// Command xdscaller is the proxyless data-plane client of the end-to-end
// test: it resolves its target with gRPC-Go's own xDS client and calls
// envoy.service.auth.v3.Authorization/Check, counting which backend
// answered each call (the backends name themselves in the
// x-backend-identity header of their answer).
//
// Usage:
//
//	xdscaller --target xds:///NAME [--calls N] [--call-timeout 5s] [--map-documentation-addresses]
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
// With --map-documentation-addresses, the channel dials an endpoint in a
// documentation range on loopback instead: 192.0.2.N:P becomes 127.0.0.1:P
// and [2001:db8::N]:P becomes [::1]:P, and it refuses every other address.
// Kubernetes refuses EndpointSlices that name loopback addresses, so the
// tests against a real API server name their backends (which listen on
// 127.0.0.1) by documentation addresses; the refusal guarantees that no
// such test sends traffic off this machine. Only the channel's own
// connections to its endpoints are mapped: the xDS client dials the
// management server on a connection of its own, with its own dialer.
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
	"net"
	"net/netip"
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
	mapAddresses := flag.Bool("map-documentation-addresses", false, "dial endpoints in 192.0.2.0/24 and 2001:db8::/32 on loopback (same port), and refuse every other endpoint")
	flag.Parse()
	if *target == "" {
		fmt.Fprintln(os.Stderr, "xdscaller: --target is required")
		os.Exit(2)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if *mapAddresses {
		opts = append(opts, grpc.WithContextDialer(dialOnLoopback))
	}
	if err := run(*target, *calls, *callTimeout, opts); err != nil {
		fmt.Fprintln(os.Stderr, "xdscaller:", err)
		os.Exit(1)
	}
}

func run(target string, calls int, callTimeout time.Duration, opts []grpc.DialOption) error {
	conn, err := grpc.NewClient(target, opts...)
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

// Documentation ranges (RFC 5737, RFC 3849): addresses no network routes,
// which EndpointSlice validation accepts.
var (
	documentationIPv4 = netip.MustParsePrefix("192.0.2.0/24")
	documentationIPv6 = netip.MustParsePrefix("2001:db8::/32")
)

// loopbackFor maps an endpoint address in a documentation range to the
// same port on loopback (IPv4 to 127.0.0.1, IPv6 to ::1), and refuses any
// other address, so that a test cannot send traffic off this machine
// whatever its EndpointSlices say.
func loopbackFor(address string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("endpoint %q: %w", address, err)
	}
	addr := ap.Addr().Unmap()
	switch {
	case addr.Zone() != "":
		return netip.AddrPort{}, fmt.Errorf("endpoint %q has a zone: refused, only documentation addresses are dialed", address)
	case documentationIPv4.Contains(addr):
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), ap.Port()), nil
	case documentationIPv6.Contains(addr):
		return netip.AddrPortFrom(netip.IPv6Loopback(), ap.Port()), nil
	}
	return netip.AddrPort{}, fmt.Errorf("endpoint %q is not in %v or %v: refused, only documentation addresses are dialed", address, documentationIPv4, documentationIPv6)
}

// dialOnLoopback is the channel's dialer under
// --map-documentation-addresses: it dials loopbackFor(address) over TCP,
// as gRPC's default dialer would dial address.
func dialOnLoopback(ctx context.Context, address string) (net.Conn, error) {
	ap, err := loopbackFor(address)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", ap.String())
}
