package model

import (
	"sync"

	"github.com/tributary-dev/tributary/internal/source"
)

// namespaceDelegations are the TLSCertificateDelegations of one namespace,
// in name order, and what they grant, by Secret name. The grants are
// worked out once, when first asked for, so that each ExtensionService
// validating against a delegated Secret costs one lookup, not a walk of
// every delegation of the namespace: with many of both, the walk was
// quadratic. A change to the namespace's delegations makes a new value
// (see Index.PutTLSCertificateDelegation), so the grants never go stale;
// sync.Once lets the Builders of every goroutine share them.
type namespaceDelegations struct {
	list []*source.TLSCertificateDelegation

	once   sync.Once
	grants map[string]*delegationGrant
}

// delegationGrant is what the delegations of a namespace grant one Secret.
type delegationGrant struct {
	// everywhere: some entry lists "*" as its sole target namespace, which
	// Contour reads as every namespace.
	everywhere bool
	// namespaces are the target namespaces listed otherwise (a "*" among
	// others is only the literal name, which no namespace has).
	namespaces map[string]struct{}
}

// grant returns what the delegations grant the named Secret, or nil.
func (d *namespaceDelegations) grant(secret string) *delegationGrant {
	d.once.Do(func() {
		d.grants = make(map[string]*delegationGrant)
		for _, td := range d.list {
			for _, entry := range td.Delegations {
				g := d.grants[entry.SecretName]
				if g == nil {
					g = &delegationGrant{namespaces: make(map[string]struct{})}
					d.grants[entry.SecretName] = g
				}
				if len(entry.TargetNamespaces) == 1 && entry.TargetNamespaces[0] == "*" {
					g.everywhere = true
					continue
				}
				for _, ns := range entry.TargetNamespaces {
					g.namespaces[ns] = struct{}{}
				}
			}
		}
	})
	return d.grants[secret]
}

// permits reports whether g lets an object in namespace use the Secret.
func (g *delegationGrant) permits(namespace string) bool {
	if g == nil {
		return false
	}
	_, listed := g.namespaces[namespace]
	return g.everywhere || listed
}
