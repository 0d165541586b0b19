package model

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/source"
)

// connectionOptions is what the connection option groups made of one
// ExtensionService.
type connectionOptions struct {
	HTTP2Keepalive   *HTTP2Keepalive
	TCPKeepalive     *TCPKeepalive
	ConnectionLimits *ConnectionLimits
	SlowStart        *SlowStart
}

func withOptions(o source.ExtensionOptions) source.ExtensionServiceSpec {
	return source.ExtensionServiceSpec{Options: &o}
}

func withStrategy(spec source.ExtensionServiceSpec, strategy string) source.ExtensionServiceSpec {
	spec.LoadBalancerPolicy = &source.LoadBalancerPolicy{Strategy: strategy}
	return spec
}

func withProtocol(spec source.ExtensionServiceSpec, protocol string) source.ExtensionServiceSpec {
	spec.Protocol = &protocol
	return spec
}

// TestConnectionOptions holds the HTTP/2 and TCP keepalives, the
// connection limits and slow start to their values, defaults, bounds and
// exact messages, and to where they apply: HTTP/2 keepalive on h2 and h2c,
// slow start under round robin and least request; elsewhere an error when
// the ExtensionService sets the group, nothing when it is a default.
func TestConnectionOptions(t *testing.T) {
	defaults := func(o source.ExtensionOptions) source.Settings { return source.Settings{ExtensionDefaults: &o} }
	tests := []struct {
		optCase
		want connectionOptions
	}{{
		optCase: optCase{name: "http2Keepalive with its default timeout", spec: withOptions(source.ExtensionOptions{
			HTTP2Keepalive: &source.HTTP2Keepalive{Interval: xtStr("30s")},
		})},
		want: connectionOptions{HTTP2Keepalive: &HTTP2Keepalive{Interval: 30 * time.Second, Timeout: 20 * time.Second}},
	}, {
		optCase: optCase{name: "http2Keepalive on h2c, from annotations", spec: withProtocol(source.ExtensionServiceSpec{}, "h2c"),
			annotations: map[string]string{"tributary.dev/http2-keepalive-interval": "1m", "tributary.dev/http2-keepalive-timeout": "1ms"}},
		want: connectionOptions{HTTP2Keepalive: &HTTP2Keepalive{Interval: time.Minute, Timeout: time.Millisecond}},
	}, {
		optCase: optCase{
			name: "http2Keepalive on http/1.1, set by the ExtensionService",
			spec: withProtocol(withOptions(source.ExtensionOptions{HTTP2Keepalive: &source.HTTP2Keepalive{Interval: xtStr("30s"), Timeout: xtStr("5s")}}), "http/1.1"),
			wantErrors: []SubCondition{
				optSpecErr(`spec.options.http2Keepalive.interval "30s" does not apply to protocol "http/1.1": HTTP/2 PINGs need "h2" or "h2c"`),
				optSpecErr(`spec.options.http2Keepalive.timeout "5s" does not apply to protocol "http/1.1": HTTP/2 PINGs need "h2" or "h2c"`),
			},
		},
	}, {
		optCase: optCase{
			name:     "http2Keepalive from the defaults does not apply to http/1.1",
			spec:     withProtocol(source.ExtensionServiceSpec{}, "http/1.1"),
			settings: defaults(source.ExtensionOptions{HTTP2Keepalive: &source.HTTP2Keepalive{Interval: xtStr("30s")}}),
		},
	}, {
		optCase: optCase{
			name:       "http2Keepalive without an interval",
			spec:       withOptions(source.ExtensionOptions{HTTP2Keepalive: &source.HTTP2Keepalive{Timeout: xtStr("5s")}}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.http2Keepalive.interval is required with spec.options.http2Keepalive`)},
		},
	}, {
		optCase: optCase{
			name:        "http2Keepalive without an interval, from annotations",
			annotations: map[string]string{"tributary.dev/http2-keepalive-timeout": "5s"},
			wantErrors: []SubCondition{optSpecErr(
				`"tributary.dev/http2-keepalive-interval" is required with the "tributary.dev/http2-keepalive-*" annotations`)},
		},
	}, {
		optCase: optCase{
			name: "http2Keepalive durations out of range",
			spec: withOptions(source.ExtensionOptions{HTTP2Keepalive: &source.HTTP2Keepalive{Interval: xtStr("999us"), Timeout: xtStr("25h")}}),
			wantErrors: []SubCondition{
				optSpecErr(`spec.options.http2Keepalive.interval "999us" must be at least 1ms: Envoy counts it in milliseconds`),
				optSpecErr(`spec.options.http2Keepalive.timeout "25h" must be at most 24h`),
			},
		},
	}, {
		optCase: optCase{
			name: "http2Keepalive durations that do not parse or are not positive",
			spec: withOptions(source.ExtensionOptions{HTTP2Keepalive: &source.HTTP2Keepalive{Interval: xtStr("30"), Timeout: xtStr("0s")}}),
			wantErrors: []SubCondition{
				optSpecErr(`spec.options.http2Keepalive.interval "30" is not a duration such as "5s" or "500ms"`),
				optSpecErr(`spec.options.http2Keepalive.timeout "0s" must be positive`),
			},
		},
	}, {
		optCase: optCase{name: "tcpKeepalive, every field", spec: withOptions(source.ExtensionOptions{
			TCPKeepalive: &source.TCPKeepalive{Probes: ptr(uint32(3)), Time: xtStr("2m"), Interval: xtStr("10s")},
		})},
		want: connectionOptions{TCPKeepalive: &TCPKeepalive{Probes: 3, Time: 120, Interval: 10}},
	}, {
		optCase: optCase{name: "tcpKeepalive empty: on, with the kernel's timings", spec: withOptions(source.ExtensionOptions{TCPKeepalive: &source.TCPKeepalive{}})},
		want:    connectionOptions{TCPKeepalive: &TCPKeepalive{}},
	}, {
		optCase: optCase{name: "tcpKeepalive at Linux's limits, on http/1.1", spec: withProtocol(withOptions(source.ExtensionOptions{
			TCPKeepalive: &source.TCPKeepalive{Probes: ptr(uint32(127)), Time: xtStr("32767s"), Interval: xtStr("1s")},
		}), "http/1.1")},
		want: connectionOptions{TCPKeepalive: &TCPKeepalive{Probes: 127, Time: 32767, Interval: 1}},
	}, {
		optCase: optCase{
			name: "tcpKeepalive out of range",
			annotations: map[string]string{
				"tributary.dev/tcp-keepalive-probes":   "0",
				"tributary.dev/tcp-keepalive-time":     "1.5s",
				"tributary.dev/tcp-keepalive-interval": "32768s",
			},
			wantErrors: []SubCondition{
				optSpecErr(`"tributary.dev/tcp-keepalive-probes" "0" must be from 1 to 127 (Linux's limit)`),
				optSpecErr(`"tributary.dev/tcp-keepalive-time" "1.5s" must be whole seconds: the socket option counts seconds`),
				optSpecErr(`"tributary.dev/tcp-keepalive-interval" "32768s" must be at most 9h6m7s (Linux's limit)`),
			},
		},
	}, {
		optCase: optCase{
			name: "tcpKeepalive durations that do not parse or are not positive",
			spec: withOptions(source.ExtensionOptions{TCPKeepalive: &source.TCPKeepalive{Probes: ptr(uint32(128)), Time: xtStr("-1s"), Interval: xtStr("ten")}}),
			wantErrors: []SubCondition{
				optSpecErr(`spec.options.tcpKeepalive.probes "128" must be from 1 to 127 (Linux's limit)`),
				optSpecErr(`spec.options.tcpKeepalive.time "-1s" must be positive`),
				optSpecErr(`spec.options.tcpKeepalive.interval "ten" is not a duration such as "5s" or "500ms"`),
			},
		},
	}, {
		optCase: optCase{name: "connectionLimits, both", spec: withOptions(source.ExtensionOptions{
			ConnectionLimits: &source.ConnectionLimits{MaxConnectionDuration: xtStr("1h"), MaxRequestsPerConnection: ptr(uint32(1000))},
		})},
		want: connectionOptions{ConnectionLimits: &ConnectionLimits{MaxConnectionDuration: time.Hour, MaxRequestsPerConnection: 1000}},
	}, {
		optCase: optCase{name: "connectionLimits, one request per connection, from the defaults",
			settings: defaults(source.ExtensionOptions{ConnectionLimits: &source.ConnectionLimits{MaxRequestsPerConnection: ptr(uint32(1))}})},
		want: connectionOptions{ConnectionLimits: &ConnectionLimits{MaxRequestsPerConnection: 1}},
	}, {
		optCase: optCase{name: "connectionLimits empty: nothing to say", spec: withOptions(source.ExtensionOptions{ConnectionLimits: &source.ConnectionLimits{}})},
	}, {
		optCase: optCase{
			name: "connectionLimits out of range",
			spec: withOptions(source.ExtensionOptions{ConnectionLimits: &source.ConnectionLimits{MaxConnectionDuration: xtStr("0s"), MaxRequestsPerConnection: ptr(uint32(0))}}),
			wantErrors: []SubCondition{
				optSpecErr(`spec.options.connectionLimits.maxConnectionDuration "0s" must be positive`),
				optSpecErr(`spec.options.connectionLimits.maxRequestsPerConnection "0" must be at least 1`),
			},
		},
	}, {
		optCase: optCase{name: "slowStart with its defaults", spec: withOptions(source.ExtensionOptions{SlowStart: &source.SlowStart{Window: xtStr("1m")}})},
		want:    connectionOptions{SlowStart: &SlowStart{Window: time.Minute, Aggression: 1, MinWeightPercent: 10}},
	}, {
		optCase: optCase{name: "slowStart under least request, every field, from annotations", spec: withStrategy(source.ExtensionServiceSpec{}, "WeightedLeastRequest"),
			annotations: map[string]string{
				"tributary.dev/slow-start-window":             "30s",
				"tributary.dev/slow-start-aggression":         "2.5",
				"tributary.dev/slow-start-min-weight-percent": "0",
			}},
		want: connectionOptions{SlowStart: &SlowStart{Window: 30 * time.Second, Aggression: 2.5, MinWeightPercent: 0}},
	}, {
		optCase: optCase{
			name:       "slowStart under Random, set by the ExtensionService",
			spec:       withStrategy(withOptions(source.ExtensionOptions{SlowStart: &source.SlowStart{Window: xtStr("1m")}}), "Random"),
			wantErrors: []SubCondition{optSpecErr(`slow start (spec.options.slowStart) does not apply to spec.loadBalancerPolicy.strategy "Random": Envoy ramps endpoints up only under RoundRobin and WeightedLeastRequest`)},
		},
	}, {
		optCase: optCase{
			name:        "slowStart under ClientSideWeightedRoundRobin, from annotations",
			spec:        withStrategy(source.ExtensionServiceSpec{}, "ClientSideWeightedRoundRobin"),
			annotations: map[string]string{"tributary.dev/slow-start-window": "1m"},
			wantErrors: []SubCondition{optSpecErr(`slow start (the "tributary.dev/slow-start-*" annotations) does not apply to spec.loadBalancerPolicy.strategy ` +
				`"ClientSideWeightedRoundRobin": Envoy ramps endpoints up only under RoundRobin and WeightedLeastRequest`)},
		},
	}, {
		optCase: optCase{
			name:     "slowStart from the defaults does not apply under Random",
			spec:     withStrategy(source.ExtensionServiceSpec{}, "Random"),
			settings: defaults(source.ExtensionOptions{SlowStart: &source.SlowStart{Window: xtStr("1m")}}),
		},
	}, {
		optCase: optCase{
			name:       "slowStart without a window",
			spec:       withOptions(source.ExtensionOptions{SlowStart: &source.SlowStart{Aggression: ptr(2.0)}}),
			wantErrors: []SubCondition{optSpecErr(`spec.options.slowStart.window is required with spec.options.slowStart`)},
		},
	}, {
		optCase: optCase{
			name: "slowStart out of range",
			spec: withOptions(source.ExtensionOptions{SlowStart: &source.SlowStart{Window: xtStr("48h"), Aggression: ptr(0.0), MinWeightPercent: ptr(100.5)}}),
			wantErrors: []SubCondition{
				optSpecErr(`spec.options.slowStart.window "48h" must be at most 24h`),
				optSpecErr(`spec.options.slowStart.aggression "0" must be a positive number`),
				optSpecErr(`spec.options.slowStart.minWeightPercent "100.5" must be a percentage from 0 to 100`),
			},
		},
	}, {
		optCase: optCase{
			name: "slowStart numbers that are not finite",
			annotations: map[string]string{
				"tributary.dev/slow-start-window":             "1m",
				"tributary.dev/slow-start-aggression":         "+Inf",
				"tributary.dev/slow-start-min-weight-percent": "NaN",
			},
			wantErrors: []SubCondition{
				optSpecErr(`"tributary.dev/slow-start-aggression" "+Inf" must be a positive number`),
				optSpecErr(`"tributary.dev/slow-start-min-weight-percent" "NaN" must be a percentage from 0 to 100`),
			},
		},
	}, {
		optCase: optCase{
			name: "each group from its own place: spec, annotations, defaults",
			spec: withOptions(source.ExtensionOptions{HTTP2Keepalive: &source.HTTP2Keepalive{Interval: xtStr("10s")}}),
			annotations: map[string]string{
				"tributary.dev/http2-keepalive-interval": "20s",
				"tributary.dev/tcp-keepalive-probes":     "4",
			},
			settings: defaults(source.ExtensionOptions{
				HTTP2Keepalive: &source.HTTP2Keepalive{Interval: xtStr("30s")},
				TCPKeepalive:   &source.TCPKeepalive{Probes: ptr(uint32(9)), Time: xtStr("60s")},
				SlowStart:      &source.SlowStart{Window: xtStr("5s")},
			}),
		},
		want: connectionOptions{
			HTTP2Keepalive: &HTTP2Keepalive{Interval: 10 * time.Second, Timeout: 20 * time.Second},
			TCPKeepalive:   &TCPKeepalive{Probes: 4},
			SlowStart:      &SlowStart{Window: 5 * time.Second, Aggression: 1, MinWeightPercent: 10},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ec := optBuild(t, tc.optCase)
			if ec == nil {
				return
			}
			got := connectionOptions{ec.HTTP2Keepalive, ec.TCPKeepalive, ec.ConnectionLimits, ec.SlowStart}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckExtensionDefaultsConnection: default groups are checked as if
// they applied (HTTP/2 keepalive as on h2, slow start as under round
// robin), so a default is valid wherever it lands.
func TestCheckExtensionDefaultsConnection(t *testing.T) {
	got := CheckExtensionDefaults(source.Settings{ExtensionDefaults: &source.ExtensionOptions{
		HTTP2Keepalive:   &source.HTTP2Keepalive{},
		TCPKeepalive:     &source.TCPKeepalive{Time: xtStr("500ms")},
		ConnectionLimits: &source.ConnectionLimits{MaxConnectionDuration: xtStr("forever")},
		SlowStart:        &source.SlowStart{Window: xtStr("1m"), Aggression: ptr(math.Inf(-1))},
	}})
	want := []string{
		`setting extensionDefaults.http2Keepalive.interval is required with setting extensionDefaults.http2Keepalive`,
		`setting extensionDefaults.tcpKeepalive.time "500ms" must be at least 1s: the socket option counts seconds`,
		`setting extensionDefaults.connectionLimits.maxConnectionDuration "forever" is not a duration such as "5s" or "500ms"`,
		`setting extensionDefaults.slowStart.aggression "-Inf" must be a positive number`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}
