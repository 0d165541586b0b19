package model

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/tributary-dev/tributary/internal/source"
)

// Reasons of the sub-conditions of ExternalName targets (see the setting
// enableExternalNameTargets; without it, such a target is Contour's
// UnsupportedServiceType error).
const (
	// ReasonExternalNameNotValid: an ExternalName target's spec.externalName
	// is not a name Envoy may resolve (an error).
	ReasonExternalNameNotValid = "ExternalNameNotValid"
	// ReasonDuplicateExternalName: two ExternalName targets name the same
	// host and port (an error).
	ReasonDuplicateExternalName = "DuplicateExternalName"
	// ReasonMixedServiceTypes: spec.services names both ExternalName
	// Services and Services with endpoints (an error): one Cluster is
	// either STRICT_DNS or EDS, never both.
	ReasonMixedServiceTypes = "MixedServiceTypes"
)

// maxDNSNameBytes is the longest DNS name, without a trailing dot.
const maxDNSNameBytes = 253

// maxDNSLabelBytes is the longest label of a DNS name: its length byte
// on the wire cannot say more, so a longer label can never resolve.
const maxDNSLabelBytes = 63

// isExternalName reports whether svc has no endpoints but a DNS name.
// Contour looks only at spec.externalName; the type is checked as well so
// that an ExternalName Service missing its externalName is caught too.
func isExternalName(svc *source.Service) bool {
	return svc.Type == serviceTypeExternalName || svc.ExternalName != ""
}

// checkExternalName says what is wrong with an ExternalName Service's
// spec.externalName as a name for Envoy to resolve, or returns nil.
//
// The rules are Kubernetes' own for the field (a DNS-1123 subdomain, with
// one trailing dot allowed for a fully qualified name), plus the 63-byte
// limit per label that DNS itself imposes. Names of the local host
// ("localhost", anything under ".localhost", and loopback or unspecified
// IP literals) are refused: Envoy would connect to its own host, where
// its admin interface and the node's other local services listen, and an
// ExtensionService's author must not reach those through it.
func checkExternalName(name string) error {
	if name == "" {
		return fmt.Errorf("is empty")
	}
	bare := strings.TrimSuffix(name, ".")
	if len(bare) > maxDNSNameBytes {
		return fmt.Errorf("is %d bytes long, more than the %d of a DNS name", len(bare), maxDNSNameBytes)
	}
	for label := range strings.SplitSeq(bare, ".") {
		if err := checkDNSLabel(label); err != nil {
			return err
		}
	}
	if bare == "localhost" || strings.HasSuffix(bare, ".localhost") {
		return fmt.Errorf("names the local host, which Envoy must not be sent to")
	}
	if ip, err := netip.ParseAddr(bare); err == nil && (ip.IsLoopback() || ip.IsUnspecified()) {
		return fmt.Errorf("is an address of the local host, which Envoy must not be sent to")
	}
	return nil
}

// checkDNSLabel checks one label of a DNS-1123 subdomain: 1 to 63 lower
// case letters, digits or '-', starting and ending with a letter or digit.
func checkDNSLabel(label string) error {
	switch {
	case label == "":
		return fmt.Errorf("is not a DNS name: it has an empty label")
	case len(label) > maxDNSLabelBytes:
		return fmt.Errorf("is not a DNS name: its label %s is longer than %d bytes", source.Quote(label), maxDNSLabelBytes)
	case !isLowercaseDNSLabel(label):
		return fmt.Errorf("is not a DNS name: a label holds lower case letters, digits and '-' (not first or last)")
	}
	return nil
}

// resolveExternalName decides about a target whose Service is an
// ExternalName: refused, in Contour's words, unless the setting
// enableExternalNameTargets is on, and then refused if its name is not
// one Envoy may resolve. ok reports whether the target stays.
func (b *Builder) resolveExternalName(name source.NamespacedName, svc *source.Service, cond *Condition) (ok bool) {
	if !b.settings.ExternalNameTargets {
		cond.AddError(SubConditionService, ReasonUnsupportedServiceType,
			fmt.Sprintf("Service %s is of unsupported type %q.", source.Quote(name.String()), serviceTypeExternalName))
		return false
	}
	if err := checkExternalName(svc.ExternalName); err != nil {
		cond.AddError(SubConditionService, ReasonExternalNameNotValid, fmt.Sprintf(
			"Service %s: spec.externalName %s %v", source.Quote(name.String()), source.Quote(svc.ExternalName), err))
		return false
	}
	return true
}

