package controller

import "github.com/prometheus/client_golang/prometheus"

// RegisterMetrics registers the reconciler's own metrics: the node
// eligibility verdicts computed (with the placement cache they follow node
// and template changes, not syncs: OpenKruise #1011) and the expectations
// dropped after their timeout (lost informer events).
func (c *Controller) RegisterMetrics(reg prometheus.Registerer) error {
	collectors := []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "daemonset_node_eligibility_evaluations_total",
			Help: "Node eligibility verdicts computed (one per DaemonSet generation and node change).",
		}, func() float64 { return float64(c.EligibilityEvaluations()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "daemonset_scale_expectation_leakage_total",
			Help: "Pod deletions whose informer event never arrived before the expectation timeout.",
		}, func() float64 { return float64(c.deletes.TimedOut()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "daemonset_resource_version_expectation_timeouts_total",
			Help: "Own writes the informer cache did not show before the expectation timeout.",
		}, func() float64 { return float64(c.rvExp.TimedOut()) }),
	}
	for _, col := range collectors {
		if err := reg.Register(col); err != nil {
			return err
		}
	}
	return nil
}
