package envoy

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
)

// Field numbers of the Cluster fields derived from its name: everything
// else in a Cluster depends on the ExtensionService's shape (protocol,
// timeouts, settings...), which thousands of ExtensionServices share.
const (
	clusterNameField        protowire.Number = 1  // Cluster.name
	clusterEDSConfigField   protowire.Number = 3  // Cluster.eds_cluster_config
	edsServiceNameField     protowire.Number = 2  // EdsClusterConfig.service_name
	clusterAltStatNameField protowire.Number = 28 // Cluster.alt_stat_name
)

// maxClusterTemplates bounds an encoder's cache; past it the cache starts
// afresh (a long-lived encoder may see many shapes over time).
const maxClusterTemplates = 256

// ClusterEncoder appends the wire encoding of BuildCluster(ec), byte for
// byte what a deterministic proto.Marshal gives, without building and
// marshalling a proto per Cluster: for each shape of Cluster (everything
// but the name) it keeps the encoded fields once and splices the name in.
// A Cluster whose TLS carries per-ExtensionService data (validation) is
// marshalled as a proto. An encoder is not safe for concurrent use.
type ClusterEncoder struct {
	marshal   proto.MarshalOptions
	templates map[clusterShape]*clusterTemplate
	// lastShape and last are the shape of the last Cluster Append was
	// given, when it had one, and what templates holds for it (nil for a
	// shape that is not templated); hasLast says they are set.
	// ExtensionServices of one shape come in runs, nearly all of them one
	// run, and comparing two shapes costs a fraction of hashing one (at
	// 10000 ExtensionServices, the lookups were 2% of a translation).
	hasLast   bool
	lastShape clusterShape
	last      *clusterTemplate
}

// NewClusterEncoder returns an encoder with an empty cache.
func NewClusterEncoder() *ClusterEncoder {
	return &ClusterEncoder{marshal: proto.MarshalOptions{Deterministic: true}, templates: map[clusterShape]*clusterTemplate{}}
}

// clusterShape is every input of BuildCluster except the name, for
// Clusters whose TLS (if any) is the same for every ExtensionService.
type clusterShape struct {
	xdsClusterName  string
	protocol        model.Protocol
	loadBalancer    model.LoadBalancer
	connectTimeout  time.Duration
	hasIdle         bool
	idle            time.Duration
	hasBreakers     bool
	breakers        source.CircuitBreakers
	hasTLS          bool
	sdsName         string
	hasParams       bool
	minTLS, maxTLS  model.TLSVersion
	cipherSuites    string // joined with "\x00"
	cipherSuiteList int    // how many, so that ["a\x00b"] and ["a","b"] differ
}

// clusterTemplate is a shape's encoding as the reference marshaller lays
// it out, cut into pieces: static bytes, and the places where name-derived
// fields go. Pieces follow the reference's own field order (protobuf-go
// puts oneof fields last, so the order is not simply by field number).
type clusterTemplate struct {
	pieces []clusterPiece
	// eds holds the pieces of eds_cluster_config's contents, which embed
	// the name as service_name.
	eds []clusterPiece
}

type pieceKind int

const (
	pieceStatic      pieceKind = iota // bytes copied as they are
	pieceName                         // Cluster.name
	pieceAltStatName                  // Cluster.alt_stat_name
	pieceEDS                          // Cluster.eds_cluster_config, from eds
	pieceServiceName                  // EdsClusterConfig.service_name
)

type clusterPiece struct {
	kind   pieceKind
	static []byte
}

// shapeOf returns ec's shape, or false when ec's Cluster holds data of its
// own beyond the name.
func shapeOf(ec *model.ExtensionCluster) (clusterShape, bool) {
	if hasOptions(ec) {
		return clusterShape{}, false
	}
	s := clusterShape{
		xdsClusterName: ec.XDSClusterName,
		protocol:       ec.Protocol,
		loadBalancer:   ec.LoadBalancer,
		connectTimeout: ec.ConnectTimeout,
	}
	if ec.IdleConnectionTimeout != nil {
		s.hasIdle, s.idle = true, *ec.IdleConnectionTimeout
	}
	if ec.CircuitBreakers != nil {
		s.hasBreakers, s.breakers = true, *ec.CircuitBreakers
	}
	if tls := ec.TLS; tls != nil {
		if tls.SNI != "" || tls.CACertificate != nil || len(tls.SubjectNames) > 0 {
			return clusterShape{}, false
		}
		s.hasTLS, s.sdsName = true, tls.ClientCertificateSDSName
		if p := tls.Params; p != nil {
			s.hasParams, s.minTLS, s.maxTLS = true, p.Minimum, p.Maximum
			s.cipherSuites, s.cipherSuiteList = strings.Join(p.CipherSuites, "\x00"), len(p.CipherSuites)
		}
	}
	return s, true
}

// hasOptions reports whether ec uses anything beyond Contour's CRD: such
// Clusters are rare, and marshalled as protos rather than given shapes.
func hasOptions(ec *model.ExtensionCluster) bool {
	return ec.DNS != nil || ec.HealthCheck != nil || ec.OutlierDetection != nil ||
		ec.HTTP2Keepalive != nil || ec.TCPKeepalive != nil || ec.ConnectionLimits != nil ||
		ec.SlowStart != nil || ec.ClientSideWeightedRoundRobin != nil
}

// Append appends the encoding of BuildCluster(ec) to dst.
func (e *ClusterEncoder) Append(dst []byte, ec *model.ExtensionCluster) []byte {
	shape, ok := shapeOf(ec)
	var t *clusterTemplate
	if ok {
		t = e.template(&shape, ec)
	}
	if t == nil {
		b, err := e.marshal.MarshalAppend(dst, BuildCluster(ec))
		if err != nil {
			// Unreachable: a Cluster built from a model always marshals.
			panic(fmt.Sprintf("marshal Cluster %s: %v", ec.Name, err))
		}
		return b
	}
	return t.render(dst, ec.Name)
}

