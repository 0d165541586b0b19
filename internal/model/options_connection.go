package model

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/tributary-dev/tributary/internal/source"
)

// The JSON names of the groups this file validates.
const (
	http2KeepaliveGroup   = "http2Keepalive"
	tcpKeepaliveGroup     = "tcpKeepalive"
	connectionLimitsGroup = "connectionLimits"
	slowStartGroup        = "slowStart"
)

// Defaults the API documents for fields a group leaves unset.
const (
	defaultHTTP2KeepaliveTimeout = 20 * time.Second
	defaultSlowStartAggression   = 1.0
	defaultSlowStartMinWeight    = 10.0
)

// connectionDuration bounds the durations of these groups: Envoy's floor
// for the HTTP/2 keepalive durations is 1ms, and Envoy counts every other
// one in milliseconds, so a shorter value would be zero there.
var connectionDuration = durationBounds{min: time.Millisecond, minWhy: "Envoy counts it in milliseconds", max: maxOptionDuration}

// Linux's limits for the socket options tcp_keepalive sets
// (TCP_KEEPCNT, TCP_KEEPIDLE, TCP_KEEPINTVL): Envoy hands the values to
// setsockopt, and a refused option fails every connection to the
// extension, so a value outside them is refused here instead.
const (
	maxTCPKeepaliveProbes  = 127
	maxTCPKeepaliveSeconds = 32767
)

// tcpKeepaliveDuration bounds tcp_keepalive's time and interval.
var tcpKeepaliveDuration = durationBounds{
	min: time.Second, minWhy: "the socket option counts seconds",
	max: maxTCPKeepaliveSeconds * time.Second, maxWhy: "Linux's limit",
}

// optionRequired records that field of group must be set when the group is.
func optionRequired(opts *optionsInForce, group, field string, cond *Condition) {
	cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
		"%s is required with %s", opts.field(group, field), opts.group(group)))
}

// http2Keepalive validates the http2Keepalive group in force; nil without
// one. HTTP/2 PINGs exist only on HTTP/2: on an http/1.1 extension the
// group is an error when the ExtensionService sets it, and does not apply
// when it is a default. The values are validated either way, so a default
// is valid wherever it lands.
func (b *Builder) http2Keepalive(opts *optionsInForce, protocol Protocol, cond *Condition) *HTTP2Keepalive {
	g := opts.HTTP2Keepalive
	if g == nil {
		return nil
	}
	if protocol == ProtocolHTTP11 {
		if opts.fromDefaults(http2KeepaliveGroup) {
			return nil
		}
		mismatch := false
		for _, f := range []struct {
			name  string
			value *string
		}{{"interval", g.Interval}, {"timeout", g.Timeout}} {
			if f.value != nil {
				cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
					"%s %s does not apply to protocol %q: HTTP/2 PINGs need %q or %q",
					opts.field(http2KeepaliveGroup, f.name), source.Quote(*f.value), protocolHTTP11, protocolH2, protocolH2C))
				mismatch = true
			}
		}
		if mismatch {
			return nil
		}
	}
	k := &HTTP2Keepalive{Timeout: defaultHTTP2KeepaliveTimeout}
	var valid bool
	if g.Interval == nil {
		optionRequired(opts, http2KeepaliveGroup, "interval", cond)
	} else {
		k.Interval, valid = opts.duration(http2KeepaliveGroup, "interval", *g.Interval, connectionDuration, cond)
	}
	if g.Timeout != nil {
		var ok bool
		if k.Timeout, ok = opts.duration(http2KeepaliveGroup, "timeout", *g.Timeout, connectionDuration, cond); !ok {
			valid = false
		}
	}
	if !valid {
		return nil
	}
	return k
}

// tcpKeepalive validates the tcpKeepalive group in force; nil without one.
// An empty group is meaningful: it turns keepalive on with the kernel's
// timings. time and interval are whole seconds because the socket options
// are.
func (b *Builder) tcpKeepalive(opts *optionsInForce, cond *Condition) *TCPKeepalive {
	g := opts.TCPKeepalive
	if g == nil {
		return nil
	}
	k := &TCPKeepalive{}
	valid := true
	if p := g.Probes; p != nil {
		if *p < 1 || *p > maxTCPKeepaliveProbes {
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
				"%s %s must be from 1 to %d (Linux's limit)",
				opts.field(tcpKeepaliveGroup, "probes"), source.Quote(strconv.FormatUint(uint64(*p), 10)), maxTCPKeepaliveProbes))
			valid = false
		} else {
			k.Probes = *p
		}
	}
	var ok bool
	if k.Time, ok = tcpKeepaliveSeconds(opts, "time", g.Time, cond); !ok {
		valid = false
	}
	if k.Interval, ok = tcpKeepaliveSeconds(opts, "interval", g.Interval, cond); !ok {
		valid = false
	}
	if !valid {
		return nil
	}
	return k
}

