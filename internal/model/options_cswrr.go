package model

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/tributary-dev/tributary/internal/source"
)

// cswrrGroup is the JSON name of the clientSideWeightedRoundRobin group.
const cswrrGroup = "clientSideWeightedRoundRobin"

// minWeightUpdatePeriod is the floor both gRPC and Envoy silently raise a
// shorter weightUpdatePeriod to; refusing below it keeps the value in the
// status the value in force.
const minWeightUpdatePeriod = 100 * time.Millisecond

// clientSideWeightedRoundRobin is the tuning of strategy
// ClientSideWeightedRoundRobin: non-nil exactly when lb is that strategy,
// with every field the group in force leaves unset at the policy's
// default.
//
// The group's values are validated wherever the group comes from. A group
// the ExtensionService sets itself under another strategy is an error, as
// every option that does not fit is: its author meant a strategy the spec
// does not say, and would otherwise learn it only from traffic. A group
// from the settings' defaults simply does not apply to such an
// ExtensionService.
func (b *Builder) clientSideWeightedRoundRobin(opts *optionsInForce, lb LoadBalancer, cond *Condition) *ClientSideWeightedRoundRobin {
	if lb != LoadBalancerClientSideWeightedRoundRobin && opts.ClientSideWeightedRoundRobin == nil {
		return nil // the usual case, at no cost
	}
	tuning := validateCSWRR(opts, cond)
	if lb != LoadBalancerClientSideWeightedRoundRobin {
		if opts.ClientSideWeightedRoundRobin != nil && !opts.fromDefaults(cswrrGroup) {
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
				"%s set, but spec.loadBalancerPolicy.strategy is not %q: there is nothing to tune",
				opts.group(cswrrGroup), strategyClientSideWeightedRoundRobin))
		}
		return nil
	}
	return tuning
}

// validateCSWRR checks the clientSideWeightedRoundRobin group in force, one
// error per bad field, and returns the tuning with the valid fields (all
// unset without a group).
func validateCSWRR(opts *optionsInForce, cond *Condition) *ClientSideWeightedRoundRobin {
	tuning := &ClientSideWeightedRoundRobin{}
	g := opts.ClientSideWeightedRoundRobin
	if g == nil {
		return tuning
	}
	if g.EnableOOBLoadReport != nil {
		tuning.EnableOOBLoadReport = *g.EnableOOBLoadReport
	}
	tuning.OOBReportingPeriod = cswrrPeriod(opts, "oobReportingPeriod", g.OOBReportingPeriod, positiveDuration, cond)
	// A zero blackout is meaningful: weights count from the first report.
	tuning.BlackoutPeriod = cswrrPeriod(opts, "blackoutPeriod", g.BlackoutPeriod, durationBounds{max: maxOptionDuration}, cond)
	tuning.WeightExpirationPeriod = cswrrPeriod(opts, "weightExpirationPeriod", g.WeightExpirationPeriod, positiveDuration, cond)
	tuning.WeightUpdatePeriod = cswrrPeriod(opts, "weightUpdatePeriod", g.WeightUpdatePeriod, durationBounds{min: minWeightUpdatePeriod, minWhy: "clients raise a shorter period to that", max: maxOptionDuration}, cond)
	if p := g.ErrorUtilizationPenalty; p != nil {
		// Envoy carries the penalty as a float (32 bits): a larger value
		// would become infinity on the wire.
		name, value := opts.field(cswrrGroup, "errorUtilizationPenalty"), source.Quote(strconv.FormatFloat(*p, 'g', -1, 64))
		switch {
		case math.IsNaN(*p) || *p < 0:
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf("%s %s must be a number of at least 0", name, value))
		case *p > math.MaxFloat32:
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf("%s %s must be at most 3.4e+38, the largest 32-bit float", name, value))
		default:
			penalty := *p
			tuning.ErrorUtilizationPenalty = &penalty
		}
	}
	return tuning
}

// cswrrPeriod reads a period of the group: nil when unset, else within
// bounds, or an error on cond (and nil).
func cswrrPeriod(opts *optionsInForce, field string, raw *string, bounds durationBounds, cond *Condition) *time.Duration {
	if raw == nil {
		return nil
	}
	d, ok := opts.duration(cswrrGroup, field, *raw, bounds, cond)
	if !ok {
		return nil
	}
	return &d
}
