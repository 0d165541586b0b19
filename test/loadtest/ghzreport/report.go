// Package ghzreport reads the JSON report of ghz (github.com/bojand/ghz,
// `ghz -O json`) and reduces it to what BENCHMARKS.md records: throughput,
// the median and 99th percentile latency, and every call that failed.
package ghzreport

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// Report is the part of ghz's JSON report that load results rest on. ghz
// writes durations as integer nanoseconds.
type Report struct {
	Count int `json:"count"`
	// Total is the run's wall time.
	Total   time.Duration `json:"total"`
	Average time.Duration `json:"average"`
	Fastest time.Duration `json:"fastest"`
	Slowest time.Duration `json:"slowest"`
	RPS     float64       `json:"rps"`
	// EndReason is "normal" once -n calls are done, "timeout" when -z
	// elapsed.
	EndReason           string           `json:"endReason"`
	LatencyDistribution []LatencyPercent `json:"latencyDistribution"`
	// StatusCodeDistribution counts calls by gRPC code name ("OK", ...).
	StatusCodeDistribution map[string]int `json:"statusCodeDistribution"`
	// ErrorDistribution counts failed calls by error message.
	ErrorDistribution map[string]int `json:"errorDistribution"`
	Options           struct {
		Call        string `json:"call"`
		Host        string `json:"host"`
		Concurrency int    `json:"concurrency"`
		Connections int    `json:"connections"`
	} `json:"options"`
}

// LatencyPercent is one point of the latency distribution: Percentage per
// cent of the calls took at most Latency.
type LatencyPercent struct {
	Percentage int           `json:"percentage"`
	Latency    time.Duration `json:"latency"`
}

// Read decodes a report. A report without calls or without a latency
// distribution is an error: the run measured nothing.
func Read(r io.Reader) (*Report, error) {
	var rep Report
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return nil, fmt.Errorf("ghz report: %w", err)
	}
	if rep.Count == 0 || len(rep.LatencyDistribution) == 0 {
		return nil, fmt.Errorf("ghz report: no calls measured (count %d, %d latency percentiles)", rep.Count, len(rep.LatencyDistribution))
	}
	return &rep, nil
}

// Percentile returns the latency at percentage p (50, 99, ...), or false
// when ghz did not report it.
func (r *Report) Percentile(p int) (time.Duration, bool) {
	for _, l := range r.LatencyDistribution {
		if l.Percentage == p {
			return l.Latency, true
		}
	}
	return 0, false
}

// Failed counts the calls that did not end with OK.
func (r *Report) Failed() int {
	return r.Count - r.StatusCodeDistribution["OK"]
}

// Errors lists each distinct failure with its count, sorted, one per line.
func (r *Report) Errors() string {
	var b strings.Builder
	for _, msg := range slices.Sorted(maps.Keys(r.ErrorDistribution)) {
		fmt.Fprintf(&b, "%d× %s\n", r.ErrorDistribution[msg], msg)
	}
	return b.String()
}

// Summary is one line: calls, throughput, p50 and p99, failures.
func (r *Report) Summary() string {
	p50, _ := r.Percentile(50)
	p99, _ := r.Percentile(99)
	return fmt.Sprintf("%d calls in %v (concurrency %d): %.0f requests/s, p50 %v, p99 %v, %d failed",
		r.Count, r.Total.Round(time.Millisecond), r.Options.Concurrency, r.RPS, roundLatency(p50), roundLatency(p99), r.Failed())
}

// roundLatency keeps three significant digits or so, enough for a table.
func roundLatency(d time.Duration) time.Duration {
	switch {
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
