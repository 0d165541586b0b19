package envoy_test

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	gocmp "github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/tributary-dev/tributary/envoy"
	"github.com/tributary-dev/tributary/model"
)

// marshalReference is the encoding AppendClusterLoadAssignment must match.
func marshalReference(t testing.TB, ec *model.ExtensionCluster) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(envoy.BuildClusterLoadAssignment(ec))
	if err != nil {
		t.Fatalf("marshal reference: %v", err)
	}
	return b
}

// checkWireEncoding holds AppendClusterLoadAssignment to the reference bytes,
// with and without bytes already in dst, then decodes the result and runs
// every check the contract asks of an emitted CLA.
func checkWireEncoding(t *testing.T, ec *model.ExtensionCluster) {
	t.Helper()
	want := marshalReference(t, ec)

	got := envoy.AppendClusterLoadAssignment(nil, ec)
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendClusterLoadAssignment differs from proto.Marshal\n got %x\nwant %x", got, want)
	}
	if cap(got) != len(got) {
		t.Errorf("output capacity %d for %d bytes: the size computation is off", cap(got), len(got))
	}

	prefix := []byte("prefix")
	appended := envoy.AppendClusterLoadAssignment(slices.Clip(prefix), ec)
	if !bytes.Equal(appended[:len(prefix)], prefix) || !bytes.Equal(appended[len(prefix):], want) {
		t.Fatalf("AppendClusterLoadAssignment after a prefix: got %x, want prefix then %x", appended, want)
	}
	roomy := make([]byte, 3, 3+len(want))
	if out := envoy.AppendClusterLoadAssignment(roomy, ec); &out[0] != &roomy[0] || !bytes.Equal(out[3:], want) {
		t.Fatalf("AppendClusterLoadAssignment did not append in place into a large enough dst")
	}

	decoded := new(endpointv3.ClusterLoadAssignment)
	if err := proto.Unmarshal(got, decoded); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if reference := envoy.BuildClusterLoadAssignment(ec); !proto.Equal(reference, decoded) {
		t.Fatalf("decoded CLA differs from the reference (-reference +decoded):\n%s",
			gocmp.Diff(reference, decoded, protocmp.Transform()))
	}
	if err := decoded.ValidateAll(); err != nil {
		t.Fatalf("ValidateAll: %v", err)
	}
	if err := envoy.CheckClusterLoadAssignment(decoded); err != nil {
		t.Fatalf("CheckClusterLoadAssignment: %v", err)
	}
}

// wireTestLocality is a locality of n IPv4 endpoints starting at base.
func wireTestLocality(subZone string, weight uint32, base netip.Addr, n int, port uint32) model.Locality {
	loc := model.Locality{SubZone: subZone, Weight: weight}
	for range n {
		loc.Endpoints = append(loc.Endpoints, model.Endpoint{Address: base.String(), Port: port})
		base = base.Next()
	}
	return loc
}

func TestAppendClusterLoadAssignment(t *testing.T) {
	long := strings.Repeat("x", 200)
	tests := []struct {
		name string
		ec   *model.ExtensionCluster
	}{
		{"no locality", &model.ExtensionCluster{Name: "extension/ns/empty"}},
		{"one endpoint, weight 1", &model.ExtensionCluster{Name: "extension/ns/one", Localities: []model.Locality{
			wireTestLocality("ns/a/80", 1, netip.MustParseAddr("10.0.0.1"), 1, 1),
		}}},
		{"80/20 with IPv6 and the largest port", &model.ExtensionCluster{Name: "extension/ns/two", Localities: []model.Locality{
			{SubZone: "ns/a/80", Weight: 80, Endpoints: []model.Endpoint{
				{Address: "10.0.0.1", Port: 8080}, {Address: "::ffff:10.0.0.1", Port: 8080},
				{Address: "2001:db8:ffff:ffff:ffff:ffff:255.255.255.255", Port: 65535},
			}},
			wireTestLocality("ns/b/80", 20, netip.MustParseAddr("10.1.0.1"), 3, 9090),
		}}},
		{"weight unset next to the largest weight", &model.ExtensionCluster{Name: "extension/ns/w", Localities: []model.Locality{
			wireTestLocality("ns/a/80", 0, netip.MustParseAddr("10.0.0.1"), 2, 80),
			wireTestLocality("ns/b/80", math.MaxUint32, netip.MustParseAddr("10.1.0.1"), 2, 80),
		}}},
		{"names longer than 127 bytes take two-byte lengths", &model.ExtensionCluster{Name: "extension/ns/" + long, Localities: []model.Locality{
			wireTestLocality("ns/"+long+"/80", 3, netip.MustParseAddr("10.0.0.1"), 1, 80),
		}}},
		{"a locality over 16 KiB takes a three-byte length", &model.ExtensionCluster{Name: "extension/ns/big", Localities: []model.Locality{
			wireTestLocality("ns/a/80", 80, netip.MustParseAddr("10.0.0.1"), 2000, 8080),
			wireTestLocality("ns/b/80", 20, netip.MustParseAddr("2001:db8::1"), 50, 8080),
		}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkWireEncoding(t, tc.ec) })
	}
}

// wireFuzzReader hands out fuzz input, then zeros.
type wireFuzzReader struct{ data []byte }

func (r *wireFuzzReader) byte() byte {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return b
}