// tcpKeepaliveSeconds reads a duration of the tcpKeepalive group as whole
// seconds from 1 to maxTCPKeepaliveSeconds; 0 (and ok) when unset.
func tcpKeepaliveSeconds(opts *optionsInForce, field string, raw *string, cond *Condition) (seconds uint32, ok bool) {
	if raw == nil {
		return 0, true
	}
	d, ok := opts.duration(tcpKeepaliveGroup, field, *raw, tcpKeepaliveDuration, cond)
	if ok && d%time.Second != 0 {
		cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
			"%s %s must be whole seconds: the socket option counts seconds", opts.field(tcpKeepaliveGroup, field), source.Quote(*raw)))
		return 0, false
	}
	return uint32(d / time.Second), ok
}

// connectionLimits validates the connectionLimits group in force; nil
// without one, or when it sets neither limit (the Cluster then has nothing
// to say).
func (b *Builder) connectionLimits(opts *optionsInForce, cond *Condition) *ConnectionLimits {
	g := opts.ConnectionLimits
	if g == nil {
		return nil
	}
	l := &ConnectionLimits{}
	valid := true
	if raw := g.MaxConnectionDuration; raw != nil {
		l.MaxConnectionDuration, valid = opts.duration(connectionLimitsGroup, "maxConnectionDuration", *raw, connectionDuration, cond)
	}
	if n := g.MaxRequestsPerConnection; n != nil {
		if *n < 1 {
			// Envoy would read 0 as no limit; an explicit 0 is more likely
			// a mistake than a wish for the default.
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
				"%s %s must be at least 1",
				opts.field(connectionLimitsGroup, "maxRequestsPerConnection"), source.Quote(strconv.FormatUint(uint64(*n), 10))))
			valid = false
		} else {
			l.MaxRequestsPerConnection = *n
		}
	}
	if !valid || *l == (ConnectionLimits{}) {
		return nil
	}
	return l
}

// slowStart validates the slowStart group in force; nil without one. Envoy
// ramps endpoints up only under round robin and least request: under
// another strategy the group is an error when the ExtensionService sets
// it, and does not apply when it is a default (its values are validated
// either way).
func (b *Builder) slowStart(opts *optionsInForce, lb LoadBalancer, cond *Condition) *SlowStart {
	g := opts.SlowStart
	if g == nil {
		return nil
	}
	fits := lb == LoadBalancerRoundRobin || lb == LoadBalancerLeastRequest
	if !fits {
		if opts.fromDefaults(slowStartGroup) {
			return nil
		}
		cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
			"slow start (%s) does not apply to spec.loadBalancerPolicy.strategy %q: Envoy ramps endpoints up only under RoundRobin and %s",
			opts.group(slowStartGroup), strategyName(lb), strategyWeightedLeastRequest))
		return nil
	}
	s := &SlowStart{Aggression: defaultSlowStartAggression, MinWeightPercent: defaultSlowStartMinWeight}
	valid := true
	if g.Window == nil {
		optionRequired(opts, slowStartGroup, "window", cond)
		valid = false
	} else {
		var ok bool
		if s.Window, ok = opts.duration(slowStartGroup, "window", *g.Window, connectionDuration, cond); !ok {
			valid = false
		}
	}
	if a := g.Aggression; a != nil {
		// Envoy raises the time factor to 1/aggression: zero, negative
		// and non-finite values have no meaning (Envoy falls back to 1).
		if math.IsNaN(*a) || math.IsInf(*a, 0) || *a <= 0 {
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
				"%s %s must be a positive number",
				opts.field(slowStartGroup, "aggression"), source.Quote(strconv.FormatFloat(*a, 'g', -1, 64))))
			valid = false
		} else {
			s.Aggression = *a
		}
	}
	if p := g.MinWeightPercent; p != nil {
		if math.IsNaN(*p) || *p < 0 || *p > 100 {
			cond.AddError(SubConditionSpec, ReasonOptionNotValid, fmt.Sprintf(
				"%s %s must be a percentage from 0 to 100",
				opts.field(slowStartGroup, "minWeightPercent"), source.Quote(strconv.FormatFloat(*p, 'g', -1, 64))))
			valid = false
		} else {
			s.MinWeightPercent = *p
		}
	}
	if !valid {
		return nil
	}
	return s
}

// strategyName is the spec.loadBalancerPolicy.strategy value of a balancer
// slow start does not fit.
func strategyName(lb LoadBalancer) string {
	if lb == LoadBalancerRandom {
		return strategyRandom
	}
	return strategyClientSideWeightedRoundRobin
}
