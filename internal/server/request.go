package server

import (
	"fmt"

	tributaryv1 "github.com/tributary-dev/tributary/gen/go/tributary/v1"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
)

// Reasons carried in BadRequest field violations, so clients can tell
// problems apart without parsing messages.
const (
	ReasonRequired          = "REQUIRED"
	ReasonInvalidName       = "INVALID_NAME"
	ReasonDuplicate         = "DUPLICATE"
	ReasonOutOfRange        = "OUT_OF_RANGE"
	ReasonInvalidDuration   = "INVALID_DURATION"
	ReasonInvalidFormat     = "INVALID_FORMAT"
	ReasonInvalidCharacters = "INVALID_CHARACTERS"
	// ReasonInvalidOption: a setting's extension default that translation
	// would refuse in an ExtensionService's status.
	ReasonInvalidOption = "INVALID_OPTION"
)

// maxReportedViolations bounds the field violations one error carries: a
// request with two million broken endpoints must not produce an error larger
// than the request. The status message still counts every problem.
const maxReportedViolations = 16

// decodeRequest checks req and converts it into the pipeline's input.
//
// It guarantees what package source promises about its input: every object
// has a kind, a namespace that is a DNS-1123 label and a name that is a
// DNS-1123 subdomain (so "namespace/name" is unambiguous and
// "extension/<namespace>/<name>" names exactly one ExtensionService), names
// are unique per kind, labels are what Kubernetes allows, every port number
// that is set lies in 1..65535, every string is within the length
// Kubernetes (or, where it sets none, request_limits.go) allows, and the
// settings are parsed. Anything else is left to translation, which ignores
// what no ExtensionService reads (an EndpointSlice of no Service) and
// reports the rest in the status of the ExtensionService that reads it. Any violation gives an InvalidArgument error whose message names
// the first problem and whose BadRequest details list the field paths.
//
// To stay cheap on requests with millions of endpoints, the result aliases
// req's strings, byte slices, maps and optional-field pointers instead of
// copying them, and each repeated kind shares one backing array: req must not
// change while the result is in use.
func decodeRequest(req *tributaryv1.TranslateRequest) (*source.Objects, source.Settings, error) {
	return decodeTranslate(req, nil)
}

// decodeTranslate is decodeRequest for a request the wire fast path read,
// offWire being what it kept of the EndpointSlices outside their messages
// (see sliceOffWire), or, with offWire nil, whose messages hold
// everything.
func decodeTranslate(req *tributaryv1.TranslateRequest, offWire []*sliceOffWire) (*source.Objects, source.Settings, error) {
	var p problems
	settings := decodeSettings(req.GetSettings(), "settings", &p)
	objs := decodeObjects(req.GetObjects(), offWire, "objects", &p)
	if err := p.err(); err != nil {
		return nil, source.Settings{}, err
	}
	return objs, settings, nil
}

// decodeStart checks a SyncStart's settings like a TranslateRequest's,
// reporting problems at "start.settings...". A bad setting fails the whole
// stream with InvalidArgument: without settings there is no session.
func decodeStart(start *tributaryv1.SyncStart) (source.Settings, error) {
	var p problems
	settings := decodeSettings(start.GetSettings(), "start.settings", &p)
	return settings, p.err()
}

// decodeBatch checks a SyncBatch and converts it into a session.Batch;
// problems go to p and the result is then of no use.
//
// Every upsert passes exactly the checks of a Translate request's objects,
// reported at "batch.upserts[i]...". Beyond those: every delete names a kind
// and a valid namespace and name, and no object appears twice in one batch
// (upserted twice, deleted twice, or both upserted and deleted), since the
// batch would then not say what the object becomes. The result gives every
// object arrays of its own (see ownArrays) and aliases pb's strings, maps
// and optional-field pointers: pb must not change afterwards.
//
// decodeBatch does not bound the batch's size: see decodeWithinLimits.
//
// offWire is what the wire fast path kept of the batch's EndpointSlices
// outside their messages (each slice's endpoints an array of its own), nil
// when the messages hold everything.
func decodeBatch(pb *tributaryv1.SyncBatch, offWire []*sliceOffWire, p *problems) *session.Batch {
	upserts, deletes := pb.GetUpserts(), pb.GetDeletes()
	d := newDecoder(upserts, "batch.upserts", ownArrays)
	d.offWire = offWire
	d.decode(upserts, p)
	b := &session.Batch{Upserts: d.objs}
	if len(deletes) == 0 {
		return b
	}
	b.Deletes = make([]session.Ref, 0, len(deletes))
	deleted := make([]map[source.NamespacedName]int, len(apiKinds))
	for i, del := range deletes {
		k, known := kindOf(del.GetKind())
		if !known {
			field := fmt.Sprintf("batch.deletes[%d].kind", i)
			if del.GetKind() == tributaryv1.ObjectKind_OBJECT_KIND_UNSPECIFIED {
				p.add(field, ReasonRequired, fmt.Sprintf("batch.deletes[%d]: kind is required (%s)", i, knownObjectKinds))
			} else {
				p.add(field, ReasonOutOfRange, fmt.Sprintf("batch.deletes[%d]: kind %d is not a known kind (%s)", i, del.GetKind(), knownObjectKinds))
			}
			continue
		}
		ref := objectRef{list: "batch.deletes", index: i, kind: k, namespace: del.GetNamespace(), name: del.GetName()}
		if !checkName(ref, p, "namespace", "name") {
			continue
		}
		key := source.NamespacedName{Namespace: ref.namespace, Name: ref.name}
		if j, both := d.seen[k.Kind].find(key); both {
			ref.report(p, "name", ReasonDuplicate, fmt.Sprintf("duplicates batch.upserts[%d]: a batch cannot both upsert and delete an object", j))
			continue
		}
		if deleted[k.Kind] == nil {
			deleted[k.Kind] = map[source.NamespacedName]int{}
		}
		if j, twice := deleted[k.Kind][key]; twice {
			ref.report(p, "name", ReasonDuplicate, fmt.Sprintf("duplicates batch.deletes[%d]: two deletes name the same %s", j, k.Kind))
			continue
		}
		deleted[k.Kind][key] = i
		b.Deletes = append(b.Deletes, session.Ref{Kind: k.Kind, Name: key})
	}
	return b
}
