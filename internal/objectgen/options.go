package objectgen

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/tributary-dev/tributary/internal/source"
)

// The option groups beyond Contour's CRD (source.ExtensionOptions) arrive
// three ways: an ExtensionService's spec.options, its "tributary.dev/"
// annotations, and the settings' extensionDefaults. The generator fills
// every group the same way, by walking the struct, so that a field added
// to a group is generated without a change here (a field of a new type
// panics until it has values): a group is present one time in three, each
// of its fields one time in two, with a value from the lists below (per
// field name where the meaning differs, else per type). With InvalidSpecs,
// out-of-range values join the valid ones, and annotations also get values
// that do not parse and keys translation does not know.

// values are the values of one field of the option groups: the valid ones
// and, with InvalidSpecs, all of them.
type values[T any] struct{ valid, all []T }

// split filters list by what the Options allow, and keeps its valid values
// apart.
func split[T any](g *Generator, list []option[T]) values[T] {
	v := values[T]{all: allowed(g, list)}
	for _, o := range list {
		if o.needs&invalidSpec == 0 {
			v.valid = append(v.valid, o.v)
		}
	}
	return v
}

// pick draws one of v's values: a valid one, or when invalid, one time in
// four any of them.
func (v values[T]) pick(g *Generator, invalid bool) T {
	if invalid && g.Chance(4) {
		return Pick(g, v.all...)
	}
	return Pick(g, v.valid...)
}

// optionValues are the values the generator draws for the option groups'
// fields.
type optionValues struct {
	durations values[string]
	// strings are the other strings, per "group.field" or field (json
	// names), the first found.
	strings map[string]values[string]
	counts  values[uint32]
	ports   values[uint32]
	floats  values[float64]
	ciphers values[[]string]
	// unparsable are annotation values, per field type, that no field of
	// that type takes.
	unparsable map[reflect.Kind][]string
	unknown    []string // annotation keys translation does not know
}

// newOptionValues filters the lists by what the Options allow.
func newOptionValues(g *Generator) *optionValues {
	var certs []option[string]
	for _, s := range g.o.Universe.Secrets {
		certs = append(certs, option[string]{s, 0}, option[string]{g.o.Universe.Namespaces[0] + "/" + s, 0})
	}
	certs = append(certs, option[string]{"missing", invalidSpec}, option[string]{"/client", invalidSpec}, option[string]{"", invalidSpec})
	long := strings.Repeat("n", 300)
	versions := []option[string]{{"1.2", 0}, {"1.3", 0}, {"1.1", invalidSpec}, {"1.4", invalidSpec}, {"", invalidSpec}}
	wholeSeconds := split(g, []option[string]{
		{"1s", 0}, {"10s", 0}, {"60s", 0}, {"2h", 0}, {"1500ms", invalidSpec}, {"0s", invalidSpec}, {"-5s", invalidSpec},
	})
	return &optionValues{
		durations: split(g, []option[string]{
			{"1s", 0}, {"5s", 0}, {"250ms", 0}, {"10s", 0}, {"30s", 0}, {"3m", 0},
			{"0s", invalidSpec}, {"-1s", invalidSpec}, {"bogus", invalidSpec}, {"infinity", invalidSpec},
			{"25h", invalidSpec}, {"1500ms", invalidSpec}, {"", invalidSpec},
		}),
		strings: map[string]values[string]{
			"serviceName": split(g, []option[string]{
				{"", 0}, {"grpc.health.v1.Health", 0}, {"auth.v1.Authorization", 0},
				{"bad\x00name", invalidSpec}, {long, invalidSpec},
			}),
			"authority": split(g, []option[string]{
				{"ext.example.com", 0}, {"", 0}, {"auth.other:9000", 0},
				{"has space", invalidSpec}, {long, invalidSpec},
			}),
			"sni": split(g, []option[string]{
				{"ext.example.com", 0}, {"sni.example.org", 0},
				{"", invalidSpec}, {"bad\nname", invalidSpec}, {long, invalidSpec}, {"10.0.0.1", invalidSpec},
			}),
			"tcpKeepalive.time":      wholeSeconds,
			"tcpKeepalive.interval":  wholeSeconds,
			"clientCertificate":      split(g, certs),
			"minimumProtocolVersion": split(g, versions),
			"maximumProtocolVersion": split(g, versions),
		},
		counts: split(g, []option[uint32]{
			{1, 0}, {3, 0}, {5, 0}, {10, 0}, {50, 0}, {100, 0},
			{0, invalidSpec}, {101, invalidSpec}, {65536, invalidSpec}, {4294967295, invalidSpec},
		}),
		ports: split(g, []option[uint32]{
			{9090, 0}, {9000, 0}, {1, 0}, {65535, 0},
			{0, invalidSpec}, {65536, invalidSpec}, {4294967295, invalidSpec},
		}),
		floats: split(g, []option[float64]{
			{1, 0}, {0.5, 0}, {2, 0}, {10, 0}, {100, 0},
			{0, invalidSpec}, {-1, invalidSpec}, {100.5, invalidSpec}, {1e300, invalidSpec},
		}),
		ciphers: split(g, []option[[]string]{
			{[]string{"ECDHE-ECDSA-AES128-GCM-SHA256"}, 0},
			{[]string{"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384"}, 0},
			{[]string{"[ECDHE-ECDSA-AES128-GCM-SHA256|ECDHE-ECDSA-CHACHA20-POLY1305]"}, 0},
			{[]string{"NOT-A-CIPHER"}, invalidSpec}, {[]string{strings.Repeat("C", 300)}, invalidSpec},
		}),
		unparsable: map[reflect.Kind][]string{
			reflect.Uint32:  {"abc", "-1", "1.5", "", "4294967296"},
			reflect.Float64: {"abc", "", "NaN", "Inf", "1,5"},
			reflect.Bool:    {"yes", "", "2"},
		},
		unknown: []string{
			source.AnnotationPrefix + "health-check-bogus", source.AnnotationPrefix + "unknown",
			source.AnnotationPrefix, source.AnnotationPrefix + "healthCheck-interval",
		},
	}
}

