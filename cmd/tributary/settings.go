package main

import (
	"fmt"
	"os"
	"reflect"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tributary-dev/tributary/client/contour"
	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/manifest"
	"github.com/tributary-dev/tributary/internal/source"
)

// settingsFile is a translator settings file (translate --settings): the
// settings as Contour's configuration spells them, and ours beside them.
// Every field is decoded strictly, so a misspelled option, at any depth,
// is an error naming its path ("extensionDefaults.healthCheck.intervl").
type settingsFile struct {
	contour.Config
	// ExtensionDefaults are read through source.ExtensionOptions, whose
	// JSON names are the API's: the same names as an ExtensionService's
	// spec.options.
	ExtensionDefaults *source.ExtensionOptions `json:"extensionDefaults,omitempty"`
}

func readSettings(path string) (*settingsFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s settingsFile
	if err := manifest.UnmarshalStrict(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}

// requestSettings converts a settings file into the API's Settings; nil
// gives nil, every default.
func requestSettings(s *settingsFile) *tributaryv1.Settings {
	if s == nil {
		return nil
	}
	c := s.Config
	if s.ExtensionDefaults != nil {
		c.ExtensionDefaults = &tributaryv1.ExtensionOptions{}
		copyByJSONName(reflect.ValueOf(s.ExtensionDefaults).Elem(), c.ExtensionDefaults.ProtoReflect())
	}
	return contour.Settings(&c)
}

// copyByJSONName copies the set fields of src, a struct of package source
// whose json tags are the API's JSON names, into the message of that name.
// Going by name, not by hand, means a field added to both can never be
// forgotten here: a name the message lacks panics, in the tests.
// A present group stays present even when it sets no field, as the
// service tells an empty group from an absent one.
func copyByJSONName(src reflect.Value, dst protoreflect.Message) {
	fields := dst.Descriptor().Fields()
	for i := range src.NumField() {
		name := src.Type().Field(i).Tag.Get("json")
		fd := fields.ByJSONName(name)
		if fd == nil {
			panic(fmt.Sprintf("%s has no field %q", dst.Descriptor().FullName(), name))
		}
		v := src.Field(i)
		if v.IsNil() {
			continue
		}
		switch {
		case fd.Message() != nil:
			copyByJSONName(v.Elem(), dst.Mutable(fd).Message())
		case fd.IsList():
			list := dst.Mutable(fd).List()
			for j := range v.Len() {
				list.Append(protoreflect.ValueOf(v.Index(j).Interface()))
			}
		default:
			dst.Set(fd, protoreflect.ValueOf(v.Elem().Interface()))
		}
	}
}
