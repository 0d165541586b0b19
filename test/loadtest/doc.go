// Package loadtest holds the proof that tributary serve holds up under load
// and faults, run against the real binary as separate processes on
// loopback: the Sync soak (200 concurrent sessions under endpoint churn,
// each ending with exactly the output a fresh translation of its objects
// gives, in bounded memory), the faults (a client vanishing mid-batch, a
// slow reader, SIGTERM with streams open, junk bytes and oversized
// messages), and a short ghz run on Translate. The package has no code of
// its own outside tests; ghzreport reads ghz's JSON report for the tests and
// for scripts/load-translate.sh.
package loadtest