// ExtensionOptions draws option groups: each group one time in three,
// each of its fields one time in two. Values are valid, and their groups
// consistent (see fitGroups), unless invalid is set and InvalidSpecs
// allows others: then one value in four may be anything, and one set of
// groups in four is left as drawn.
func (g *Generator) ExtensionOptions(invalid bool) *source.ExtensionOptions {
	opts := &source.ExtensionOptions{}
	groups := reflect.ValueOf(opts).Elem()
	for i := range groups.NumField() {
		if !g.Chance(3) {
			continue
		}
		group := reflect.New(groups.Field(i).Type().Elem())
		fields := group.Elem()
		for f := range fields.NumField() {
			if g.Chance(2) {
				fields.Field(f).Set(g.optionValue(groups.Type().Field(i).Tag.Get("json"), fields.Type().Field(f), invalid))
			}
		}
		groups.Field(i).Set(group)
	}
	if !invalid || !g.Chance(4) {
		fitGroups(opts)
	}
	return opts
}

// fitGroups makes each group consistent within itself, as translation
// wants it: an outlier detector to tune, a maximum ejection time no
// shorter than the base one (every valid duration, and the default base,
// is at most 3m), TLS
// versions in order, the durations the HTTP/2 keepalive and slow start
// require.
func fitGroups(o *source.ExtensionOptions) {
	if od := o.OutlierDetection; od != nil {
		if od.FailurePercentageThreshold == nil {
			od.FailurePercentageMinimumHosts, od.FailurePercentageRequestVolume = nil, nil
		}
		if od.ConsecutiveGatewayFailure == nil && od.ConsecutiveLocalOriginFailure == nil && od.FailurePercentageThreshold == nil {
			od.ConsecutiveGatewayFailure = ptr[uint32](5)
		}
		if od.MaxEjectionTime != nil {
			od.MaxEjectionTime = ptr("3m")
		}
	}
	if t := o.TLS; t != nil && t.MinimumProtocolVersion != nil && t.MaximumProtocolVersion != nil {
		t.MinimumProtocolVersion, t.MaximumProtocolVersion = ptr("1.2"), ptr("1.3")
	}
	if k := o.HTTP2Keepalive; k != nil && k.Interval == nil {
		k.Interval = ptr("10s")
	}
	if s := o.SlowStart; s != nil && s.Window == nil {
		s.Window = ptr("30s")
	}
}

