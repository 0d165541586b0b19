package model

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tributary-dev/tributary/internal/source"
)

// The groups' JSON names, as opts.field and opts.origins know them.
const (
	groupHealthCheck      = "healthCheck"
	groupOutlierDetection = "outlierDetection"
)

// Defaults of the healthCheck group, as the API's comments state them.
const (
	defaultHealthCheckInterval           = 5 * time.Second
	defaultHealthCheckTimeout            = time.Second
	defaultHealthCheckUnhealthyThreshold = 3
	defaultHealthCheckHealthyThreshold   = 1
)

// Defaults of the outlierDetection group, as the API's comments state
// them. They are Envoy's own defaults except maxEjectionPercent, which
// Envoy also defaults to 10 but which is always written out: ejection
// counts every endpoint of the Cluster, across all its Services, so the
// limit is what keeps a small Service from being ejected whole, and it
// should be visible in the Cluster rather than implied.
const (
	defaultOutlierInterval                 = 10 * time.Second
	defaultOutlierBaseEjectionTime         = 30 * time.Second
	defaultOutlierMaxEjectionTime          = 300 * time.Second
	defaultOutlierMaxEjectionPercent       = 10
	defaultOutlierFailurePercentageHosts   = 5
	defaultOutlierFailurePercentageRequest = 50
)

// maxHealthCheckNameBytes bounds serviceName and authority: both travel
// in every health check request, and no gRPC service name or host name
// comes near it (a DNS name is at most 253 bytes).
const maxHealthCheckNameBytes = 255

// healthCheck validates the healthCheck group in force, with its defaults
// applied; nil without one. gRPC health checks are HTTP/2 requests, so an
// http/1.1 extension cannot have one: set by the ExtensionService itself,
// that is an error; from the settings' defaults it silently does not
// apply, as a default is meant for the extensions it fits.
func (b *Builder) healthCheck(opts *optionsInForce, protocol Protocol, cond *Condition) *HealthCheck {
	g := opts.HealthCheck
	if g == nil {
		return nil
	}
	if protocol == ProtocolHTTP11 {
		// CheckExtensionDefaults validates a default as if it applied,
		// so one that does not apply here needs no second look.
		if !opts.fromDefaults(groupHealthCheck) {
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
				"%s: gRPC health checks need HTTP/2, and spec.protocol is %q", opts.group(groupHealthCheck), protocolHTTP11))
		}
		return nil
	}
	before := len(cond.Errors)
	field := func(name string) string { return opts.field(groupHealthCheck, name) }
	hc := &HealthCheck{
		Interval:           healthOptionDuration(opts, groupHealthCheck, "interval", g.Interval, defaultHealthCheckInterval, cond),
		Timeout:            healthOptionDuration(opts, groupHealthCheck, "timeout", g.Timeout, defaultHealthCheckTimeout, cond),
		UnhealthyThreshold: healthOptionAtLeastOne(g.UnhealthyThreshold, defaultHealthCheckUnhealthyThreshold, field("unhealthyThreshold"), cond),
		HealthyThreshold:   healthOptionAtLeastOne(g.HealthyThreshold, defaultHealthCheckHealthyThreshold, field("healthyThreshold"), cond),
	}
	if g.ServiceName != nil {
		hc.ServiceName = *g.ServiceName
		if problem := healthCheckNameProblem(hc.ServiceName, false); problem != "" {
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf("%s %s %s", field("serviceName"), source.Quote(hc.ServiceName), problem))
		}
	}
	if g.Authority != nil {
		hc.Authority = *g.Authority
		// An :authority is one header value: whitespace in it makes
		// Envoy's HTTP/2 codec refuse the request, so every check would
		// fail and every endpoint be marked unhealthy.
		if problem := healthCheckNameProblem(hc.Authority, true); problem != "" {
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf("%s %s %s", field("authority"), source.Quote(hc.Authority), problem))
		}
	}
	if g.Port != nil {
		hc.Port = *g.Port
		if hc.Port < 1 || hc.Port > 65535 {
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf("%s %s must be from 1 to 65535", field("port"), healthQuoteNumber(hc.Port)))
		}
	}
	if len(cond.Errors) > before {
		return nil
	}
	return hc
}

// healthCheckNameProblem says what is wrong with a serviceName or
// authority, "" when nothing is.
func healthCheckNameProblem(s string, noSpace bool) string {
	switch {
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case len(s) > maxHealthCheckNameBytes:
		return fmt.Sprintf("is longer than %d bytes", maxHealthCheckNameBytes)
	case strings.ContainsFunc(s, unicode.IsControl):
		return "contains a control character"
	case noSpace && strings.ContainsFunc(s, unicode.IsSpace):
		return "contains whitespace"
	}
	return ""
}

