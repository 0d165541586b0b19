// Package testproc runs the tributary binary for tests of several
// packages: Build compiles it once per test binary, Start runs it and reads
// back the addresses it serves on, Get fetches a page of its HTTP endpoints,
// Buffer holds output that the program's goroutines write while the test
// reads it, WaitFor waits for what happens asynchronously, and Tool finds
// an external program that `make tools` installs (or skips the test outside
// CI when it is missing).
//
// It is an ordinary package rather than a _test file so that tests of
// different packages can import it; only tests import it.
package testproc
