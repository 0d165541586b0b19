package model

// healthCheck validates the healthCheck group in force; nil without one.
func (b *Builder) healthCheck(opts *optionsInForce, cond *Condition) *HealthCheck {
	return nil
}

// outlierDetection validates the outlierDetection group in force; nil
// without one.
func (b *Builder) outlierDetection(opts *optionsInForce, cond *Condition) *OutlierDetection {
	return nil
}