// outlierDetection validates the outlierDetection group in force, with
// its defaults applied; nil without one. A group must name at least one
// detector: without one, only the detectors Envoy runs by default
// (consecutive 5xx and success rate) would eject, and nothing the user
// wrote would matter but the ejection times.
func (b *Builder) outlierDetection(opts *optionsInForce, cond *Condition) *OutlierDetection {
	g := opts.OutlierDetection
	if g == nil {
		return nil
	}
	before := len(cond.Errors)
	field := func(name string) string { return opts.field(groupOutlierDetection, name) }
	od := &OutlierDetection{
		Interval:           healthOptionDuration(opts, groupOutlierDetection, "interval", g.Interval, defaultOutlierInterval, cond),
		BaseEjectionTime:   healthOptionDuration(opts, groupOutlierDetection, "baseEjectionTime", g.BaseEjectionTime, defaultOutlierBaseEjectionTime, cond),
		MaxEjectionPercent: defaultOutlierMaxEjectionPercent,
	}
	if g.ConsecutiveGatewayFailure != nil {
		od.ConsecutiveGatewayFailure = healthOptionAtLeastOne(g.ConsecutiveGatewayFailure, 0, field("consecutiveGatewayFailure"), cond)
	}
	if g.ConsecutiveLocalOriginFailure != nil {
		od.ConsecutiveLocalOriginFailure = healthOptionAtLeastOne(g.ConsecutiveLocalOriginFailure, 0, field("consecutiveLocalOriginFailure"), cond)
	}
	if p := g.FailurePercentageThreshold; p != nil {
		// Envoy ejects an endpoint whose failure percentage is at least
		// the threshold, so 0 would eject every endpoint with enough
		// requests, failing or not.
		if *p < 1 || *p > 100 {
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
				"%s %s must be from 1 to 100", field("failurePercentageThreshold"), healthQuoteNumber(*p)))
		}
		od.FailurePercentageThreshold = *p
		od.FailurePercentageMinimumHosts = defaultOutlierFailurePercentageHosts
		od.FailurePercentageRequestVolume = defaultOutlierFailurePercentageRequest
		if g.FailurePercentageMinimumHosts != nil {
			od.FailurePercentageMinimumHosts = *g.FailurePercentageMinimumHosts
		}
		if g.FailurePercentageRequestVolume != nil {
			od.FailurePercentageRequestVolume = *g.FailurePercentageRequestVolume
		}
	} else {
		for _, f := range []struct {
			name string
			v    *uint32
		}{
			{"failurePercentageMinimumHosts", g.FailurePercentageMinimumHosts},
			{"failurePercentageRequestVolume", g.FailurePercentageRequestVolume},
		} {
			if f.v != nil {
				cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf("%s %s does nothing without %s",
					field(f.name), healthQuoteNumber(*f.v), field("failurePercentageThreshold")))
			}
		}
	}
	// Envoy's own rule for an unset maxEjectionTime: 300s or the base
	// ejection time, whichever is longer, so raising only the base is
	// never an error.
	od.MaxEjectionTime = max(defaultOutlierMaxEjectionTime, od.BaseEjectionTime)
	if g.MaxEjectionTime != nil {
		od.MaxEjectionTime = healthOptionDuration(opts, groupOutlierDetection, "maxEjectionTime", g.MaxEjectionTime, 0, cond)
		// Envoy refuses a Cluster whose maximum is below its base.
		if od.MaxEjectionTime > 0 && od.BaseEjectionTime > 0 && od.MaxEjectionTime < od.BaseEjectionTime {
			base := od.BaseEjectionTime.String() + " (its default)"
			if g.BaseEjectionTime != nil {
				base = source.Quote(*g.BaseEjectionTime)
			}
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf("%s %s is shorter than %s %s",
				field("maxEjectionTime"), source.Quote(*g.MaxEjectionTime), field("baseEjectionTime"), base))
		}
	}
	if p := g.MaxEjectionPercent; p != nil {
		od.MaxEjectionPercent = *p
		if *p > 100 {
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf("%s %s must be from 0 to 100", field("maxEjectionPercent"), healthQuoteNumber(*p)))
		}
	}
	if g.ConsecutiveGatewayFailure == nil && g.ConsecutiveLocalOriginFailure == nil && g.FailurePercentageThreshold == nil {
		cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf("%s: outlier detection needs a detector: set %s, %s or %s",
			opts.group(groupOutlierDetection),
			field("consecutiveGatewayFailure"), field("consecutiveLocalOriginFailure"), field("failurePercentageThreshold")))
	}
	if len(cond.Errors) > before {
		return nil
	}
	return od
}

// healthOptionDuration reads a duration of the two groups: def when unset,
// else positive and at most a day, or an error on cond (and 0).
func healthOptionDuration(opts *optionsInForce, group, field string, raw *string, def time.Duration, cond *Condition) time.Duration {
	if raw == nil {
		return def
	}
	d, _ := opts.duration(group, field, *raw, positiveDuration, cond)
	return d
}

// healthOptionAtLeastOne is a count or threshold: def when unset, else at
// least 1, or an error on cond.
func healthOptionAtLeastOne(raw *uint32, def uint32, field string, cond *Condition) uint32 {
	if raw == nil {
		return def
	}
	if *raw < 1 {
		cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf("%s %s must be at least 1", field, healthQuoteNumber(*raw)))
	}
	return *raw
}

// healthQuoteNumber quotes a number the way values are quoted in every option
// error, so a message reads the same whatever the field's type.
func healthQuoteNumber(v uint32) string { return strconv.Quote(strconv.FormatUint(uint64(v), 10)) }
