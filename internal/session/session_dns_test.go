package session_test

import (
	"testing"

	"github.com/tributary-dev/tributary/internal/session"
	"github.com/tributary-dev/tributary/internal/source"
)

// externalService is an ExternalName Service for host on port 9000, the
// port extensionService targets.
func externalService(namespace, name, host string) source.Service {
	svc := service(namespace, name)
	svc.Type, svc.ExternalName = "ExternalName", host
	return svc
}

// An ExtensionService that turns from EDS to STRICT_DNS and back: its
// ClusterLoadAssignment goes and comes back, its Cluster is replaced each
// time. The harness holds every step to a fresh Translate, State included.
func TestApplyExternalNameTargetsSwitch(t *testing.T) {
	h := loaded(t, source.Settings{ExternalNameTargets: true}, source.Objects{})

	// EDS → DNS: a's targets become an ExternalName Service.
	h.check(session.Batch{Upserts: source.Objects{
		Services:          []source.Service{externalService("auth", "ext", "authz.example.com")},
		ExtensionServices: []source.ExtensionService{extensionService("auth", "a", "ext")},
	}}, expected{clusters: []string{"auth/a"}, removedCLAs: []string{"auth/a"}, statuses: []string{"auth/a"}}, nn("auth", "a"))

	// The Service's name changes: only a target changed, but a STRICT_DNS
	// Cluster holds the name, so it is built anew (its status, the same
	// availability, does not change).
	h.check(session.Batch{Upserts: source.Objects{
		Services: []source.Service{externalService("auth", "ext", "authz-2.example.com")},
	}}, expected{clusters: []string{"auth/a"}}, nn("auth", "a"))

	// A change that leaves the Service as it was changes nothing.
	h.check(session.Batch{Upserts: source.Objects{
		Services: []source.Service{externalService("auth", "ext", "authz-2.example.com")},
	}}, expected{}, nn("auth", "a"))

	// DNS → EDS by the ExtensionService: back to s1.
	h.check(session.Batch{Upserts: source.Objects{
		ExtensionServices: []source.ExtensionService{extensionService("auth", "a", "s1")},
	}}, expected{clusters: []string{"auth/a"}, clas: []string{"auth/a"}, statuses: []string{"auth/a"}}, nn("auth", "a"))
}

// An ExtensionService whose target Service itself turns from ExternalName
// into one with endpoints and back: only a target changed each time, so
// the session offers the Cluster it holds for keeping; a STRICT_DNS
// Cluster must never be kept for an EDS one, nor the other way round.
func TestApplyExternalNameServiceChangesType(t *testing.T) {
	h := loaded(t, source.Settings{ExternalNameTargets: true}, source.Objects{})
	h.check(session.Batch{Upserts: source.Objects{
		Services:          []source.Service{externalService("auth", "ext", "authz.example.com")},
		ExtensionServices: []source.ExtensionService{extensionService("auth", "a", "ext")},
	}}, expected{clusters: []string{"auth/a"}, removedCLAs: []string{"auth/a"}, statuses: []string{"auth/a"}}, nn("auth", "a"))

	// ExternalName → ClusterIP with one endpoint: an EDS Cluster again.
	// The status stays: one ready endpoint of weight 1 either way.
	h.check(session.Batch{Upserts: source.Objects{
		Services:       []source.Service{service("auth", "ext")},
		EndpointSlices: []source.EndpointSlice{endpointSlice("auth", "ext-a", "ext", "10.0.0.9")},
	}}, expected{clusters: []string{"auth/a"}, clas: []string{"auth/a"}}, nn("auth", "a"))

	// And back to ExternalName: STRICT_DNS, the assignment withdrawn.
	h.check(session.Batch{Upserts: source.Objects{
		Services: []source.Service{externalService("auth", "ext", "authz.example.com")},
	}}, expected{clusters: []string{"auth/a"}, removedCLAs: []string{"auth/a"}}, nn("auth", "a"))
}

// Without the setting, an ExternalName target is Contour's error: the
// ExtensionService loses both its resources.
func TestApplyExternalNameTargetsOff(t *testing.T) {
	h := loaded(t, source.Settings{}, source.Objects{})
	h.check(session.Batch{Upserts: source.Objects{
		Services:          []source.Service{externalService("auth", "ext", "authz.example.com")},
		ExtensionServices: []source.ExtensionService{extensionService("auth", "a", "ext")},
	}}, expected{removedClusters: []string{"auth/a"}, removedCLAs: []string{"auth/a"}, statuses: []string{"auth/a"}}, nn("auth", "a"))
}
