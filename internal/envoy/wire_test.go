package envoy_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	gocmp "github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/tributary-dev/tributary/internal/envoy"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
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

	prefix := []byte("prefix")
	appended := envoy.AppendClusterLoadAssignment(slices.Clip(prefix), ec)
	if !bytes.Equal(appended[:len(prefix)], prefix) || !bytes.Equal(appended[len(prefix):], want) {
		t.Fatalf("AppendClusterLoadAssignment after a prefix: got %x, want prefix then %x", appended, want)
	}
	// Room for what is appended and for every locality's estimate.
	roomy := make([]byte, 3, 3+3*len(want)+64)
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

// estimateMissCluster is a Cluster whose first locality holds n endpoints
// from first on port, and whose second, a small one after it, must keep
// its bytes when the first moves.
func estimateMissCluster(first string, n int, port uint32) *model.ExtensionCluster {
	return &model.ExtensionCluster{Name: "extension/ns/estimate", Localities: []model.Locality{
		wireTestLocality("ns/a/80", 1, netip.MustParseAddr(first), n, port),
		wireTestLocality("ns/b/80", 2, netip.MustParseAddr("10.1.0.1"), 3, 80),
	}}
}

// wireTestLocality is a locality of n IPv4 endpoints starting at base.
func wireTestLocality(subZone string, weight uint32, base netip.Addr, n int, port uint32) model.Locality {
	loc := model.Locality{SubZone: subZone, Weight: weight}
	for range n {
		loc.Endpoints = append(loc.Endpoints, model.Endpoint{Address: source.MakeAddress(base.String()), Port: port})
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
				{Address: source.MakeAddress("10.0.0.1"), Port: 8080}, {Address: source.MakeAddress("::ffff:10.0.0.1"), Port: 8080},
				{Address: source.MakeAddress("2001:db8:ffff:ffff:ffff:ffff:255.255.255.255"), Port: 65535},
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
		// A locality's length is written into bytes set aside from an
		// estimate that counts every endpoint as the longest dotted quad;
		// these four are off by a whole varint byte, so the locality moves.
		{"short quads estimated over 127 bytes take a one-byte length", estimateMissCluster("1.0.0.1", 5, 80)},
		{"long IPv6 addresses estimated under 128 bytes take a two-byte length", estimateMissCluster("2001:db8:ffff:ffff:ffff:ffff:ffff:1", 3, 8080)},
		{"quads estimated over 16 KiB take a two-byte length", estimateMissCluster("10.0.0.1", 600, 8080)},
		{"IPv6 addresses estimated under 16 KiB take a three-byte length", estimateMissCluster("2001:db8:ffff:ffff:ffff:ffff:ffff:1", 500, 8080)},
		{"health check port of one byte on every endpoint", &model.ExtensionCluster{
			Name: "extension/ns/hc", HealthCheck: wireTestHealthCheck(1),
			Localities: []model.Locality{
				wireTestLocality("ns/a/80", 80, netip.MustParseAddr("10.0.0.1"), 3, 8080),
				wireTestLocality("ns/b/80", 0, netip.MustParseAddr("2001:db8::1"), 2, 80),
			},
		}},
		{"health check port of three bytes next to the longest IP literal", &model.ExtensionCluster{
			Name: "extension/ns/hc", HealthCheck: wireTestHealthCheck(65535),
			Localities: []model.Locality{{SubZone: "ns/a/80", Weight: 1, Endpoints: []model.Endpoint{
				{Address: source.MakeAddress("10.0.0.1"), Port: 1}, {Address: source.MakeAddress("2001:db8:ffff:ffff:ffff:ffff:255.255.255.255"), Port: 65535},
			}}},
		}},
		{"health check on the endpoints' own port writes no health_check_config", &model.ExtensionCluster{
			Name: "extension/ns/hc", HealthCheck: wireTestHealthCheck(0),
			Localities: []model.Locality{wireTestLocality("ns/a/80", 1, netip.MustParseAddr("10.0.0.1"), 2, 8080)},
		}},
		// No IP literal is long enough for this, so the model never holds
		// one; the encoder's general branch must still be exact.
		{"health_check_config pushes an endpoint's lengths past one byte", &model.ExtensionCluster{
			Name: "extension/ns/hc", HealthCheck: wireTestHealthCheck(8081),
			Localities: []model.Locality{{SubZone: "ns/a/80", Weight: 1, Endpoints: []model.Endpoint{
				{Address: source.MakeAddress(strings.Repeat("a", 115)), Port: 80},
				{Address: source.MakeAddress(strings.Repeat("b", 112)), Port: 80},
			}}},
		}},
		{"a locality over 16 KiB with a health check port", &model.ExtensionCluster{
			Name: "extension/ns/big", HealthCheck: wireTestHealthCheck(9901),
			Localities: []model.Locality{wireTestLocality("ns/a/80", 80, netip.MustParseAddr("10.0.0.1"), 1000, 8080)},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkWireEncoding(t, tc.ec) })
	}
}

