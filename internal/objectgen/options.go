package objectgen

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

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

// pick draws one of v's values, only valid ones unless invalid.
func (v values[T]) pick(g *Generator, invalid bool) T {
	if invalid {
		return Pick(g, v.all...)
	}
	return Pick(g, v.valid...)
}

// optionValues are the values the generator draws for the option groups'
// fields.
type optionValues struct {
	durations values[string]
	strings   map[string]values[string] // other strings, per field's json name
	counts    values[uint32]
	ports     values[uint32]
	floats    values[float64]
	ciphers   values[[]string]
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
				{"ext.example.com", 0}, {"sni.example.org", 0}, {"", 0},
				{"bad\nname", invalidSpec}, {long, invalidSpec},
			}),
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
// each of its fields one time in two. Values are valid unless invalid is
// set and InvalidSpecs allows others.
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
				fields.Field(f).Set(g.optionValue(fields.Type().Field(f), invalid))
			}
		}
		groups.Field(i).Set(group)
	}
	return opts
}

// optionValue draws a value for field, a *string, *uint32, *float64,
// *bool or []string of an option group: strings are durations unless
// optionValues lists the field, numbers counts unless it is a port.
func (g *Generator) optionValue(field reflect.StructField, invalid bool) reflect.Value {
	name := field.Tag.Get("json")
	vals := g.optionVals
	var v any
	switch field.Type {
	case reflect.TypeFor[*string]():
		list, ok := vals.strings[name]
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

// Annotations draws "tributary.dev/" annotations: the keys of the option
// groups, derived from the API's field names as translation derives them,
// with values written as a user writes them; with InvalidSpecs, now and
// then a value that does not parse and a key that does not exist.
func (g *Generator) Annotations() map[string]string {
	a := map[string]string{}
	opts := g.ExtensionOptions(g.o.InvalidSpecs)
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
			key := annotationKey(groupName, fields.Type().Field(f).Tag.Get("json"))
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

// kebab turns a json name into the words of an annotation key
// ("http2Keepalive" → "http2-keepalive").
func kebab(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('-')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// AnnotationKeys lists the annotation of every option field, sorted, as
// Annotations derives them; its tests hold them to translation's.
func AnnotationKeys() []string {
	var keys []string
	groups := reflect.TypeFor[source.ExtensionOptions]()
	for i := range groups.NumField() {
		group := groups.Field(i)
		fields := group.Type.Elem()
		for f := range fields.NumField() {
			keys = append(keys, annotationKey(group.Tag.Get("json"), fields.Field(f).Tag.Get("json")))
		}
	}
	slices.Sort(keys)
	return keys
}

// annotationKey is the annotation of a field of a group, by json names.
func annotationKey(group, field string) string {
	return source.AnnotationPrefix + kebab(group) + "-" + kebab(field)
}
