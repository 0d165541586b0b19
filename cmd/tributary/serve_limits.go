package main

import (
	"fmt"
	"math"
	"runtime/debug"
	"time"

	"github.com/spf13/pflag"

	"github.com/tributary-dev/tributary/internal/server"
)

// limitFlags are serve's limits against abuse: each bounds what one client
// can make the server hold or do.
type limitFlags struct {
	batchObjects, sessions, concurrentStreams int
	sessionBytes                              byteSize
	// messageSize and inflightBytes are 0 unless given: their defaults
	// follow the process's memory limit (see resolve).
	messageSize, inflightBytes byteSize
	// responseSize bounds what the server sends in one message: a
	// Translate response, or a Sync session's whole output. It does not
	// follow the budget: DecodeAmplification is what a request costs
	// once decoded, not what a response costs to send.
	responseSize            byteSize
	syncStartTimeout        time.Duration
	connectionAge, ageGrace time.Duration
}

// Without GOMEMLIMIT, the requests in flight may cost 1GiB; with it, a
// quarter of it (inflightShareOfMemory), leaving the rest to the sessions
// (--max-sessions × --max-session-bytes), the xDS caches and the runtime.
// The largest message is then what fits in the in-flight budget once
// decoded (server.DecodeAmplification), up to 64MiB: a request the budget
// could never admit would only be refused with "retry later".
const (
	defaultInflightBytes  = 1 << 30
	inflightShareOfMemory = 4
)

// registerLimitFlags adds the limit flags to fs.
func registerLimitFlags(fs *pflag.FlagSet) *limitFlags {
	f := &limitFlags{sessionBytes: server.DefaultMaxSessionBytes, responseSize: server.DefaultMaxMsgSize}
	fs.Var(&f.messageSize, "max-message-size",
		"largest request, a `quantity` (default: what --max-inflight-bytes holds once decoded, 1/32 of it, at most 64Mi)")
	fs.Var(&f.responseSize, "max-response-size",
		"largest response, a `quantity`, and so the largest output of a Translate or of a Sync session; a Translate whose response would be larger fails with RESOURCE_EXHAUSTED, a Sync batch that would make it larger is rejected")
	fs.Var(&f.inflightBytes, "max-inflight-bytes",
		"most memory the requests in flight may cost together, counted as 32 times their size, a `quantity` (default: a quarter of GOMEMLIMIT when it is set, else 1Gi); a request that does not fit is refused at once with RESOURCE_EXHAUSTED")
	fs.IntVar(&f.batchObjects, "max-batch-objects", server.DefaultMaxBatchObjects,
		"most upserts and deletes in one Sync batch; a larger batch is rejected (BatchRejected) and changes nothing")
	fs.IntVar(&f.sessions, "max-sessions", server.DefaultMaxSessions,
		"most Sync sessions open at once in the process; one more ends at once with RESOURCE_EXHAUSTED")
	fs.IntVar(&f.concurrentStreams, "max-concurrent-streams", server.DefaultMaxConcurrentStreams,
		"most calls in flight on one connection; more wait for one to end")
	fs.Var(&f.sessionBytes, "max-session-bytes",
		"most memory one Sync session may hold (an estimate of its objects and output), a `quantity`; a batch that would exceed it is rejected and changes nothing")
	fs.DurationVar(&f.syncStartTimeout, "sync-start-timeout", server.DefaultSyncStartTimeout,
		"how long a Sync stream may take to send its SyncStart before it is ended with DEADLINE_EXCEEDED; it holds no session slot meanwhile")
	fs.DurationVar(&f.connectionAge, "max-connection-age", server.DefaultMaxConnectionAge,
		"age at which a client connection is asked to close (±10%), so clients spread over new replicas; its calls may go on for --max-connection-age-grace")
	fs.DurationVar(&f.ageGrace, "max-connection-age-grace", server.DefaultMaxConnectionAgeGrace,
		"how long calls may go on on a connection asked to close before it is closed; a Sync session still on it then ends with UNAVAILABLE and its client reconnects")
	return f
}

// check rejects limits that would turn a feature off or mean "default".
func (f *limitFlags) check() error {
	for _, l := range []struct {
		name  string
		value int64
	}{
		{"max-batch-objects", int64(f.batchObjects)}, {"max-sessions", int64(f.sessions)},
		{"max-concurrent-streams", int64(f.concurrentStreams)}, {"max-session-bytes", int64(f.sessionBytes)},
		{"sync-start-timeout", int64(f.syncStartTimeout)}, {"max-connection-age", int64(f.connectionAge)},
		{"max-connection-age-grace", int64(f.ageGrace)}, {"max-response-size", int64(f.responseSize)},
	} {
		if l.value <= 0 {
			return fmt.Errorf("--%s must be positive, not %d", l.name, l.value)
		}
	}
	return nil
}

// resolve fills in the defaults of --max-inflight-bytes and
// --max-message-size from memoryLimit (GOMEMLIMIT, math.MaxInt64 when
// unset), and refuses a message size the in-flight budget could never
// admit.
func (f *limitFlags) resolve(memoryLimit int64) error {
	if f.inflightBytes == 0 {
		f.inflightBytes = defaultInflightBytes
		if memoryLimit != math.MaxInt64 {
			f.inflightBytes = byteSize(min(memoryLimit/inflightShareOfMemory, math.MaxInt32))
		}
	}
	if f.messageSize == 0 {
		f.messageSize = byteSize(min(int64(f.inflightBytes)/server.DecodeAmplification, server.DefaultMaxMsgSize))
	}
	if need := f.messageSize * server.DecodeAmplification; need > f.inflightBytes {
		return fmt.Errorf("--max-message-size %s needs --max-inflight-bytes of at least %s (%d times the message size: what a message costs once decoded), not %s",
			&f.messageSize, &need, server.DecodeAmplification, &f.inflightBytes)
	}
	return nil
}

// memoryLimit is the process's GOMEMLIMIT, or math.MaxInt64 when unset.
func memoryLimit() int64 { return debug.SetMemoryLimit(-1) }
