// Package cputime reads the CPU time this process has used, for benchmarks
// that report it beside ns/op: a translation that uses both CPUs takes
// half the wall time it costs, and the CPU time is what the comparison
// with another system (or a machine's capacity) needs.
package cputime

import (
	"syscall"
	"time"
)

// OfProcess returns the CPU time this process has used so far, user and
// system, every thread included (the garbage collector's too). It returns
// 0 if the kernel cannot say, which makes a per-operation figure built
// from it visibly wrong rather than plausibly so.
func OfProcess() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PerOp returns the CPU time used since start (an earlier OfProcess)
// divided among ops operations, in nanoseconds, as a benchmark reports
// it under the unit "cpu-ns/op".
func PerOp(start time.Duration, ops int) float64 {
	if ops <= 0 {
		return 0
	}
	return float64(OfProcess()-start) / float64(ops)
}
