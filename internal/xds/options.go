package xds

import (
	"log/slog"
	"time"
)

// Options configure a Publisher; zero values mean the documented defaults.
type Options struct {
	// WithdrawGrace is how long a node group's resources stay published
	// after the session that published them ends (or is taken over), so
	// that a client reconnecting within it, whose new session publishes the
	// same resources again, causes no change at all for the group's xDS
	// clients. 0 withdraws at once.
	WithdrawGrace time.Duration
	// Logger receives NACKs, resources refused before publishing, and
	// withdrawals; nil means slog.Default().
	Logger *slog.Logger
	// Metrics, when set, is told of every NACK and every refused resource.
	Metrics Metrics
	// Limits bound what xDS clients can make the server hold.
	Limits Limits
}

// Limits bound what xDS clients can make the server hold; zero values mean
// the defaults, which fit the deployment's 1 GiB pod. A stream over a limit
// ends with a status that names the limit (RESOURCE_EXHAUSTED, or
// INVALID_ARGUMENT for a node that is too long); other streams go on.
type Limits struct {
	// MaxStreams bounds the open xDS streams, all clients together
	// (default 4096).
	MaxStreams int
	// MaxNamesPerStream bounds the names one stream subscribes to, per
	// type (default 50,000).
	MaxNamesPerStream int
	// MaxNames bounds the names all streams subscribe to together
	// (default 1,000,000).
	MaxNames int
	// MaxNodeLength bounds node.id and node.cluster, in bytes (default
	// 1024).
	MaxNodeLength int
}

// The defaults of Limits.
const (
	DefaultMaxStreams        = 4096
	DefaultMaxNamesPerStream = 50_000
	DefaultMaxNames          = 1_000_000
	DefaultMaxNodeLength     = 1024
)

// Metrics receives the events an operator counts.
type Metrics interface {
	// Nack is called once per rejected response.
	Nack(n Nack)
	// Refused is called when a resource fails validation and is not
	// published (a translator bug: the translator promises valid output).
	Refused(group, typeURL, name string, err error)
	// Sent is called for every response sent, with the number of
	// resources of typeURL it carries.
	Sent(typeURL string, n int)
	// Streams is called with +1 when a stream first asks for a type and
	// -1 when that stream closes: the streams open now, by variant and
	// type, are the running sum.
	Streams(v Variant, typeURL string, delta int)
	// ChangeToSend is called for every response sent, with the time from
	// the oldest change it carries being published to its sending.
	ChangeToSend(typeURL string, d time.Duration)
	// SendToAck is called for every response a client accepts, with the
	// time from its sending to the ACK.
	SendToAck(typeURL string, d time.Duration)
}
