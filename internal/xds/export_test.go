package xds

// WithdrawStale ends group's grace period now, as its timer would.
func WithdrawStale(p *Publisher, group string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.groups[group]
	if g == nil {
		return
	}
	if g.withdraw != nil {
		g.withdraw.Stop()
		g.withdraw = nil
	}
	p.withdrawLocked(g)
}

// EndHold ends p's hold on groups not published yet now, as its timer
// would (see NewPublisher).
func EndHold(p *Publisher) { p.endHold() }
