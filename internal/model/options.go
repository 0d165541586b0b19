package model

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tributary-dev/tributary/internal/source"
)

// ReasonAnnotationNotValid: a "tributary.dev/" annotation is unknown or its
// value does not parse. ReasonOptionNotValid: an option parses but is out
// of range or does not fit the rest of the ExtensionService.
const (
	ReasonAnnotationNotValid = "AnnotationNotValid"
	ReasonOptionNotValid     = "OptionNotValid"
)

// origin says where an option group in force came from, which is where an
// error about it must point the user.
type origin int

const (
	originSpec        origin = iota + 1 // spec.options
	originAnnotations                   // "tributary.dev/" annotations
	originDefaults                      // Settings.ExtensionDefaults
)

// optionsInForce holds, per group, the group that applies to one
// ExtensionService and where it came from. A group present at a higher
// precedence replaces the lower ones whole, as circuitBreakerPolicy
// replaces globalCircuitBreakers: mixing fields of two sources would make
// an option's value depend on two objects at once.
type optionsInForce struct {
	source.ExtensionOptions
	origins map[string]origin // by the group's JSON name
}

// noOptions is the options of an ExtensionService that sets none, under
// settings without defaults. It is never written to.
var noOptions optionsInForce

// field names a field of a group in force the way its user wrote it: the
// annotation key, spec.options.<group>.<field>, or the setting's path.
func (o *optionsInForce) field(group, field string) string {
	switch o.origins[group] {
	case originAnnotations:
		return strconv.Quote(source.AnnotationKey(group, field))
	case originDefaults:
		return "setting extensionDefaults." + group + "." + field
	default:
		return "spec.options." + group + "." + field
	}
}

// optionGroups are the groups of source.ExtensionOptions, by JSON name, in
// field order.
var optionGroups = func() []reflect.StructField {
	t := reflect.TypeFor[source.ExtensionOptions]()
	groups := make([]reflect.StructField, t.NumField())
	for i := range groups {
		groups[i] = t.Field(i)
	}
	return groups
}()

// jsonName is a struct field's json tag.
func jsonName(f reflect.StructField) string { return f.Tag.Get("json") }

// annotationFields maps every annotation key translation knows to where its
// value goes: the group's index in ExtensionOptions and the field's index
// in the group.
var annotationFields = func() map[string][2]int {
	keys := map[string][2]int{}
	for g, group := range optionGroups {
		t := group.Type.Elem()
		for f := range t.NumField() {
			keys[source.AnnotationKey(jsonName(group), jsonName(t.Field(f)))] = [2]int{g, f}
		}
	}
	return keys
}()

