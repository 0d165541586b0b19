// Package manifest reads Kubernetes manifests (multi-document YAML, or JSON)
// into the typed objects translation takes, the way `kubectl apply
// --validate=strict` would: a misspelled or misplaced field is an error, not
// a silently dropped setting that surfaces later as a puzzling translation.
//
// Errors and positions read "path: document N" (N counts the non-empty
// documents of a file from 1), followed by ": items[I]" inside a v1 List.
// Objects of kinds translation does not read are not errors: they are
// returned as Skipped so the caller can say so, since manifests are often
// whole applications (Deployments and all).
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	contour_v1 "github.com/projectcontour/contour/apis/projectcontour/v1"
	contour_v1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	core_v1 "k8s.io/api/core/v1"
	discovery_v1 "k8s.io/api/discovery/v1"
	meta_v1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Stdin is the path that names standard input.
const Stdin = "-"

// stdinName is how standard input is named in positions and errors.
const stdinName = "<stdin>"

// Position is where an object was found.
type Position struct {
	// Path is the file as named by the caller or found in a directory;
	// "<stdin>" for standard input.
	Path string
	// Document counts the non-empty documents of the file from 1.
	Document int
	// Item is the index in a v1 List's items, or -1 outside a List.
	Item int
}

// String gives "path: document N", or "path: document N: items[I]".
func (p Position) String() string {
	s := fmt.Sprintf("%s: document %d", p.Path, p.Document)
	if p.Item >= 0 {
		s += fmt.Sprintf(": items[%d]", p.Item)
	}
	return s
}

// Object is one decoded object of a kind translation reads: one of
// *contour_v1alpha1.ExtensionService, *core_v1.Service,
// *discovery_v1.EndpointSlice, *core_v1.Secret or
// *contour_v1.TLSCertificateDelegation.
type Object struct {
	Position
	Object runtime.Object
}

// Skipped is a well-formed object of a kind translation does not read.
type Skipped struct {
	Position
	APIVersion string
	Kind       string
	// Namespace and Name are as written; either may be empty.
	Namespace, Name string
}

// Manifests is everything read, in input order.
type Manifests struct {
	Objects []Object
	Skipped []Skipped
}

// newObject returns an empty object of a kind translation reads, or nil.
func newObject(apiVersion, kind string) runtime.Object {
	switch apiVersion + " " + kind {
	case "projectcontour.io/v1alpha1 ExtensionService":
		return &contour_v1alpha1.ExtensionService{}
	case "v1 Service":
		return &core_v1.Service{}
	case "discovery.k8s.io/v1 EndpointSlice":
		return &discovery_v1.EndpointSlice{}
	case "v1 Secret":
		return &core_v1.Secret{}
	case "projectcontour.io/v1 TLSCertificateDelegation":
		return &contour_v1.TLSCertificateDelegation{}
	}
	return nil
}

// Options says how Read treats directories.
type Options struct {
	// Recursive reads the subdirectories of a directory too, at any depth,
	// as `kubectl apply --recursive` does. Without it only the files
	// directly in the directory are read, as kubectl does by default.
	Recursive bool
}

// Read reads every path in order into one Manifests. A path is Stdin, read
// from stdin; a file, read whatever its name; or a directory, read as
// `kubectl apply -f` reads one: the files in it whose names end in .json,
// .yaml or .yml (case-sensitively), in lexical order, and the files of its
// subdirectories only when opts.Recursive. Other files in a directory are
// ignored; a file with one of those names that does not hold Kubernetes
// objects is an error.
//
// Two objects of the same kind, namespace and name are an error naming both
// positions: kubectl would apply both, the later one winning, but a
// translation holds one of each, so the input is ambiguous.
func Read(paths []string, stdin io.Reader, opts Options) (*Manifests, error) {
	m := &Manifests{}
	for _, p := range paths {
		if p == Stdin {
			if err := m.decode(stdinName, stdin); err != nil {
				return nil, err
			}
			continue
		}
		files, err := expand(p, opts.Recursive)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if err := m.readFile(f); err != nil {
				return nil, err
			}
		}
	}
	if err := m.checkDuplicates(); err != nil {
		return nil, err
	}
	return m, nil
}

// Decode reads one stream of manifests; name is used in positions and errors.
// Duplicates are errors, as in Read.
func Decode(name string, r io.Reader) (*Manifests, error) {
	m := &Manifests{}
	if err := m.decode(name, r); err != nil {
		return nil, err
	}
	if err := m.checkDuplicates(); err != nil {
		return nil, err
	}
	return m, nil
}

// expand lists the manifest files a path names.
func expand(path string, recursive bool) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var files []string
	skippedDirs := false
	// WalkDir visits entries in lexical order, which makes the result (and
	// so the order of objects and any duplicate error) reproducible.
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != path && !recursive:
			skippedDirs = true
			return filepath.SkipDir
		case !d.IsDir() && isManifestFile(p):
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		if skippedDirs {
			return nil, fmt.Errorf("%s: no .json, .yaml or .yml files directly in directory (subdirectories are read only when recursive)", path)
		}
		return nil, fmt.Errorf("%s: no .json, .yaml or .yml files in directory", path)
	}
	return files, nil
}

