package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
)

// RegisterMetrics registers the reconciler's own metrics: the node
// eligibility verdicts computed (with the placement cache they follow node
// and template changes, not syncs: OpenKruise #1011) and the expectations
// dropped after their timeout (lost informer events).
func (c *Controller) RegisterMetrics(reg prometheus.Registerer) error {
	return kitapp.RegisterCounters(reg, append(c.ExpectationCounters(c.deletes, "Pod deletions whose informer event never arrived before the expectation timeout."),
		kitapp.Counter{Name: "daemonset_node_eligibility_evaluations_total",
			Help:  "Node eligibility verdicts computed (one per DaemonSet generation and node change).",
			Value: func() float64 { return float64(c.EligibilityEvaluations()) }})...)
}