// wireTestHealthCheck is a valid health check on port (0: the endpoint's own).
func wireTestHealthCheck(port uint32) *model.HealthCheck {
	return &model.HealthCheck{Interval: 5 * time.Second, Timeout: time.Second, UnhealthyThreshold: 3, HealthyThreshold: 1, Port: port}
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

// wireFuzzName is a name of n bytes drawn from a small alphabet, starting
// at the letter the next input byte picks: names cost one input byte
// whatever their length, so short inputs still reach long names.
func wireFuzzName(r *wireFuzzReader, n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-./"
	first := int(r.byte())
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[(first+i)%len(alphabet)]
	}
	return string(b)
}

// wireFuzzCluster builds an ExtensionCluster that keeps every model
// guarantee (distinct SubZones, sorted unique endpoints, ports in range,
// some weight when a locality exists) from fuzz input, reaching the
// encoding's edges: no locality, many localities, weights unset or of every
// varint length, IPv6, names and messages long enough for multi-byte
// lengths. The input layout (missing bytes read as 0):
//
//	name length-1 (mod 200), name letter,
//	locality count (mod 6; 5 means 5 + next byte mod 60), then per locality:
//	  sub_zone length (mod 150), sub_zone letter,
//	  weight kind (mod 4: 0 and 3 unset, 1: 1 + next byte, 2: 4 bytes LE >> next byte mod 32, at least 1),
//	  endpoint count-1 (mod 20), big (if mod 8 == 0: count = 1 + 2 bytes LE mod 3000),
//	  per endpoint: family (mod 3 == 0: IPv6, 16 bytes; else IPv4, 4 bytes), port-1 (2 bytes LE),
//	health check port (2 bytes LE; 0: no health check).
//
// Endpoints repeating an earlier address:port are dropped, and so are
// localities left without endpoints.
func wireFuzzCluster(data []byte) *model.ExtensionCluster {
	r := &wireFuzzReader{data: data}
	nameLen := 1 + int(r.byte())%200
	ec := &model.ExtensionCluster{Name: "extension/" + wireFuzzName(r, nameLen), XDSClusterName: "contour"}
	localities := int(r.byte()) % 6
	if localities == 5 {
		localities = 5 + int(r.byte())%60
	}
	used := map[netip.AddrPort]bool{}
	for i := range localities {
		subZoneLen := int(r.byte()) % 150
		loc := model.Locality{SubZone: fmt.Sprintf("%d/%s", i, wireFuzzName(r, subZoneLen))}
		switch r.byte() % 4 {
		case 1:
			loc.Weight = 1 + uint32(r.byte())
		case 2:
			loc.Weight = max(1, binary.LittleEndian.Uint32(r.bytes(4))>>(r.byte()%32))
		}
		n := 1 + int(r.byte())%20
		if r.byte()%8 == 0 {
			n = 1 + int(binary.LittleEndian.Uint16(r.bytes(2)))%3000
		}
		n = min(n, 1500-len(used)) // keep one run cheap enough to fuzz
		var sockets []netip.AddrPort
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
				sockets = append(sockets, ap)
			}
		}
		if len(sockets) == 0 {
			continue
		}
		slices.SortFunc(sockets, netip.AddrPort.Compare)
		for _, ap := range sockets {
			loc.Endpoints = append(loc.Endpoints, model.Endpoint{Address: source.MakeAddress(ap.Addr().String()), Port: uint32(ap.Port())})
		}
		ec.Localities = append(ec.Localities, loc)
	}
	if len(ec.Localities) > 0 && !slices.ContainsFunc(ec.Localities, func(l model.Locality) bool { return l.Weight > 0 }) {
		ec.Localities[0].Weight = 1
	}
	if port := binary.LittleEndian.Uint16(r.bytes(2)); port != 0 {
		ec.HealthCheck = wireTestHealthCheck(uint32(port))
	}
	return ec
}

// wireSeedEndpoint is the input for one endpoint in wireFuzzCluster's layout.
func wireSeedEndpoint(addr netip.Addr, port uint16) []byte {
	family := []byte{1}
	if addr.Is6() {
		family = []byte{0}
	}
	return binary.LittleEndian.AppendUint16(append(family, addr.AsSlice()...), port-1)
}

// wireSeedLocality is the input for one locality: a sub_zone of subZoneLen
// bytes, weight kind and bytes as the layout has them, then endpoints.
func wireSeedLocality(subZoneLen byte, weight []byte, endpoints ...[]byte) []byte {
	seed := append([]byte{subZoneLen, 7}, weight...)
	if len(endpoints) <= 20 {
		seed = append(seed, byte(len(endpoints)-1), 1)
	} else {
		seed = binary.LittleEndian.AppendUint16(append(seed, 0, 0), uint16(len(endpoints)-1))
	}
	for _, e := range endpoints {
		seed = append(seed, e...)
	}
	return seed
}