// template returns the template of shape, ec's, making it on first use;
// nil when the shape is not templated.
func (e *ClusterEncoder) template(shape *clusterShape, ec *model.ExtensionCluster) *clusterTemplate {
	if e.hasLast && *shape == e.lastShape {
		return e.last
	}
	t, ok := e.templates[*shape]
	if !ok {
		t = e.newTemplate(ec)
		if len(e.templates) >= maxClusterTemplates {
			clear(e.templates)
		}
		e.templates[*shape] = t
	}
	e.hasLast, e.lastShape, e.last = true, *shape, t
	return t
}

// render appends the encoding of the Cluster named name.
func (t *clusterTemplate) render(dst []byte, name string) []byte {
	dst = slices.Grow(dst, t.size(t.pieces, name))
	return t.append(dst, t.pieces, name)
}

func (t *clusterTemplate) size(pieces []clusterPiece, name string) int {
	n := 0
	for _, p := range pieces {
		switch p.kind {
		case pieceStatic:
			n += len(p.static)
		case pieceName, pieceAltStatName, pieceServiceName:
			n += protowire.SizeTag(p.number()) + protowire.SizeBytes(len(name))
		case pieceEDS:
			n += protowire.SizeTag(clusterEDSConfigField) + protowire.SizeBytes(t.size(t.eds, name))
		}
	}
	return n
}

func (t *clusterTemplate) append(dst []byte, pieces []clusterPiece, name string) []byte {
	for _, p := range pieces {
		switch p.kind {
		case pieceStatic:
			dst = append(dst, p.static...)
		case pieceName, pieceServiceName:
			dst = protowire.AppendTag(dst, p.number(), protowire.BytesType)
			dst = protowire.AppendString(dst, name)
		case pieceAltStatName:
			dst = protowire.AppendTag(dst, clusterAltStatNameField, protowire.BytesType)
			dst = protowire.AppendVarint(dst, uint64(len(name)))
			for i := 0; i < len(name); i++ {
				c := name[i]
				if c == '/' {
					c = '_'
				}
				dst = append(dst, c)
			}
		case pieceEDS:
			dst = protowire.AppendTag(dst, clusterEDSConfigField, protowire.BytesType)
			dst = protowire.AppendVarint(dst, uint64(t.size(t.eds, name)))
			dst = t.append(dst, t.eds, name)
		}
	}
	return dst
}

func (p clusterPiece) number() protowire.Number {
	switch p.kind {
	case pieceName:
		return clusterNameField
	case pieceAltStatName:
		return clusterAltStatNameField
	case pieceServiceName:
		return edsServiceNameField
	}
	return clusterEDSConfigField
}

// newTemplate cuts the reference encoding of ec's shape into a template.
// It keeps the template only if rendering it under a second name gives
// exactly what marshalling that Cluster gives, so a Cluster field that
// depends on the name in a way the template does not know makes the shape
// fall back to plain marshalling rather than produce wrong bytes. It
// returns nil then.
func (e *ClusterEncoder) newTemplate(ec *model.ExtensionCluster) *clusterTemplate {
	encode := func(name string) []byte {
		probe := *ec
		probe.Name = name
		return MustMarshal(BuildCluster(&probe))
	}
	const probeName, checkName = "extension/template-a/a", "extension/template-b/bb"
	t := &clusterTemplate{}
	var ok bool
	if t.pieces, ok = cutPieces(encode(probeName), probeName, map[protowire.Number]pieceKind{
		clusterNameField: pieceName, clusterAltStatNameField: pieceAltStatName, clusterEDSConfigField: pieceEDS,
	}, &t.eds); !ok {
		return nil
	}
	if !bytes.Equal(t.render(nil, checkName), encode(checkName)) {
		return nil
	}
	return t
}

// cutPieces splits the top-level fields of b, in their order, into static
// pieces and the name-derived fields named in special, checking that each
// of those holds exactly what the template will put there for name. The
// contents of eds_cluster_config are cut the same way into *eds.
func cutPieces(b []byte, name string, special map[protowire.Number]pieceKind, eds *[]clusterPiece) ([]clusterPiece, bool) {
	var pieces []clusterPiece
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeField(b)
		if n < 0 {
			return nil, false
		}
		field := b[:n]
		b = b[n:]
		kind, isSpecial := special[num]
		if !isSpecial {
			if k := len(pieces) - 1; k >= 0 && pieces[k].kind == pieceStatic {
				pieces[k].static = append(pieces[k].static, field...)
			} else {
				pieces = append(pieces, clusterPiece{kind: pieceStatic, static: slices.Clone(field)})
			}
			continue
		}
		_, _, tagLen := protowire.ConsumeTag(field)
		value, m := protowire.ConsumeBytes(field[tagLen:])
		if typ != protowire.BytesType || m < 0 {
			return nil, false
		}
		switch kind {
		case pieceName, pieceServiceName:
			if string(value) != name {
				return nil, false
			}
		case pieceAltStatName:
			if string(value) != strings.ReplaceAll(name, "/", "_") {
				return nil, false
			}
		case pieceEDS:
			inner, ok := cutPieces(value, name, map[protowire.Number]pieceKind{edsServiceNameField: pieceServiceName}, nil)
			if !ok || eds == nil {
				return nil, false
			}
			*eds = inner
		}
		pieces = append(pieces, clusterPiece{kind: kind})
	}
	return pieces, true
}
