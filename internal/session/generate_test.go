package session_test

import (
	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/tlsfiles/testcerts"
)

// The certificates the hand-written tests' Secrets hold.
var (
	genCA   = testcerts.SelfSignedPEM("session-ca")
	genLeaf = testcerts.SelfSignedPEM("envoy-client")
)

func strp(s string) *string { return &s }
func i32p(i int32) *int32   { return &i }

// generatorOptions are the shared generator's (internal/objectgen)
// defaults: its small universe with every knob on.
func generatorOptions() objectgen.Options { return objectgen.Defaults() }

// newGenerator returns the shared generator drawing from c.
func newGenerator(c objectgen.Choices) *objectgen.Generator {
	return objectgen.New(c, generatorOptions())
}

// generatedBatch draws a batch of the generator's as a session.Batch.
func generatedBatch(g *objectgen.Generator) session.Batch {
	b := g.Batch()
	return session.Batch{Upserts: b.Upserts, Deletes: refs(b.Deletes)}
}

// initialBatch draws a first batch holding most objects of the universe,
// so that later batches' references mostly resolve and much of the output
// is valid.
func initialBatch(g *objectgen.Generator) session.Batch {
	return session.Batch{Upserts: *g.Objects()}
}

func refs(deletes []objectgen.Deletion) []session.Ref {
	var out []session.Ref
	for _, d := range deletes {
		out = append(out, session.Ref{Kind: d.Kind, Name: d.Name})
	}
	return out
}