// wireFuzzSeeds are FuzzAppendClusterLoadAssignment's seed corpus, which
// plain `go test` runs; TestWireFuzzSeeds checks they reach the edges.
func wireFuzzSeeds() [][]byte {
	v4 := func(i int) []byte {
		return wireSeedEndpoint(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), uint16(8000+i%100))
	}
	var many, big, unset []byte
	weights := [][]byte{{0}, {1, 9}, {2, 0x10, 0x27, 0, 0, 3}}
	for i := range 40 {
		many = append(many, wireSeedLocality(byte(i), weights[i%3], v4(i))...)
	}
	for i := range 30 {
		unset = append(unset, wireSeedLocality(3, []byte{0}, v4(1000+i))...)
	}
	var bigEndpoints [][]byte
	for i := range 800 { // over 16 KiB of lb_endpoints
		bigEndpoints = append(bigEndpoints, v4(i))
	}
	big = wireSeedLocality(20, []byte{1, 79}, bigEndpoints...)

	return [][]byte{
		{}, // the shortest name and no locality
		append([]byte{12, 3, 1}, wireSeedLocality(7, []byte{1, 79}, v4(1))...),
		append([]byte{199, 5, 2},
			append(wireSeedLocality(149, []byte{2, 0xff, 0xff, 0xff, 0xff, 0},
				wireSeedEndpoint(netip.MustParseAddr("2001:db8::1"), 65535),
				wireSeedEndpoint(netip.MustParseAddr("::ffff:10.0.0.1"), 128),
				wireSeedEndpoint(netip.MustParseAddr("10.0.0.1"), 1)),
				wireSeedLocality(140, []byte{0}, wireSeedEndpoint(netip.MustParseAddr("fd00::2"), 16384))...)...),
		append([]byte{30, 1, 5, 35}, many...),
		append([]byte{30, 1, 5, 25}, unset...),
		append([]byte{40, 2, 1}, big...),
		append(append([]byte{40, 2, 1}, big...), 0x39, 0x30), // health check port 12345
		append(append([]byte{12, 3, 1}, wireSeedLocality(7, []byte{1, 79}, v4(1))...), 7, 0),
		bytes.Repeat([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 250, 251}, 60),
	}
}

// TestWireFuzzSeeds proves the seed corpus reaches what the fuzz target is
// meant to cover, so that plain `go test` exercises every edge.
func TestWireFuzzSeeds(t *testing.T) {
	reached := map[string]bool{}
	for _, seed := range wireFuzzSeeds() {
		ec := wireFuzzCluster(seed)
		reached["no locality"] = reached["no locality"] || len(ec.Localities) == 0
		reached["more than 30 localities"] = reached["more than 30 localities"] || len(ec.Localities) > 30
		reached["name over 127 bytes"] = reached["name over 127 bytes"] || len(ec.Name) > 127
		for _, loc := range ec.Localities {
			reached["unset weight"] = reached["unset weight"] || loc.Weight == 0
			reached["largest weight"] = reached["largest weight"] || loc.Weight == math.MaxUint32
			reached["sub_zone over 127 bytes"] = reached["sub_zone over 127 bytes"] || len(loc.SubZone) > 127
			reached["locality over 16 KiB"] = reached["locality over 16 KiB"] ||
				len(envoy.AppendClusterLoadAssignment(nil, &model.ExtensionCluster{Name: "x", Localities: []model.Locality{loc}})) > 1<<14+4
			for _, ep := range loc.Endpoints {
				reached["IPv6"] = reached["IPv6"] || strings.Contains(ep.Address.String(), ":")
				reached["three-byte port"] = reached["three-byte port"] || ep.Port >= 1<<14
				reached["one-byte port"] = reached["one-byte port"] || ep.Port < 1<<7
			}
		}
		if len(ec.Localities) > 0 && !slices.ContainsFunc(ec.Localities, func(l model.Locality) bool { return l.Weight == 0 }) {
			reached["every locality weighted"] = true
		}
		if ec.HealthCheck != nil {
			reached["health check port"] = true
			reached["one-byte health check port"] = reached["one-byte health check port"] || ec.HealthCheck.Port < 1<<7
			reached["health check port over 16 KiB"] = reached["health check port over 16 KiB"] ||
				len(envoy.AppendClusterLoadAssignment(nil, ec)) > 1<<14+4
		}
	}
	for _, edge := range []string{
		"no locality", "more than 30 localities", "name over 127 bytes", "unset weight", "largest weight",
		"sub_zone over 127 bytes", "locality over 16 KiB", "IPv6", "three-byte port", "one-byte port", "every locality weighted",
		"health check port", "one-byte health check port", "health check port over 16 KiB",
	} {
		if !reached[edge] {
			t.Errorf("no seed reaches %q", edge)
		}
	}
}

// FuzzAppendClusterLoadAssignment proves the fast encoder writes exactly
// proto.Marshal's bytes for any valid model, and that what it writes decodes
// into a CLA that passes ValidateAll and the contract's extra checks.
func FuzzAppendClusterLoadAssignment(f *testing.F) {
	for _, seed := range wireFuzzSeeds() {
		f.Add(seed)
	}
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
		// As translation encodes: into a buffer kept from one CLA to the
		// next, the bytes copied out at their size.
		b.Run(fmt.Sprintf("M=%d/fast", m), func(b *testing.B) {
			b.ReportAllocs()
			var scratch []byte
			for b.Loop() {
				scratch = envoy.AppendClusterLoadAssignment(scratch[:0], ec)
				_ = bytes.Clone(scratch)
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