func (r *wireFuzzReader) bytes(n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = r.byte()
	}
	return out
}

// wireFuzzName is a name of n bytes (n ≥ 1) from a small alphabet.
func wireFuzzName(r *wireFuzzReader, n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-./"
	var b strings.Builder
	for range n {
		b.WriteByte(alphabet[int(r.byte())%len(alphabet)])
	}
	return b.String()
}

// wireFuzzCluster builds an ExtensionCluster that keeps every model
// guarantee (distinct SubZones, sorted unique endpoints, ports in range,
// some weight when a locality exists) from fuzz input, reaching the
// encoding's edges: no locality, many localities, weights unset or of every
// varint length, IPv6, and names long enough for multi-byte lengths.
func wireFuzzCluster(data []byte) *model.ExtensionCluster {
	r := &wireFuzzReader{data: data}
	ec := &model.ExtensionCluster{Name: "extension/" + wireFuzzName(r, 1+int(r.byte())%200), XDSClusterName: "contour"}
	localities := int(r.byte()) % 6
	if localities == 5 {
		localities = 5 + int(r.byte())%60
	}
	used := map[netip.AddrPort]bool{}
	for i := range localities {
		loc := model.Locality{SubZone: fmt.Sprintf("%d/%s", i, wireFuzzName(r, int(r.byte())%150))}
		switch r.byte() % 4 {
		case 0: // unset
		case 1:
			loc.Weight = 1 + uint32(r.byte())
		case 2:
			loc.Weight = max(1, binary.LittleEndian.Uint32(r.bytes(4))>>(r.byte()%32))
		}
		n := 1 + int(r.byte())%20
		if r.byte()%8 == 0 {
			n = 1 + int(binary.LittleEndian.Uint16(r.bytes(2)))%3000
		}
		n = min(n, 4000-len(used)) // keep one run cheap enough to fuzz
		for range n {
			var addr netip.Addr
			if r.byte()%3 == 0 {
				addr = netip.AddrFrom16([16]byte(r.bytes(16)))
			} else {
				addr = netip.AddrFrom4([4]byte(r.bytes(4)))
			}
			port := uint16(1 + int(binary.LittleEndian.Uint16(r.bytes(2)))%65535)
			if ap := netip.AddrPortFrom(addr, port); !used[ap] {
				used[ap] = true
				loc.Endpoints = append(loc.Endpoints, model.Endpoint{Address: addr.String(), Port: uint32(port)})
			}
		}
		if len(loc.Endpoints) == 0 {
			continue
		}
		slices.SortFunc(loc.Endpoints, func(a, b model.Endpoint) int {
			return cmp.Or(netip.MustParseAddr(a.Address).Compare(netip.MustParseAddr(b.Address)), cmp.Compare(a.Port, b.Port))
		})
		ec.Localities = append(ec.Localities, loc)
	}
	if len(ec.Localities) > 0 && !slices.ContainsFunc(ec.Localities, func(l model.Locality) bool { return l.Weight > 0 }) {
		ec.Localities[0].Weight = 1
	}
	return ec
}

// FuzzAppendClusterLoadAssignment proves the fast encoder writes exactly
// proto.Marshal's bytes for any valid model, and that what it writes decodes
// into a CLA that passes ValidateAll and the contract's extra checks.
func FuzzAppendClusterLoadAssignment(f *testing.F) {
	f.Add([]byte{})                                                         // shortest name, no locality
	f.Add([]byte{10, 'a', 'b', 1, 3, 1, 7, 4, 1, 2, 3, 4, 0x50, 0})         // one IPv4 endpoint
	f.Add([]byte{199, 0, 2, 149, 2, 0xff, 0xff, 0xff, 0xff, 0, 3, 0})       // long names, largest weight
	f.Add([]byte{5, 5, 40, 7, 3, 0, 9, 0, 0})                               // many localities, weights unset
	f.Add(bytes.Repeat([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 250, 251}, 60)) // IPv6 and mixed weights
	f.Add(append([]byte{50, 4}, bytes.Repeat([]byte{8, 0, 0xff, 0x0f}, 100)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkWireEncoding(t, wireFuzzCluster(data))
	})
}

// standardCLACluster is one ExtensionService of the standard workload: two
// localities weighted 80/20 of m IPv4 endpoints each.
func standardCLACluster(m int) *model.ExtensionCluster {
	return &model.ExtensionCluster{Name: "extension/team-0042/ext-0042", XDSClusterName: "contour", Localities: []model.Locality{
		wireTestLocality("team-0042/ext-0042-primary/9000", 80, netip.MustParseAddr("10.42.0.1"), m, 9000),
		wireTestLocality("team-0042/ext-0042-canary/9000", 20, netip.MustParseAddr("10.43.0.1"), m, 9000),
	}}
}

// BenchmarkEncodeCLA compares the fast path with building and marshalling
// the proto, for one ClusterLoadAssignment of the standard workload.
func BenchmarkEncodeCLA(b *testing.B) {
	for _, m := range []int{10, 100, 1000} {
		ec := standardCLACluster(m)
		b.Run(fmt.Sprintf("M=%d/fast", m), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				envoy.AppendClusterLoadAssignment(nil, ec)
			}
		})
		b.Run(fmt.Sprintf("M=%d/reference", m), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				marshalReference(b, ec)
			}
		})
	}
}
