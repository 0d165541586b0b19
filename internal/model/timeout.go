package model

import (
	"fmt"
	"time"

	"github.com/tributary-dev/tributary/internal/source"
)

// timeoutSetting is one timeout written in Contour's syntax, parsed.
//
// The zero value means "unset: use the default". A set timeout is either a
// positive duration or, with duration zero, disabled ("infinity").
type timeoutSetting struct {
	set      bool
	duration time.Duration
}

// disabled reports whether the timeout was written as infinity/infinite.
func (t timeoutSetting) disabled() bool { return t.set && t.duration == 0 }

// String gives the canonical spelling: "" when unset, "infinity" when
// disabled, else the Go duration ("1h30m0s" for "1.5h").
func (t timeoutSetting) String() string {
	switch {
	case !t.set:
		return ""
	case t.disabled():
		return "infinity"
	default:
		return t.duration.String()
	}
}

// parseTimeout reads Contour's timeout syntax: "" and any spelling of zero
// mean unset, "infinity" and "infinite" mean disabled, anything else must be
// a Go duration. Error texts are Contour's, so statuses read the same.
//
// Unlike Contour's parser, a negative duration is an error: Contour's CRD
// pattern keeps negatives out at the API server, which this service does not
// have, and Envoy refuses negative durations.
func parseTimeout(s string) (timeoutSetting, error) {
	switch s {
	case "":
		return timeoutSetting{}, nil
	case "infinity", "infinite":
		return timeoutSetting{set: true}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return timeoutSetting{}, fmt.Errorf("unable to parse timeout string %s: %s", source.Quote(s), source.Truncate(err.Error()))
	}
	if d < 0 {
		return timeoutSetting{}, fmt.Errorf("unable to parse timeout string %s: negative durations are not allowed", source.Quote(s))
	}
	if d == 0 {
		return timeoutSetting{}, nil
	}
	return timeoutSetting{set: true, duration: d}, nil
}

// extensionTimeouts are the parsed spec.timeoutPolicy of an ExtensionService.
type extensionTimeouts struct {
	response       timeoutSetting
	idleConnection timeoutSetting
}

// parseTimeoutPolicy parses the three timeouts in Contour's order and stops
// at the first failure, as Contour does, so a status carries one timeout
// error at most. spec.timeoutPolicy.idle is parsed only to be reported: it
// has no place in a Cluster.
func parseTimeoutPolicy(tp *source.TimeoutPolicy) (extensionTimeouts, error) {
	var out extensionTimeouts
	if tp == nil {
		return out, nil
	}
	var err error
	if out.response, err = parseTimeout(tp.Response); err != nil {
		return extensionTimeouts{}, fmt.Errorf("error parsing response timeout: %w", err)
	}
	if _, err = parseTimeout(tp.Idle); err != nil {
		return extensionTimeouts{}, fmt.Errorf("error parsing idle timeout: %w", err)
	}
	if out.idleConnection, err = parseTimeout(tp.IdleConnection); err != nil {
		return extensionTimeouts{}, fmt.Errorf("error parsing idle connection timeout: %w", err)
	}
	return out, nil
}
