package server

import (
	"fmt"
	"strings"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
)

// apiKind is how the API carries one kind of session object: the case of
// the KubernetesObject oneof that holds it (for field paths,
// "endpointSlice") and its ObjectKind in ObjectReferences. Its name, in
// messages, is the session kind's ("EndpointSlice").
type apiKind struct {
	source.Kind
	field string
	ref   tributaryv1.ObjectKind
}

// apiKinds gives every session kind its API side, by source.Kind.
// Decoding an object of a kind is the decoder's (see decoder.decode).
var apiKinds = []apiKind{
	source.KindExtensionService:         {source.KindExtensionService, "extensionService", tributaryv1.ObjectKind_OBJECT_KIND_EXTENSION_SERVICE},
	source.KindService:                  {source.KindService, "service", tributaryv1.ObjectKind_OBJECT_KIND_SERVICE},
	source.KindEndpointSlice:            {source.KindEndpointSlice, "endpointSlice", tributaryv1.ObjectKind_OBJECT_KIND_ENDPOINT_SLICE},
	source.KindSecret:                   {source.KindSecret, "secret", tributaryv1.ObjectKind_OBJECT_KIND_SECRET},
	source.KindTLSCertificateDelegation: {source.KindTLSCertificateDelegation, "tlsCertificateDelegation", tributaryv1.ObjectKind_OBJECT_KIND_TLS_CERTIFICATE_DELEGATION},
}

// kindOf returns the kind an ObjectReference names, if it names one.
func kindOf(ref tributaryv1.ObjectKind) (apiKind, bool) {
	for k := range source.Kinds() {
		if apiKinds[k].ref == ref {
			return apiKinds[k], true
		}
	}
	return apiKind{}, false
}

// knownObjectKinds lists the valid ObjectKinds, and knownObjectFields the
// cases of the KubernetesObject oneof, for messages.
var (
	knownObjectKinds  = "one of " + joinKinds(func(k apiKind) string { return k.ref.String() })
	knownObjectFields = "one of " + joinKinds(func(k apiKind) string { return k.field })
)

func joinKinds(name func(apiKind) string) string {
	var names []string
	for k := range source.Kinds() {
		names = append(names, name(apiKinds[k]))
	}
	return strings.Join(names, ", ")
}

// objectRef locates one object of the client's message in messages: the
// list holding it ("objects", "batch.upserts", "batch.deletes") and its
// index there. Its strings are built only when a problem is reported, so
// valid requests pay nothing.
type objectRef struct {
	list  string
	index int
	kind  apiKind
	// viaKind says the list holds KubernetesObjects, so paths go through the
	// oneof case ("objects[3].service.metadata.name"); ObjectReferences have
	// their fields directly ("batch.deletes[3].name").
	viaKind         bool
	namespace, name string
}

// report records a problem with field (a path below the object, such as
// "spec.ports[0].port"); text completes the sentence that starts with it.
func (r objectRef) report(p *problems, field, reason, text string) {
	p.count++
	if len(p.violations) >= maxReportedViolations {
		return
	}
	label := r.kind.String()
	if r.namespace != "" && r.name != "" {
		label += " " + source.Quote(r.namespace+"/"+r.name)
	}
	element := fmt.Sprintf("%s[%d]", r.list, r.index)
	path := element + "." + field
	if r.viaKind {
		path = element + "." + r.kind.field + "." + field
	}
	p.record(path, reason, fmt.Sprintf("%s (%s): %s %s", element, label, field, text))
}

// checkName checks the namespace and name of the object ref locates,
// reporting problems at nsField and nameField; it reports whether both are
// valid.
func checkName(ref objectRef, p *problems, nsField, nameField string) bool {
	ok := true
	switch ns := ref.namespace; {
	case ns == "":
		ref.report(p, nsField, ReasonRequired, "is required")
		ok = false
	case !model.IsDNS1123Label(ns):
		ref.report(p, nsField, ReasonInvalidName, source.Quote(ns)+" is not a valid namespace ("+dns1123LabelRule+")")
		ok = false
	}
	switch name := ref.name; {
	case name == "":
		ref.report(p, nameField, ReasonRequired, "is required")
		ok = false
	case !model.IsDNS1123Subdomain(name):
		ref.report(p, nameField, ReasonInvalidName, source.Quote(name)+" is not a valid name ("+dns1123SubdomainRule+")")
		ok = false
	}
	return ok
}