// isManifestFile reports whether a file found in a directory is read. The
// match is case-sensitive, as kubectl's is: "x.YAML" is not read.
func isManifestFile(p string) bool {
	switch filepath.Ext(p) {
	case ".json", ".yaml", ".yml":
		return true
	}
	return false
}

func (m *Manifests) readFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	// Closing a file only read cannot lose data.
	defer func() { _ = f.Close() }()
	return m.decode(path, f)
}

func (m *Manifests) decode(name string, r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	docs := splitDocuments(data)
	n := 0
	for _, doc := range docs {
		if doc.empty() {
			continue
		}
		n++
		pos := Position{Path: name, Document: n, Item: -1}
		if doc.err != nil {
			return fmt.Errorf("%s: %w", pos, doc.err)
		}
		if err := m.decodeObject(pos, doc.json, true); err != nil {
			return fmt.Errorf("%s: %w", pos, err)
		}
	}
	return nil
}

// errNotObject is returned for a document that is a scalar or an array.
var errNotObject = errors.New("not a Kubernetes object: expected a mapping with apiVersion and kind")

// decodeObject decodes one JSON object at pos; a v1 List is expanded when
// listAllowed. Errors are returned without the position; list items carry
// their own.
func (m *Manifests) decodeObject(pos Position, data []byte, listAllowed bool) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return errNotObject
	}
	var tm typeMeta
	if err := unmarshalLoose(data, &tm); err != nil {
		return err
	}
	switch {
	case tm.APIVersion == "" && tm.Kind == "":
		return errors.New(`not a Kubernetes object: missing "apiVersion" and "kind"`)
	case tm.APIVersion == "":
		return errors.New(`missing "apiVersion"`)
	case tm.Kind == "":
		return errors.New(`missing "kind"`)
	}
	if tm.APIVersion == "v1" && tm.Kind == "List" {
		if !listAllowed {
			return errors.New("a List inside a List is not supported")
		}
		var list list
		if err := unmarshalStrict(data, &list); err != nil {
			return fmt.Errorf("v1 List: %w", err)
		}
		for i, item := range list.Items {
			itemPos := pos
			itemPos.Item = i
			if err := m.decodeObject(itemPos, item, false); err != nil {
				return fmt.Errorf("items[%d]: %w", i, err)
			}
		}
		return nil
	}
	obj := newObject(tm.APIVersion, tm.Kind)
	if obj == nil {
		ns, name := objectName(data)
		m.Skipped = append(m.Skipped, Skipped{Position: pos, APIVersion: tm.APIVersion, Kind: tm.Kind, Namespace: ns, Name: name})
		return nil
	}
	if err := unmarshalStrict(data, obj); err != nil {
		return fmt.Errorf("%s%s: %w", tm.Kind, describeName(data), err)
	}
	m.Objects = append(m.Objects, Object{Position: pos, Object: obj})
	return nil
}

// typeMeta is the part of every object that says what it is.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// list is a v1 List, the shape `kubectl get -o yaml` prints for several
// objects.
type list struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   map[string]any    `json:"metadata,omitempty"`
	Items      []json.RawMessage `json:"items"`
}

// checkDuplicates returns an error for every object that has the kind,
// namespace and name of an earlier one, each naming both positions.
func (m *Manifests) checkDuplicates() error {
	type key struct{ kind, namespace, name string }
	first := make(map[key]Position, len(m.Objects))
	var errs []error
	for _, o := range m.Objects {
		// Every kind newObject returns has ObjectMeta.
		meta := o.Object.(meta_v1.Object)
		k := key{o.Object.GetObjectKind().GroupVersionKind().Kind, meta.GetNamespace(), meta.GetName()}
		if at, dup := first[k]; dup {
			errs = append(errs, fmt.Errorf("%s: %s%s is already defined at %s", o.Position, k.kind, quoteName(k.namespace, k.name), at))
			continue
		}
		first[k] = o.Position
	}
	return errors.Join(errs...)
}

// describeName gives ` "namespace/name"` (or ` "name"`) for error messages,
// read loosely so that it works on objects that fail strict decoding; ""
// when there is no name.
func describeName(data []byte) string {
	return quoteName(objectName(data))
}

// quoteName gives ` "namespace/name"`, ` "name"` without a namespace, or ""
// without a name.
func quoteName(ns, name string) string {
	switch {
	case name == "":
		return ""
	case ns == "":
		return fmt.Sprintf(" %q", name)
	}
	return fmt.Sprintf(" %q", ns+"/"+name)
}

// objectName reads metadata.namespace and metadata.name loosely; both are
// empty when unreadable.
func objectName(data []byte) (namespace, name string) {
	var obj struct {
		Metadata struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"metadata"`
	}
	if unmarshalLoose(data, &obj) != nil {
		return "", ""
	}
	return obj.Metadata.Namespace, obj.Metadata.Name
}
