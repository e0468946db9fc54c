package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
)

// RegisterMetrics registers the reconciler's own metrics: how often an
// expectation had to be dropped after its timeout (a lost informer event; the
// reference's cloneset_scale_expectation_leakage).
func (c *Controller) RegisterMetrics(reg prometheus.Registerer) error {
	return kitapp.RegisterCounters(reg, c.ExpectationCounters(c.scaleExp,
		"Pod/PVC creations or deletions whose informer event never arrived before the expectation timeout.")...)
}
