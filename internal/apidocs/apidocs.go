// Package apidocs serves our API's descriptors over gRPC server reflection
// with their documentation comments, so that `grpcurl describe` shows what
// proto/ says about each service, message and field.
//
// The descriptors protoc-gen-go compiles into gen/go have no source info
// (no comments), and reflection.Register serves exactly those. This package
// embeds tributary.binpb instead: a FileDescriptorSet of proto/ with source
// info and without imports, written by `buf build` in `make generate` and
// held by `make check-generated` like the rest of the generated code. It
// lives here rather than under gen/ because go:embed reads only files in the
// embedding package's own directory, and gen/ holds only what buf.gen.yaml
// writes. Everything that is not ours (google/protobuf, the Envoy types, the
// gRPC health and reflection protos) is served from protoregistry.GlobalFiles
// as before. The tests check that the embedded files equal the compiled ones
// once their source info is removed, so a stale embed cannot describe an API
// other than the one the server speaks.
package apidocs

import (
	_ "embed"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/grpc/reflection"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// descriptorSet is the FileDescriptorSet of proto/, with source info.
//
//go:embed tributary.binpb
var descriptorSet []byte

// RegisterReflection registers the gRPC server reflection service, v1 and
// v1alpha (older grpcurl and other clients know only v1alpha), on s as
// reflection.Register does, but describing our files with their comments.
// It panics if the embedded descriptors do not load, which the package's
// tests rule out for the descriptors committed with the code.
func RegisterReflection(s reflection.GRPCServer) {
	resolver, err := newResolver()
	if err != nil {
		panic(err)
	}
	opts := reflection.ServerOptions{
		Services:           s,
		DescriptorResolver: resolver,
		ExtensionResolver:  protoregistry.GlobalTypes,
	}
	reflectionv1alpha.RegisterServerReflectionServer(s, reflection.NewServer(opts))
	reflectionv1.RegisterServerReflectionServer(s, reflection.NewServerV1(opts))
}

// newResolver returns the descriptors reflection serves: our files from the
// embedded set, with their comments, and every other file from
// protoregistry.GlobalFiles. The set is decoded once, on the first call.
func newResolver() (protodesc.Resolver, error) {
	files, err := embeddedFiles()
	if err != nil {
		return nil, err
	}
	return layeredResolver{ours: files}, nil
}

// embeddedFiles decodes descriptorSet once: reflection is registered once
// per server, but a process (or a test binary) may build several servers.
var embeddedFiles = sync.OnceValues(func() (*protoregistry.Files, error) {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(descriptorSet, &set); err != nil {
		return nil, fmt.Errorf("apidocs: decoding the embedded descriptor set: %w", err)
	}
	files := new(protoregistry.Files)
	// buf writes a file after the files it imports, so each file's imports
	// are already in files, or in GlobalFiles when they are not ours.
	resolver := layeredResolver{ours: files}
	for _, fdp := range set.GetFile() {
		fd, err := protodesc.NewFile(fdp, resolver)
		if err != nil {
			return nil, fmt.Errorf("apidocs: embedded descriptor %s: %w", fdp.GetName(), err)
		}
		if err := files.RegisterFile(fd); err != nil {
			return nil, fmt.Errorf("apidocs: embedded descriptor %s: %w", fdp.GetName(), err)
		}
	}
	return files, nil
})

// layeredResolver looks a file or a name up in ours first, then in
// protoregistry.GlobalFiles. Since ours holds every file of our packages,
// the compiled copies of those in GlobalFiles are never reached.
type layeredResolver struct {
	ours *protoregistry.Files
}

func (r layeredResolver) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	fd, err := r.ours.FindFileByPath(path)
	if errors.Is(err, protoregistry.NotFound) {
		return protoregistry.GlobalFiles.FindFileByPath(path)
	}
	return fd, err
}

func (r layeredResolver) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	d, err := r.ours.FindDescriptorByName(name)
	if errors.Is(err, protoregistry.NotFound) {
		return protoregistry.GlobalFiles.FindDescriptorByName(name)
	}
	return d, err
}
