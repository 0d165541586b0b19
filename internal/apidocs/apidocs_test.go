package apidocs

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	// The Envoy types the server puts in its responses' Any fields, which
	// reflection must go on describing from the compiled registry.
	_ "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/testing/protocmp"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/grpctest"
	"github.com/tributary-dev/tributary/internal/testproc"
)

// hangGuard bounds each grpcurl run so that a hung process fails the test
// with a message instead of stalling it until the global timeout. It is not
// a performance expectation.
const hangGuard = 2 * time.Minute

// TestEmbeddedMatchesCompiled: the embedded files are exactly the compiled
// files of our packages, and each equals its compiled twin once its source
// info is removed, so reflection never describes an API other than the one
// gen/go implements (a proto/ change without `make generate` fails here).
func TestEmbeddedMatchesCompiled(t *testing.T) {
	// Linking tributaryv1 registers the compiled files in GlobalFiles.
	_ = tributaryv1.File_tributary_v1_translation_proto

	files, err := embeddedFiles()
	if err != nil {
		t.Fatal(err)
	}
	var embedded, compiled []string
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		embedded = append(embedded, fd.Path())
		return true
	})
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if fd.Package() == "tributary" || strings.HasPrefix(string(fd.Package()), "tributary.") {
			compiled = append(compiled, fd.Path())
		}
		return true
	})
	slices.Sort(embedded)
	slices.Sort(compiled)
	want := []string{"tributary/v1/objects.proto", "tributary/v1/settings.proto", "tributary/v1/translation.proto"}
	if !slices.Equal(embedded, want) || !slices.Equal(compiled, want) {
		t.Fatalf("embedded files %q, compiled files %q, want both %q", embedded, compiled, want)
	}

	for _, path := range want {
		ours, err := files.FindFileByPath(path)
		if err != nil {
			t.Fatal(err)
		}
		compiledFile, err := protoregistry.GlobalFiles.FindFileByPath(path)
		if err != nil {
			t.Fatal(err)
		}
		got := protodesc.ToFileDescriptorProto(ours)
		if len(got.GetSourceCodeInfo().GetLocation()) == 0 {
			t.Errorf("%s: the embedded file has no source info", path)
		}
		got.SourceCodeInfo = nil
		if wantProto := protodesc.ToFileDescriptorProto(compiledFile); !proto.Equal(got, wantProto) {
			t.Errorf("%s: the embedded file differs from the compiled one (run 'make generate'); -compiled +embedded:\n%s", path, cmp.Diff(wantProto, got, protocmp.Transform()))
		}
	}
}

// TestResolver: our names resolve to the embedded files, with their
// comments; every other name to the compiled registry.
func TestResolver(t *testing.T) {
	resolver, err := newResolver()
	if err != nil {
		t.Fatal(err)
	}
	d, err := resolver.FindDescriptorByName("tributary.v1.TranslateRequest")
	if err != nil {
		t.Fatal(err)
	}
	const wantComment = " TranslateRequest is a complete set of input objects.\n"
	if got := d.ParentFile().SourceLocations().ByDescriptor(d).LeadingComments; got != wantComment {
		t.Errorf("TranslateRequest's leading comment = %q, want %q", got, wantComment)
	}

	// Reflection sends a file's imports along with it: ours must be the
	// embedded files too, with their comments.
	var documentedImports []string
	imports := d.ParentFile().Imports()
	for i := range imports.Len() {
		if imported := imports.Get(i); imported.SourceLocations().Len() > 0 {
			documentedImports = append(documentedImports, imported.Path())
		}
	}
	if want := []string{"tributary/v1/objects.proto", "tributary/v1/settings.proto"}; !slices.Equal(documentedImports, want) {
		t.Errorf("translation.proto's imports with source info = %q, want %q", documentedImports, want)
	}

	for _, name := range []protoreflect.FullName{"envoy.config.cluster.v3.Cluster", "google.protobuf.Any"} {
		d, err := resolver.FindDescriptorByName(name)
		if err != nil {
			t.Fatalf("FindDescriptorByName(%s): %v", name, err)
		}
		compiled, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if d != compiled {
			t.Errorf("FindDescriptorByName(%s) is not the compiled descriptor", name)
		}
	}
	for path, wantOurs := range map[string]bool{"tributary/v1/translation.proto": true, "google/protobuf/any.proto": false} {
		fd, err := resolver.FindFileByPath(path)
		if err != nil {
			t.Fatalf("FindFileByPath(%s): %v", path, err)
		}
		compiled, err := protoregistry.GlobalFiles.FindFileByPath(path)
		if err != nil {
			t.Fatal(err)
		}
		if gotOurs := fd != compiled; gotOurs != wantOurs {
			t.Errorf("FindFileByPath(%s) is the embedded file: %v, want %v", path, gotOurs, wantOurs)
		}
	}
	if _, err := resolver.FindDescriptorByName("tributary.v1.NoSuchMessage"); !errors.Is(err, protoregistry.NotFound) {
		t.Errorf("FindDescriptorByName of an unknown name: got %v, want %v", err, protoregistry.NotFound)
	}
}

// TestRegisterReflectionServices: both versions of the reflection service
// are registered, v1alpha for the clients that know no other, and nothing
// else.
func TestRegisterReflectionServices(t *testing.T) {
	s := grpc.NewServer()
	RegisterReflection(s)
	var services []string
	for name := range s.GetServiceInfo() {
		services = append(services, name)
	}
	slices.Sort(services)
	want := []string{"grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"}
	if !slices.Equal(services, want) {
		t.Errorf("services = %q, want %q", services, want)
	}
}

// TestGRPCurlDescribe asks the real grpcurl to describe our API and an Envoy
// type through a server with RegisterReflection, as users do against
// `tributary serve`.
func TestGRPCurlDescribe(t *testing.T) {
	// bin/grpcurl, from `make tools`: without it the test skips, unless CI
	// is set.
	grpcurl := testproc.Tool(t, "grpcurl")

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	RegisterReflection(s)
	grpctest.Serve(t, s, lis)

	describe := func(symbol string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
		defer cancel()
		cmd := exec.CommandContext(ctx, grpcurl, "-plaintext", lis.Addr().String(), "describe", symbol)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("grpcurl describe %s: %v\nstdout:\n%s\nstderr:\n%s", symbol, err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}

	out := describe("tributary.v1.TranslateRequest")
	for _, want := range []string{
		"tributary.v1.TranslateRequest is a message:\n// TranslateRequest is a complete set of input objects.\nmessage TranslateRequest {\n",
		"  // Translator-wide settings.\n  .tributary.v1.Settings settings = 1;\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("describe tributary.v1.TranslateRequest lacks %q:\n%s", want, out)
		}
	}

	if out := describe("envoy.config.cluster.v3.Cluster"); !strings.HasPrefix(out, "envoy.config.cluster.v3.Cluster is a message:\n") {
		t.Errorf("describe envoy.config.cluster.v3.Cluster:\n%s", out)
	}
}
