package session_test

import (
	"testing"

	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
)

func TestApplyCASecretChanged(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Upserts: source.Objects{Secrets: []source.Secret{caSecret("auth", "ca", nil)}}},
		expected{removedClusters: []string{"auth/c"}, removedCLAs: []string{"auth/c"}, statuses: []string{"auth/c"}},
		nn("auth", "c"))
	h.check(session.Batch{Deletes: []session.Ref{{Kind: source.KindSecret, Name: nn("other", "ca")}}},
		expected{removedClusters: []string{"auth/d"}, removedCLAs: []string{"auth/d"}, statuses: []string{"auth/d"}},
		nn("auth", "d"))
	// A Secret nobody reads.
	h.check(session.Batch{Upserts: source.Objects{Secrets: []source.Secret{caSecret("auth", "unread", genCA)}}}, expected{})
}

// "/ca" and "auth/ca" name the same Secret as "ca" does for an
// ExtensionService in auth.
func TestApplyCASecretNamespaceDefaults(t *testing.T) {
	for _, ref := range []string{"/ca", "auth/ca"} {
		t.Run(ref, func(t *testing.T) {
			h := loaded(t, source.Settings{}, source.Objects{})
			h.check(session.Batch{Upserts: source.Objects{ExtensionServices: []source.ExtensionService{
				validatedExtensionService("auth", "c", "s1", ref),
			}}}, expected{}, nn("auth", "c"))
			h.check(session.Batch{Deletes: []session.Ref{{Kind: source.KindSecret, Name: nn("auth", "ca")}}},
				expected{removedClusters: []string{"auth/c"}, removedCLAs: []string{"auth/c"}, statuses: []string{"auth/c"}},
				nn("auth", "c"))
		})
	}
}

func TestApplyDelegationChanged(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Deletes: []session.Ref{{Kind: source.KindTLSCertificateDelegation, Name: nn("other", "delegate")}}},
		expected{removedClusters: []string{"auth/d"}, removedCLAs: []string{"auth/d"}, statuses: []string{"auth/d"}},
		nn("auth", "d"))
	h.check(session.Batch{Upserts: source.Objects{TLSCertificateDelegations: []source.TLSCertificateDelegation{{
		Meta:        source.Meta{Namespace: "other", Name: "another"},
		Delegations: []source.CertificateDelegation{{SecretName: "ca", TargetNamespaces: []string{"*"}}},
	}}}}, expected{clusters: []string{"auth/d"}, clas: []string{"auth/d"}, statuses: []string{"auth/d"}}, nn("auth", "d"))
	// Delegations in auth concern nobody: c's CA Secret is its own.
	h.check(session.Batch{Upserts: source.Objects{TLSCertificateDelegations: []source.TLSCertificateDelegation{{
		Meta: source.Meta{Namespace: "auth", Name: "delegate"},
	}}}}, expected{})
}

// Every ExtensionService checks the client certificate Secret.
func TestApplyClientCertificateChanged(t *testing.T) {
	client := source.Secret{Meta: source.Meta{Namespace: "auth", Name: "client"}, Type: "kubernetes.io/tls", TLSCrt: genLeaf}
	h := loaded(t, source.Settings{ClientCertificate: &source.NamespacedName{Namespace: "auth", Name: "client"}},
		source.Objects{Secrets: []source.Secret{client}})
	all := []string{"auth/a", "auth/b", "auth/c", "auth/d"}
	h.check(session.Batch{Deletes: []session.Ref{{Kind: source.KindSecret, Name: nn("auth", "client")}}},
		expected{removedClusters: all, removedCLAs: all, statuses: all}, allFour...)
	h.check(session.Batch{Upserts: source.Objects{Secrets: []source.Secret{client}}},
		expected{clusters: all, clas: all, statuses: all}, allFour...)
}