// fitExtension drops the groups an ExtensionService of spec cannot have:
// TLS unless it speaks h2, health checks and HTTP/2 keepalive over
// HTTP/1.1, slow start unless it balances by round robin or least request.
func fitExtension(o *source.ExtensionOptions, spec *source.ExtensionServiceSpec) {
	protocol := "h2"
	if spec.Protocol != nil {
		protocol = *spec.Protocol
	}
	if protocol != "h2" {
		o.TLS = nil
	}
	if protocol == "http/1.1" {
		o.HealthCheck, o.HTTP2Keepalive = nil, nil
	}
	if p := spec.LoadBalancerPolicy; p != nil && (p.Strategy == "Random" || p.Strategy == "ClientSideWeightedRoundRobin") {
		o.SlowStart = nil
	}
}

// extensionOptions draws option groups for an ExtensionService of spec:
// groups it cannot have are dropped but, with InvalidSpecs, one time in
// four.
func (g *Generator) extensionOptions(spec *source.ExtensionServiceSpec) *source.ExtensionOptions {
	opts := g.ExtensionOptions(g.o.InvalidSpecs)
	if !g.o.InvalidSpecs || !g.Chance(4) {
		fitExtension(opts, spec)
	}
	return opts
}

// optionValue draws a value for field, a *string, *uint32, *float64,
// *bool or []string of the option group named group: strings are
// durations unless optionValues lists the field, numbers counts unless it
// is a port.
func (g *Generator) optionValue(group string, field reflect.StructField, invalid bool) reflect.Value {
	name := field.Tag.Get("json")
	vals := g.optionVals
	var v any
	switch field.Type {
	case reflect.TypeFor[*string]():
		list, ok := vals.strings[group+"."+name]
		if !ok {
			list, ok = vals.strings[name]
		}
		if !ok {
			list = vals.durations
		}
		v = ptr(list.pick(g, invalid))
	case reflect.TypeFor[*uint32]():
		list := vals.counts
		if name == "port" {
			list = vals.ports
		}
		v = ptr(list.pick(g, invalid))
	case reflect.TypeFor[*float64]():
		v = ptr(vals.floats.pick(g, invalid))
	case reflect.TypeFor[*bool]():
		v = ptr(g.Chance(2))
	case reflect.TypeFor[[]string]():
		v = vals.ciphers.pick(g, invalid)
	default:
		panic(fmt.Sprintf("objectgen: option field %s of type %s has no values", name, field.Type))
	}
	return reflect.ValueOf(v)
}

// Annotations writes opts as "tributary.dev/" annotations: the keys of
// the option groups, derived from the API's field names as translation
// derives them, with values written as a user writes them; with
// InvalidSpecs, now and then a value that does not parse and a key that
// does not exist.
func (g *Generator) Annotations(opts *source.ExtensionOptions) map[string]string {
	a := map[string]string{}
	groups := reflect.ValueOf(opts).Elem()
	for i := range groups.NumField() {
		group := groups.Field(i)
		if group.IsNil() {
			continue
		}
		groupName := groups.Type().Field(i).Tag.Get("json")
		fields := group.Elem()
		for f := range fields.NumField() {
			field := fields.Field(f)
			if field.IsNil() {
				continue
			}
			key := source.AnnotationKey(groupName, fields.Type().Field(f).Tag.Get("json"))
			a[key] = annotationValue(field)
			if g.o.InvalidSpecs && g.Chance(8) {
				if bad := g.optionVals.unparsable[field.Type().Elem().Kind()]; len(bad) > 0 {
					a[key] = Pick(g, bad...)
				}
			}
		}
	}
	if g.o.InvalidSpecs && g.Chance(8) {
		a[Pick(g, g.optionVals.unknown...)] = "1s"
	}
	if len(a) == 0 {
		return nil
	}
	return a
}

// annotationValue writes an option's value as an annotation holds it.
func annotationValue(field reflect.Value) string {
	switch v := field.Interface().(type) {
	case *string:
		return *v
	case *uint32:
		return strconv.FormatUint(uint64(*v), 10)
	case *float64:
		return strconv.FormatFloat(*v, 'g', -1, 64)
	case *bool:
		return strconv.FormatBool(*v)
	case []string:
		return strings.Join(v, ", ")
	}
	panic(fmt.Sprintf("objectgen: no annotation format for %s", field.Type()))
}
