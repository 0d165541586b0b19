package envoy

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
)

// clusterVariant builds an ExtensionCluster of a shape chosen by the bits
// of v, named name.
func clusterVariant(v uint32, name string) *model.ExtensionCluster {
	idle, zero := 90*time.Second, time.Duration(0)
	ec := &model.ExtensionCluster{
		Name:           name,
		XDSClusterName: []string{"contour", "ns/xds", "tributary"}[v%3],
		Protocol:       model.Protocol(v / 3 % 3),
		LoadBalancer:   model.LoadBalancer(v / 9 % 3),
		ConnectTimeout: time.Duration(1+v/27%4) * 250 * time.Millisecond,
	}
	switch v / 108 % 3 {
	case 1:
		ec.IdleConnectionTimeout = &idle
	case 2:
		ec.IdleConnectionTimeout = &zero
	}
	if v/324%2 == 1 {
		ec.CircuitBreakers = &source.CircuitBreakers{MaxConnections: v % 7, MaxRequests: 3, PerHostMaxConnections: v % 2}
	}
	if ec.Protocol == model.ProtocolH2 {
		ec.TLS = &model.UpstreamTLS{}
		switch v / 648 % 4 {
		case 1:
			ec.TLS.ClientCertificateSDSName = "projectcontour/envoy-client/0123456789"
		case 2:
			ec.TLS.Params = &model.TLSParams{Minimum: model.TLS12, Maximum: model.TLS13, CipherSuites: []string{"ECDHE-ECDSA-AES128-GCM-SHA256"}}
		case 3: // validation: data of the ExtensionService's own
			ec.TLS.SNI, ec.TLS.CACertificate, ec.TLS.SubjectNames = "authz.example.com", []byte("ca"), []string{"authz.example.com"}
		}
	}
	return ec
}

// TestClusterEncoderMatchesMarshal: for every shape and names of several
// lengths (one-byte and two-byte length prefixes), the encoder gives
// exactly the bytes of a deterministic proto.Marshal of BuildCluster, from
// a template after the first Cluster of a shape.
func TestClusterEncoderMatchesMarshal(t *testing.T) {
	names := []string{"extension/ns/a", "extension/team-007/ext-00042", "extension/" + strings.Repeat("n", 63) + "/" + strings.Repeat("x", 200)}
	enc := NewClusterEncoder()
	marshal := proto.MarshalOptions{Deterministic: true}
	for v := uint32(0); v < 648*4; v++ {
		for _, name := range names {
			ec := clusterVariant(v, name)
			want, err := marshal.Marshal(BuildCluster(ec))
			if err != nil {
				t.Fatal(err)
			}
			got := enc.Append([]byte("prefix"), ec)
			if !bytes.HasPrefix(got, []byte("prefix")) || !bytes.Equal(got[len("prefix"):], want) {
				t.Fatalf("variant %d, name %q: encoder and proto.Marshal differ\n got %x\nwant %x", v, name, got[len("prefix"):], want)
			}
		}
	}
	// Shapes without per-ExtensionService TLS data are templated; the
	// validation shapes are not (they would each be a shape of their own).
	for shape, tmpl := range enc.templates {
		if tmpl == nil {
			t.Errorf("shape %+v: no template, though its Cluster depends on the name alone", shape)
		}
	}
	if _, ok := shapeOf(clusterVariant(3*648, "extension/ns/a")); ok {
		t.Error("a Cluster with upstream validation has a shared shape")
	}
}

// TestClusterEncoderShapeChanges: an encoder remembers the last shape it
// rendered, so each Cluster here follows one whose shape differs from it
// in one group of fields (the strides of clusterVariant's bits, all
// keeping the xDS cluster name), and then goes back.
func TestClusterEncoderShapeChanges(t *testing.T) {
	enc := NewClusterEncoder()
	marshal := proto.MarshalOptions{Deterministic: true}
	for _, stride := range []uint32{3, 9, 27, 108, 324, 648} {
		for v := uint32(0); v+stride < 648*4; v++ {
			for _, w := range []uint32{v, v + stride, v} {
				ec := clusterVariant(w, "extension/ns/a")
				want, err := marshal.Marshal(BuildCluster(ec))
				if err != nil {
					t.Fatal(err)
				}
				if got := enc.Append(nil, ec); !bytes.Equal(got, want) {
					t.Fatalf("variant %d after %d: encoder and proto.Marshal differ\n got %x\nwant %x", w, v, got, want)
				}
			}
		}
	}
}

// TestClusterEncoderCacheBound: the cache starts afresh past its bound
// instead of growing with every shape ever seen.
func TestClusterEncoderCacheBound(t *testing.T) {
	enc := NewClusterEncoder()
	for i := range 3 * maxClusterTemplates {
		ec := clusterVariant(4, "extension/ns/a")
		ec.ConnectTimeout = time.Duration(i+1) * time.Millisecond
		enc.Append(nil, ec)
		if len(enc.templates) > maxClusterTemplates {
			t.Fatalf("%d templates cached, bound is %d", len(enc.templates), maxClusterTemplates)
		}
	}
}

func BenchmarkEncodeCluster(b *testing.B) {
	ec := clusterVariant(4, "extension/team-007/ext-00042") // h2c, round robin
	b.Run("template", func(b *testing.B) {
		enc := NewClusterEncoder()
		b.ReportAllocs()
		for b.Loop() {
			enc.Append(nil, ec)
		}
	})
	b.Run("reference", func(b *testing.B) {
		marshal := proto.MarshalOptions{Deterministic: true}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := marshal.Marshal(BuildCluster(ec)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
