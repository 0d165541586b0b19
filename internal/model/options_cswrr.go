package model

// clientSideWeightedRoundRobin is the tuning of strategy
// ClientSideWeightedRoundRobin: non-nil exactly when lb is that strategy.
func (b *Builder) clientSideWeightedRoundRobin(opts *optionsInForce, lb LoadBalancer, cond *Condition) *ClientSideWeightedRoundRobin {
	if lb != LoadBalancerClientSideWeightedRoundRobin {
		return nil
	}
	return &ClientSideWeightedRoundRobin{}
}
