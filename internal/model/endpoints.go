package model

import (
	"fmt"
	"math"
	"strconv"

	"github.com/tributary-dev/tributary/internal/endpoints"
	"github.com/tributary-dev/tributary/internal/source"
)

// Reasons of the sub-conditions buildLocalities records.
const (
	// ReasonWeightOverflow: the spec.services weights add up to more than
	// Envoy's uint32 total (an error).
	ReasonWeightOverflow = "WeightOverflow"
	// ReasonDuplicateTarget: one Service port is named more than once in
	// spec.services (a warning; the weights are summed).
	ReasonDuplicateTarget = "DuplicateTarget"
	// ReasonDuplicateEndpoint: an address:port of a target was already used
	// by an earlier target and is left out (a warning).
	ReasonDuplicateEndpoint = endpoints.ReasonDuplicateEndpoint
	// ReasonInvalidEndpointAddress: an EndpointSlice holds an address that
	// is not an IP of the slice's family (a warning; the endpoint is skipped).
	ReasonInvalidEndpointAddress = endpoints.ReasonInvalidEndpointAddress
	// ReasonInvalidEndpointPort: an EndpointSlice port lies outside
	// 1..65535 (a warning; the port is skipped).
	ReasonInvalidEndpointPort = endpoints.ReasonInvalidEndpointPort
	// ReasonNoWeightedEndpoints: endpoints exist, but only for targets of
	// weight 0 (a warning; no locality is emitted).
	ReasonNoWeightedEndpoints = "NoWeightedEndpoints"
)

// localityScratch is the memory a Builder reuses for Localities. Everything
// buildLocalities returns aliases it (and the collector's memory), which is
// what lets a Builder turn millions of endpoints into Localities with next
// to no allocation once it has warmed up.
type localityScratch struct {
	// found is what an ExtensionService's targets name in the Index, when
	// Build was not given it.
	found []TargetService
	// resolved are the spec targets of one ExtensionService that resolved.
	resolved []resolvedTarget
	// targets are the distinct Service ports of one ExtensionService, in
	// spec order; wanted is the same, as the collector takes them.
	targets    []uniqueTarget
	wanted     []endpoints.Target
	localities []Locality
	// subZones is where the SubZones of one ExtensionService's localities
	// are written, one after the other, to become one string that each
	// SubZone is a part of; subZoneEnds says where each ends.
	subZones    []byte
	subZoneEnds []int
	// targetAt maps a Service port to its index in targets, for a spec
	// longer than maxScannedTargets: there, finding the entries that name
	// one port twice costs one lookup per entry rather than a comparison
	// with every entry before it.
	targetAt map[targetKey]int
}

// maxScannedTargets is the longest spec whose repeated Service ports are
// found by comparing each entry with the distinct ones before it. Specs
// are nearly all this short, and for them the comparisons cost a fraction
// of clearing, hashing into and probing a map (3% of a translation at
// 10000 ExtensionServices of two targets each).
const maxScannedTargets = 8

// targetKey is one Service port.
type targetKey struct {
	service *source.Service
	port    int32
}

// maxKeptTargetMap is the size past which the scratch's map of targets is
// dropped rather than cleared: clearing a map costs as much as the largest
// it has been, which would make every later Build pay for one large one.
const maxKeptTargetMap = 64

// uniqueTarget is one distinct Service port with the summed weight of every
// spec entry naming it.
type uniqueTarget struct {
	service    *source.Service
	port       source.ServicePort
	weight     uint32
	duplicated bool
}

// CacheEndpointSlices makes b keep what it parses of each EndpointSlice from
// one Build to the next, so that after a change to one slice only that
// slice is parsed and sorted again. It pays off for a Builder that lives as
// long as its Index keeps changing, such as a Sync session's: it costs about
// 8 bytes per endpoint and port, plus some 200 bytes per slice. A one-shot
// translation has nothing to gain from it.
func (b *Builder) CacheEndpointSlices() { b.collector.CacheSlices() }

// SweepEndpointSlices drops what b keeps of EndpointSlices its Index no
// longer holds as they are: deleted slices, and slices replaced by ones b
// has not read. b sweeps by itself as such entries pile up; a caller that
// has just rebuilt many ExtensionServices on other Builders calls it to let
// go of the replaced slices at once. It does nothing unless b caches slices.
func (b *Builder) SweepEndpointSlices() { b.collector.SweepSlices() }

