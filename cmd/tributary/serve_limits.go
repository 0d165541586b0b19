package main

import (
	"flag"
	"fmt"

	"github.com/tributary-dev/tributary/internal/server"
)

// limitFlags are serve's limits against abuse (besides --max-message-size):
// each bounds what one client can make the server hold or do.
type limitFlags struct {
	batchObjects, sessions, concurrentStreams int
	sessionBytes                              byteSize
}

// registerLimitFlags adds --max-batch-objects, --max-sessions,
// --max-concurrent-streams and --max-session-bytes to fs.
func registerLimitFlags(fs *flag.FlagSet) *limitFlags {
	f := &limitFlags{sessionBytes: server.DefaultMaxSessionBytes}
	fs.IntVar(&f.batchObjects, "max-batch-objects", server.DefaultMaxBatchObjects,
		"most upserts and deletes in one Sync batch; a larger batch is rejected (BatchRejected) and changes nothing")
	fs.IntVar(&f.sessions, "max-sessions", server.DefaultMaxSessions,
		"most Sync sessions open at once in the process; one more ends at once with RESOURCE_EXHAUSTED")
	fs.IntVar(&f.concurrentStreams, "max-concurrent-streams", server.DefaultMaxConcurrentStreams,
		"most calls in flight on one connection; more wait for one to end")
	fs.Var(&f.sessionBytes, "max-session-bytes",
		"most memory one Sync session may hold (an estimate of its objects and output): a `size` in bytes, or with a KiB, MiB or GiB suffix (default 512MiB); a batch that would exceed it is rejected and changes nothing")
	return f
}

// check rejects limits that would turn a feature off or mean "default".
func (f *limitFlags) check() error {
	for _, l := range []struct {
		name  string
		value int
	}{
		{"max-batch-objects", f.batchObjects}, {"max-sessions", f.sessions},
		{"max-concurrent-streams", f.concurrentStreams}, {"max-session-bytes", int(f.sessionBytes)},
	} {
		if l.value <= 0 {
			return fmt.Errorf("--%s must be positive, not %d", l.name, l.value)
		}
	}
	return nil
}