// AnnotationKeys lists every annotation translation reads, sorted: the
// documentation and the tests hold the derived names to this list.
func AnnotationKeys() []string {
	keys := make([]string, 0, len(annotationFields))
	for k := range annotationFields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// parseAnnotations reads the ExtensionService's "tributary.dev/"
// annotations into option groups. An unknown key or a value that does not
// parse as its field's type is an error on cond; the rest still count.
// Keys are visited in sorted order, so the errors come in a stable order.
func parseAnnotations(annotations map[string]string, cond *Condition) source.ExtensionOptions {
	var opts source.ExtensionOptions
	if len(annotations) == 0 {
		return opts
	}
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		if strings.HasPrefix(k, source.AnnotationPrefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	groups := reflect.ValueOf(&opts).Elem()
	for _, key := range keys {
		at, ok := annotationFields[key]
		if !ok {
			cond.AddError(SubConditionSpec, ReasonAnnotationNotValid, fmt.Sprintf(
				"annotation %s is unknown: see docs/translation.md for the %s annotations", source.Quote(key), source.AnnotationPrefix))
			continue
		}
		group := groups.Field(at[0])
		if group.IsNil() {
			group.Set(reflect.New(group.Type().Elem()))
		}
		if err := setField(group.Elem().Field(at[1]), annotations[key]); err != nil {
			cond.AddError(SubConditionSpec, ReasonAnnotationNotValid, fmt.Sprintf(
				"annotation %s: %s %v", source.Quote(key), source.Quote(annotations[key]), err))
		}
	}
	return opts
}

// setField parses raw into field, a *string, *uint32, *float64, *bool or
// []string (comma-separated, spaces around names ignored).
func setField(field reflect.Value, raw string) error {
	switch p := field.Addr().Interface().(type) {
	case **string:
		*p = &raw
	case **uint32:
		v, err := strconv.ParseUint(strings.TrimSpace(raw), 10, 32)
		if err != nil {
			return fmt.Errorf("is not a whole number from 0 to %d", uint32(1<<32-1))
		}
		u := uint32(v)
		*p = &u
	case **float64:
		v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil {
			return fmt.Errorf("is not a number")
		}
		*p = &v
	case **bool:
		v, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf(`is not "true" or "false"`)
		}
		*p = &v
	case *[]string:
		var list []string
		for name := range strings.SplitSeq(raw, ",") {
			if name = strings.TrimSpace(name); name != "" {
				list = append(list, name)
			}
		}
		*p = list
	default:
		panic(fmt.Sprintf("option field of type %s has no annotation parser", field.Type()))
	}
	return nil
}

// resolveOptions picks, per group, the ExtensionService's spec.options
// group, else its annotations' group, else the settings' default group.
func (b *Builder) resolveOptions(es *source.ExtensionService, cond *Condition) *optionsInForce {
	if len(es.Annotations) == 0 && es.Spec.Options == nil && b.settings.ExtensionDefaults == nil {
		return &noOptions // the usual case, at no cost
	}
	in := &optionsInForce{origins: map[string]origin{}}
	annotated := parseAnnotations(es.Annotations, cond)
	var spec, defaults reflect.Value
	if es.Spec.Options != nil {
		spec = reflect.ValueOf(es.Spec.Options).Elem()
	}
	if b.settings.ExtensionDefaults != nil {
		defaults = reflect.ValueOf(b.settings.ExtensionDefaults).Elem()
	}
	fromAnnotations := reflect.ValueOf(&annotated).Elem()
	dst := reflect.ValueOf(&in.ExtensionOptions).Elem()
	for g, group := range optionGroups {
		for _, from := range []struct {
			v reflect.Value
			o origin
		}{{spec, originSpec}, {fromAnnotations, originAnnotations}, {defaults, originDefaults}} {
			if from.v.IsValid() && !from.v.Field(g).IsNil() {
				dst.Field(g).Set(from.v.Field(g))
				in.origins[jsonName(group)] = from.o
				break
			}
		}
	}
	return in
}

// CheckExtensionDefaults validates settings.ExtensionDefaults the way
// translation validates the groups an ExtensionService sets, and returns
// one message per problem, each naming the setting's field. A group that
// depends on an ExtensionService's protocol or strategy is checked as if
// it applied: a default must be valid wherever it lands. Whether a default
// client certificate's Secret exists is left to translation, which reports
// it per ExtensionService, as for the clientCertificate setting.
func CheckExtensionDefaults(settings source.Settings) []string {
	if settings.ExtensionDefaults == nil {
		return nil
	}
	b := &Builder{settings: settings, tlsParams: tlsParams(settings.UpstreamTLS)}
	var cond Condition
	opts := b.resolveOptions(&source.ExtensionService{}, &cond)
	checkClientCertificateName(opts, &cond)
	extensionSNI(opts, ProtocolH2, &cond)
	b.extensionTLSParams(opts, ProtocolH2, &cond)
	b.healthCheck(opts, ProtocolH2, &cond)
	b.outlierDetection(opts, &cond)
	b.http2Keepalive(opts, ProtocolH2, &cond)
	b.tcpKeepalive(opts, &cond)
	b.connectionLimits(opts, &cond)
	b.slowStart(opts, LoadBalancerRoundRobin, &cond)
	b.clientSideWeightedRoundRobin(opts, LoadBalancerClientSideWeightedRoundRobin, &cond)
	messages := make([]string, len(cond.Errors))
	for i, e := range cond.Errors {
		messages[i] = e.Message
	}
	return messages
}

// group names a group in force the way its user set it: the annotations
// of its prefix, spec.options.<group>, or the setting's path.
func (o *optionsInForce) group(group string) string {
	switch o.origins[group] {
	case originAnnotations:
		return "the " + source.Quote(source.AnnotationKey(group, "")+"*") + " annotations"
	case originDefaults:
		return "setting extensionDefaults." + group
	default:
		return "spec.options." + group
	}
}

// fromDefaults reports whether the group in force came from the settings'
// defaults, which apply only where they fit and are never an
// ExtensionService's error.
func (o *optionsInForce) fromDefaults(group string) bool {
	return o.origins[group] == originDefaults
}

// durationBounds are the values an option's duration may take: at least
// min (zero allowed only when min is 0; a positive min also refuses zero
// as "must be positive") and at most max, with minWhy and maxWhy saying
// why when the reason is not plain (minWhy is needed for a min above 1ns).
type durationBounds struct {
	min, max       time.Duration
	minWhy, maxWhy string
}

// maxOptionDuration bounds every option's duration unless the option says
// otherwise: a day is far beyond any useful interval, timeout or period,
// and a bound turns a typo such as "10000h" into an error rather than an
// endpoint left in service, or out of it, for a year.
const maxOptionDuration = 24 * time.Hour

// positiveDuration is the usual bounds: more than zero, at most a day.
var positiveDuration = durationBounds{min: time.Nanosecond, max: maxOptionDuration}

// duration parses the field of a group in force, a Go duration
// (spaces around it ignored, as for every annotation value), within b.
// A bad value is an OptionNotValid error on cond, and ok is false.
func (o *optionsInForce) duration(group, field, raw string, b durationBounds, cond *Condition) (d time.Duration, ok bool) {
	d, err := time.ParseDuration(strings.TrimSpace(raw))
	var problem string
	switch {
	case err != nil:
		problem = `is not a duration such as "5s" or "500ms"`
	case d < 0 && b.min == 0:
		problem = "must not be negative"
	case d <= 0 && b.min > 0:
		problem = "must be positive"
	case d < b.min:
		problem = "must be at least " + formatDuration(b.min) + ": " + b.minWhy
	case d > b.max && b.maxWhy != "":
		problem = "must be at most " + formatDuration(b.max) + " (" + b.maxWhy + ")"
	case d > b.max:
		problem = "must be at most " + formatDuration(b.max)
	default:
		return d, true
	}
	cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf("%s %s %s", o.field(group, field), source.Quote(raw), problem))
	return 0, false
}

// formatDuration writes a bound the way a user would: "24h", "100ms",
// "9h6m7s", without Go's trailing zero units ("24h0m0s").
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
