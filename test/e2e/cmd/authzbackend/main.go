// Command authzbackend is a minimal ext_authz backend for the end-to-end
// test: it serves envoy.service.auth.v3.Authorization/Check on a loopback
// port, allows every request, and names itself in every answer, so a caller
// can count which backend each call reached.
//
// Usage:
//
//	authzbackend --identity NAME [--address 127.0.0.1:0]
//
// The first line on stdout is "listening HOST:PORT", the address actually
// bound, so a parent process can start it on port 0 and read the port back.
// It serves until SIGTERM, SIGINT, or until its stdin reaches EOF: a parent
// that dies without cleaning up takes its backends with it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// IdentityHeader is the header the backend adds to every OK answer (as a
// header to add upstream, the way an ext_authz server passes facts on) and
// sends as gRPC response metadata. Its value is the backend's --identity.
const IdentityHeader = "x-backend-identity"

func main() {
	identity := flag.String("identity", "", "the `name` this backend answers with (required)")
	address := flag.String("address", "127.0.0.1:0", "`host:port` to listen on")
	flag.Parse()
	if *identity == "" {
		fmt.Fprintln(os.Stderr, "authzbackend: --identity is required")
		os.Exit(2)
	}
	if err := run(*identity, *address); err != nil {
		fmt.Fprintln(os.Stderr, "authzbackend:", err)
		os.Exit(1)
	}
}

func run(identity, address string) error {
	lis, err := net.Listen("tcp", address)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	authv3.RegisterAuthorizationServer(srv, &authorizer{identity: identity})
	// Printed before Serve: the kernel already queues connections on lis.
	fmt.Printf("listening %s\n", lis.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	srv.Stop()
	return nil
}

// authorizer allows everything and says who it is.
type authorizer struct {
	authv3.UnimplementedAuthorizationServer
	identity string
}

// Check answers OK with the identity both in the ext_authz answer (a header
// for the upstream request) and in the gRPC response metadata.
func (a *authorizer) Check(ctx context.Context, _ *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	if err := grpc.SetHeader(ctx, metadata.Pairs(IdentityHeader, a.identity)); err != nil {
		return nil, err
	}
	return &authv3.CheckResponse{
		Status: &rpcstatus.Status{Code: int32(codes.OK)},
		HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: &authv3.OkHttpResponse{
			Headers: []*corev3.HeaderValueOption{{Header: &corev3.HeaderValue{Key: IdentityHeader, Value: a.identity}}},
		}},
	}, nil
}
