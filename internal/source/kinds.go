package source

import (
	"iter"
	"strconv"
)

// Kind is the kind of an input object.
type Kind int

// The kinds of input objects, in the order of Objects' fields. A kind is
// added here (before KindEnd, with its name in kindNames and its field in
// Objects), in the session's kind table and the API's (package server),
// and in the translation that reads it.
const (
	KindExtensionService Kind = iota + 1
	KindService
	KindEndpointSlice
	KindSecret
	KindTLSCertificateDelegation
	// KindEnd is one past the last kind: a table indexed by Kind has
	// KindEnd entries.
	KindEnd
)

// kindNames are the kinds' Kubernetes names.
var kindNames = [KindEnd]string{
	KindExtensionService:         "ExtensionService",
	KindService:                  "Service",
	KindEndpointSlice:            "EndpointSlice",
	KindSecret:                   "Secret",
	KindTLSCertificateDelegation: "TLSCertificateDelegation",
}

// Kinds yields every kind, in the order of their constants.
func Kinds() iter.Seq[Kind] {
	return func(yield func(Kind) bool) {
		for k := KindExtensionService; k < KindEnd; k++ {
			if !yield(k) {
				return
			}
		}
	}
}

// String is the kind's Kubernetes name ("EndpointSlice"), as messages and
// metrics labels give it.
func (k Kind) String() string {
	if k < KindExtensionService || k >= KindEnd {
		return "Kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}
