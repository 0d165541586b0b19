package xds

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"
)

// Publisher serves Sync sessions' Envoy resources over xDS: every node group
// (see NodeGroup) has its own Clusters, ClusterLoadAssignments and
// Listeners, which one Publication at a time changes. It is safe for
// concurrent use.
//
// A Publisher checks every resource before publishing it (ValidateAll, plus
// envoy.CheckClusterLoadAssignment for ClusterLoadAssignments): a client
// that NACKs keeps its last good configuration, but other clients would take
// the bad one, so a resource that fails is not published and the last good
// version of it, if any, keeps serving.
type Publisher struct {
	cache   *cache
	grace   time.Duration
	logger  *slog.Logger
	metrics Metrics

	// ctx ends every xDS stream when cancelled (Shutdown).
	ctx    context.Context
	cancel context.CancelFunc

	// hold ends the cache's hold (see cache.holding) when the first grace
	// period after NewPublisher ends; nil without one.
	hold *time.Timer

	mu     sync.Mutex
	groups map[string]*group
}

// group is what a Publisher holds for one node group.
type group struct {
	name string
	// owner is the live Publication, if any.
	owner *Publication
	// stale holds, by type URL, the names no live Publication has
	// published: those of a Publication that ended or was taken over,
	// which its successor has not published again (yet). They are
	// withdrawn when the grace period ends. What is published, and in which
	// version, the cache holds.
	stale map[string]map[string]struct{}
	// withdraw, while set, will withdraw the stale resources.
	withdraw *time.Timer
}

// NewPublisher returns a Publisher with no groups.
//
// For the first grace period (Options.WithdrawGrace) it holds back, from
// the clients of a group that no Publication has published to yet, every
// answer that would say a resource does not exist: a server that has just
// started, after a restart or as a new replica, does not know what the
// sessions of the server before it published, which that server would
// have kept serving for the grace period after they ended. Their sessions
// reconnect to it and publish the group again: its clients are then sent
// the group's state as published. A group published once is never held
// again; when the period ends, every client still held is answered as it
// would have been without the hold.
func NewPublisher(opts Options) *Publisher {
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Publisher{
		grace:   max(opts.WithdrawGrace, 0),
		logger:  logger,
		metrics: opts.Metrics,
		ctx:     ctx,
		cancel:  cancel,
		groups:  map[string]*group{},
	}
	p.cache = newCache(newVersionPrefix(), opts.Limits, logger, opts.Metrics, p.nacked, p.grace > 0)
	if p.grace > 0 {
		p.hold = time.AfterFunc(p.grace, p.endHold)
	}
	return p
}

// maxHeldGroupsLogged bounds the groups the end of the hold's log line
// names.
const maxHeldGroupsLogged = 10

// endHold ends the hold of groups not published to yet (see NewPublisher).
func (p *Publisher) endHold() {
	held := p.cache.endHold()
	if len(held) == 0 {
		return
	}
	// Their clients are now told the groups hold nothing: worth a line,
	// as a session that should have restored them has not.
	p.logger.Warn("no session has published to these xDS node groups since the server started; their clients are answered that they hold nothing",
		"groups", len(held), "names", clipAll(held[:min(len(held), maxHeldGroupsLogged)]), "waited", p.grace)
}

// clipAll clips every string of ss (see clip).
func clipAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = clip(s)
	}
	return out
}

// newVersionPrefix returns "<16 random hex digits>-": State-of-the-World
// versions start with it, so versions of a restarted server never repeat
// those of an earlier one (the cache's counter restarts at 1).
func newVersionPrefix() string {
	var id [8]byte
	_, _ = rand.Read(id[:]) // never fails (it crashes the program instead)
	return hex.EncodeToString(id[:]) + "-"
}

// refused logs and counts a resource that failed validation.
func (p *Publisher) refused(group, typeURL, name string, err error) {
	p.logger.Error("xDS resource failed validation and was not published; the last good version keeps serving",
		"group", group, "type", typeURL, "name", name, "error", err)
	if p.metrics != nil {
		p.metrics.Refused(group, typeURL, name, err)
	}
}

// maxNackNamesLogged bounds the names a NACK's log line lists.
const maxNackNamesLogged = 10

// nacked logs and counts a NACK and hands it to the group's owner.
func (p *Publisher) nacked(n Nack) {
	// A rejected response may hold thousands of resources: the line names
	// the first few (the Sync session gets them all).
	p.logger.Warn("xDS client rejected resources (NACK)",
		"node", n.NodeID, "group", n.NodeGroup, "type", n.TypeURL, "resources", len(n.ResourceNames),
		"names", n.ResourceNames[:min(len(n.ResourceNames), maxNackNamesLogged)],
		"version", n.RejectedVersion, "error", n.ErrorDetail)
	if p.metrics != nil {
		p.metrics.Nack(n)
	}
	p.mu.Lock()
	var onNack func(Nack)
	if g := p.groups[n.NodeGroup]; g != nil && g.owner != nil {
		onNack = g.owner.opts.OnNack
	}
	p.mu.Unlock()
	if onNack != nil {
		onNack(n)
	}
}

// Shutdown ends every xDS stream and stops pending withdrawals; the
// Publisher serves nothing afterwards. Call it before stopping the gRPC
// server, whose GracefulStop would otherwise wait for the streams forever.
func (p *Publisher) Shutdown() {
	p.cancel()
	if p.hold != nil {
		p.hold.Stop()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, g := range p.groups {
		if g.withdraw != nil {
			g.withdraw.Stop()
			g.withdraw = nil
		}
	}
}