// buildLocalities turns resolved targets into Localities, recording weight
// and endpoint problems on cond: one Locality per distinct Service port that
// has usable endpoints, in spec order. It returns nil when there is none, or
// on error (cond then holds it). The result aliases b's memory (see Builder);
// the availability it sets on st does not.
func (b *Builder) buildLocalities(namespace string, targets []resolvedTarget, st *Status) []Locality {
	cond := &st.Condition
	s := &b.scratch

	// Envoy adds the locality weights of a priority into a uint32; a larger
	// total is rejected outright, so it is an error here rather than a
	// silently wrapped or reset weight.
	total, ok := checkWeightTotal(targets, cond)
	if !ok {
		return nil
	}

	// A Service port named twice would be two localities with the same
	// endpoints; proxyless gRPC clients reject that, so it becomes one
	// locality carrying both weights.
	// Cleared, not just truncated: a target left from a larger build would
	// keep its Service alive.
	clear(s.targets)
	s.targets = s.targets[:0]
	mapped := len(targets) > maxScannedTargets
	if mapped {
		if s.targetAt == nil || len(s.targetAt) > maxKeptTargetMap {
			s.targetAt = make(map[targetKey]int, len(targets))
		} else {
			clear(s.targetAt)
		}
	}
	for _, t := range targets {
		key := targetKey{service: t.service, port: t.port.Port}
		i, seen := s.targetIndex(key, mapped)
		if !seen {
			s.targets = append(s.targets, uniqueTarget{service: t.service, port: t.port, weight: t.weight})
			continue
		}
		u := &s.targets[i]
		if !u.duplicated {
			u.duplicated = true
			addDuplicateTargetWarning(cond, namespace, t)
		}
		u.weight += t.weight
	}

	clear(s.wanted)
	s.wanted = s.wanted[:0]
	for _, u := range s.targets {
		s.wanted = append(s.wanted, endpoints.Target{Service: u.service.Name, PortName: u.port.Name, Port: u.port.Port})
	}
	runs, warnings := b.collector.Collect(namespace, s.wanted)
	for _, w := range warnings {
		cond.AddWarning(SubConditionService, w.Reason, w.Message)
	}

	// Every weight unset means an even split; otherwise a weight of 0 is a
	// locality that is left unweighted (and so takes no traffic).
	unweighted := total == 0
	s.localities, s.subZones, s.subZoneEnds = s.localities[:0], s.subZones[:0], s.subZoneEnds[:0]
	st.Availability = make([]TargetAvailability, len(s.targets))
	weighted := false
	for i, eps := range runs {
		u := &s.targets[i]
		weight := u.weight
		if unweighted {
			weight = 1
		}
		st.Availability[i] = TargetAvailability{Service: u.service.Name, Port: u.port.Port, ReadyEndpoints: uint32(len(eps)), Weight: weight}
		if len(eps) == 0 {
			continue
		}
		weighted = weighted || weight > 0
		// SubZone is set below, out of s.subZones.
		s.subZones = appendSubZone(s.subZones, namespace, u.service.Name, u.port.Port)
		s.subZoneEnds = append(s.subZoneEnds, len(s.subZones))
		s.localities = append(s.localities, Locality{Weight: weight, Endpoints: eps})
	}
	setSubZones(s.localities, string(s.subZones), s.subZoneEnds)
	if !weighted {
		clearWeights(st.Availability)
	}
	for i := range st.Availability {
		a := &st.Availability[i]
		switch {
		case a.ReadyEndpoints == 0:
			a.Weight, a.Reason = 0, AvailabilityNoReadyEndpoints
		case a.Weight == 0:
			a.Reason = AvailabilityZeroWeight
		}
	}
	if len(s.localities) == 0 {
		return nil
	}
	if !weighted {
		// Clients fail every request when no locality carries a weight;
		// no locality at all is the honest equivalent.
		cond.AddWarning(SubConditionService, ReasonNoWeightedEndpoints,
			"no Service with a non-zero weight in spec.services has ready endpoints")
		return nil
	}
	return s.localities[:len(s.localities):len(s.localities)]
}

// clearWeights says that no target carries traffic: with no weighted
// locality, no locality is emitted at all.
func clearWeights(availability []TargetAvailability) {
	for i := range availability {
		availability[i].Weight = 0
	}
}

// checkWeightTotal adds up the targets' weights and records a
// WeightOverflow error when the total passes what Envoy adds the locality
// weights of a priority into (a uint32, which it rejects rather than
// wraps); ok is false then.
func checkWeightTotal(targets []resolvedTarget, cond *Condition) (total uint64, ok bool) {
	for _, t := range targets {
		total += uint64(t.weight)
	}
	if total > math.MaxUint32 {
		cond.AddError(SubConditionSpec, ReasonWeightOverflow, fmt.Sprintf(
			"spec.services weights add up to %d, more than the allowed total of %d", total, uint64(math.MaxUint32)))
		return total, false
	}
	return total, true
}

// addDuplicateTargetWarning says that t's Service port was named before in
// spec.services: it is one locality carrying the sum of the weights.
func addDuplicateTargetWarning(cond *Condition, namespace string, t resolvedTarget) {
	cond.AddWarning(SubConditionSpec, ReasonDuplicateTarget, fmt.Sprintf(
		"port %d of Service %s is named more than once in spec.services; it is one locality whose weight is the sum of its entries",
		t.port.Port, source.Quote(namespace+"/"+t.service.Name)))
}

// targetIndex returns the index in s.targets of the Service port key and
// whether it is there, from s.targetAt when mapped and by comparing with
// each of s.targets otherwise. A key not there is taken to be appended
// next, at len(s.targets).
func (s *localityScratch) targetIndex(key targetKey, mapped bool) (int, bool) {
	if !mapped {
		for i, u := range s.targets {
			if u.service == key.service && u.port.Port == key.port {
				return i, true
			}
		}
		return 0, false
	}
	i, ok := s.targetAt[key]
	if !ok {
		s.targetAt[key] = len(s.targets)
	}
	return i, ok
}

// appendSubZone appends the SubZone of a target's Locality,
// "<namespace>/<service>/<port>", to b.
func appendSubZone(b []byte, namespace, service string, port int32) []byte {
	b = append(b, namespace...)
	b = append(b, '/')
	b = append(b, service...)
	b = append(b, '/')
	return strconv.AppendInt(b, int64(port), 10)
}

// setSubZones gives Locality i its SubZone, subZones up to ends[i] from
// where the one before ends: an ExtensionService's SubZones cost one
// allocation, not one (or two) per Locality.
func setSubZones(localities []Locality, subZones string, ends []int) {
	start := 0
	for i, end := range ends {
		localities[i].SubZone = subZones[start:end]
		start = end
	}
}