// targetsAreExternalNames reports whether the resolved targets are
// ExternalName Services (all of them) or Services with endpoints (none of
// them). When they mix, it records a MixedServiceTypes error naming the
// Services of each kind and ok is false.
func targetsAreExternalNames(namespace string, targets []resolvedTarget, cond *Condition) (external, ok bool) {
	// The usual case, no ExternalName at all (or only ExternalNames),
	// costs one pass and no allocation; the names are gathered only for
	// the message of a mix.
	named := 0
	for _, t := range targets {
		if isExternalName(t.service) {
			named++
		}
	}
	if named == 0 || named == len(targets) {
		return named > 0, true
	}
	var externalNames, withEndpoints []string
	seen := make(map[*source.Service]bool, len(targets))
	for _, t := range targets {
		if seen[t.service] {
			continue
		}
		seen[t.service] = true
		q := source.Quote(namespace + "/" + t.service.Name)
		if isExternalName(t.service) {
			externalNames = append(externalNames, q)
		} else {
			withEndpoints = append(withEndpoints, q)
		}
	}
	cond.AddError(SubConditionService, ReasonMixedServiceTypes, fmt.Sprintf(
		"spec.services mixes ExternalName Services (%s) with Services that have endpoints (%s); "+
			"an ExtensionService's targets must all be one or the other",
		strings.Join(externalNames, ", "), strings.Join(withEndpoints, ", ")))
	return false, false
}

// buildDNSLocalities turns resolved ExternalName targets into the
// localities of a STRICT_DNS Cluster, one per distinct Service port in
// spec order, with the weight rules of buildLocalities: weights that add
// up past Envoy's uint32 are an error; a Service port named twice is one
// locality with the summed weight (a warning); when no weight is set every
// locality weighs 1, and otherwise a weight of 0 leaves its locality
// unweighted. Every target has its one DNS name, so every locality is
// emitted, and at least one carries a weight. It returns nil on error
// (cond then holds it), and sets the availability on st: one ready
// "endpoint" per target, the name Envoy resolves.
//
// Two Services that name the same host and port are an error: they would
// be one host in two localities, which the checks every assignment
// passes refuse (an address belongs to one locality), and weighing a
// host against itself means nothing. A trailing dot does not make a name
// another one.
func buildDNSLocalities(namespace string, targets []resolvedTarget, st *Status) []DNSLocality {
	cond := &st.Condition
	total, ok := checkWeightTotal(targets, cond)
	if !ok {
		return nil
	}

	type distinct struct {
		target     resolvedTarget
		duplicated bool
	}
	unique := make([]distinct, 0, len(targets))
	at := make(map[targetKey]int, len(targets))
	for _, t := range targets {
		key := targetKey{service: t.service, port: t.port.Port}
		i, seen := at[key]
		if !seen {
			at[key] = len(unique)
			unique = append(unique, distinct{target: t})
			continue
		}
		u := &unique[i]
		if !u.duplicated {
			u.duplicated = true
			addDuplicateTargetWarning(cond, namespace, t)
		}
		u.target.weight += t.weight
	}

	type hostPort struct {
		host string
		port int32
	}
	named := make(map[hostPort]*source.Service, len(unique))
	for _, u := range unique {
		t := u.target
		key := hostPort{host: strings.TrimSuffix(t.service.ExternalName, "."), port: t.port.Port}
		if first, ok := named[key]; ok {
			cond.AddError(SubConditionService, ReasonDuplicateExternalName, fmt.Sprintf(
				"Services %s and %s both name host %s port %d; a host and port can be the target of one Service only",
				source.Quote(namespace+"/"+first.Name), source.Quote(namespace+"/"+t.service.Name), source.Quote(key.host), key.port))
			return nil
		}
		named[key] = t.service
	}

	dns := make([]DNSLocality, len(unique))
	st.Availability = make([]TargetAvailability, len(unique))
	for i, u := range unique {
		t := u.target
		weight := t.weight
		if total == 0 {
			weight = 1 // no weight set: an even split
		}
		dns[i] = DNSLocality{
			SubZone:  namespace + "/" + t.service.Name + "/" + strconv.Itoa(int(t.port.Port)),
			Weight:   weight,
			Hostname: t.service.ExternalName,
			// Kubernetes Service ports are 1..65535, which the API
			// boundary checks; an ExternalName Service has no target
			// port, so its port is the one to connect to.
			Port: uint32(t.port.Port),
		}
		st.Availability[i] = TargetAvailability{Service: t.service.Name, Port: t.port.Port, ReadyEndpoints: 1, Weight: weight}
		if weight == 0 {
			st.Availability[i].Reason = AvailabilityZeroWeight
		}
	}
	return dns
}
