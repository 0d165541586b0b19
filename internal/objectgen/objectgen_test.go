package objectgen_test

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
)

// drawn is what draw draws: settings, and objects from Objects and five
// batches.
type drawn struct {
	settings source.Settings
	objs     *source.Objects
}

func draw(seed uint64, o objectgen.Options) drawn {
	g := objectgen.New(objectgen.FromRand(rand.New(rand.NewPCG(seed, 1))), o)
	settings := g.Settings()
	objs := g.Objects()
	for range 5 {
		b := g.Batch()
		objs.ExtensionServices = append(objs.ExtensionServices, b.Upserts.ExtensionServices...)
		objs.EndpointSlices = append(objs.EndpointSlices, b.Upserts.EndpointSlices...)
		objs.Services = append(objs.Services, b.Upserts.Services...)
		objs.Secrets = append(objs.Secrets, b.Upserts.Secrets...)
		objs.TLSCertificateDelegations = append(objs.TLSCertificateDelegations, b.Upserts.TLSCertificateDelegations...)
	}
	return drawn{settings, objs}
}

// The same choices give the same objects, from random sources and fuzz
// bytes alike, and fuzz bytes run out.
func TestDeterministic(t *testing.T) {
	for seed := range uint64(20) {
		if diff := cmp.Diff(draw(seed, objectgen.Defaults()), draw(seed, objectgen.Defaults()), cmp.AllowUnexported(drawn{})); diff != "" {
			t.Fatalf("seed %d: two draws differ:\n%s", seed, diff)
		}
	}
	data := []byte("some fuzz input")
	a := objectgen.New(objectgen.FromBytes(data), objectgen.Defaults()).Objects()
	g := objectgen.New(objectgen.FromBytes(data), objectgen.Defaults())
	if diff := cmp.Diff(a, g.Objects()); diff != "" {
		t.Fatalf("two draws from the same bytes differ:\n%s", diff)
	}
	if !g.Exhausted() {
		t.Error("a whole object set did not use up 15 bytes")
	}
}

// With every knob off but the defaults' universe, generated objects hold
// none of what the knobs allow (no slice repeats an address); with every
// knob on, all of it shows up.
func TestKnobs(t *testing.T) {
	off := objectgen.Defaults()
	off.IPv6, off.InvalidAddresses, off.DuplicateAddresses, off.NonTCPPorts = false, false, false, false
	off.UnnamedPorts, off.InvalidSpecs, off.Secrets, off.Delegations = false, false, false, false
	off.ExtensionOptions, off.ExternalNames = false, false
	seen := func(o objectgen.Options) map[string]bool {
		found := map[string]bool{}
		for seed := range uint64(200) {
			d := draw(seed, o)
			objs := d.objs
			if d.settings.ExtensionDefaults != nil {
				found["extensionDefaults"] = true
			}
			if d.settings.ExternalNameTargets {
				found["enableExternalNameTargets"] = true
			}
			external := map[string]bool{}
			for _, svc := range objs.Services {
				if svc.ExternalName != "" {
					external[svc.Name] = true
				}
			}
			for _, es := range objs.ExtensionServices {
				if es.Spec.Options != nil {
					found["spec.options"] = true
				}
				for k := range es.Annotations {
					found["annotation"] = true
					if !slices.Contains(model.AnnotationKeys(), k) {
						found["unknown annotation"] = true
					}
				}
				if p := es.Spec.LoadBalancerPolicy; p != nil && p.Strategy == "ClientSideWeightedRoundRobin" {
					found["ClientSideWeightedRoundRobin"] = true
				}
				all := len(es.Spec.Services) > 0
				for _, t := range es.Spec.Services {
					all = all && external[t.Name]
				}
				if all {
					found["ExternalName targets only"] = true
				}
			}
			for _, s := range objs.EndpointSlices {
				found["family "+s.AddressType] = true
				addresses := map[string]bool{}
				for _, p := range s.Ports {
					if p.Protocol != nil && *p.Protocol != "TCP" {
						found["non-TCP port"] = true
					}
					if p.Name == nil || *p.Name == "" {
						found["unnamed port"] = true
					}
					if p.Port == nil || *p.Port < 1 || *p.Port > 65535 {
						found["invalid port"] = true
					}
				}
				for _, ep := range s.Endpoints.Unpack() {
					a := ep.Address
					addr, err := netip.ParseAddr(a)
					switch {
					case err != nil || addr.Zone() != "" || addr.Is4In6():
						found["invalid address"] = true
					case addr.Is6():
						found["IPv6 address"] = true
					}
					if addresses[a] {
						found["duplicate address"] = true
					}
					addresses[a] = true
				}
			}
			for _, svc := range objs.Services {
				if svc.Type != "ClusterIP" {
					found["ExternalName"] = true
				}
			}
			if len(objs.Secrets) > 0 {
				found["Secret"] = true
			}
			if len(objs.TLSCertificateDelegations) > 0 {
				found["delegation"] = true
			}
		}
		return found
	}
	knobbed := []string{
		"family IPv6", "family FQDN", "non-TCP port", "unnamed port", "invalid port",
		"invalid address", "IPv6 address", "duplicate address", "ExternalName", "Secret", "delegation",
		"extensionDefaults", "enableExternalNameTargets", "spec.options", "annotation", "unknown annotation",
		"ClientSideWeightedRoundRobin", "ExternalName targets only",
	}
	on, none := seen(objectgen.Defaults()), seen(off)
	for _, what := range knobbed {
		if !on[what] {
			t.Errorf("every knob on: no %s generated", what)
		}
		if none[what] {
			t.Errorf("every knob off: %s generated", what)
		}
	}
}
