package workload

import (
	"k8s.io/apimachinery/pkg/types"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/expectations"
)

// ExpectationCounters are the counters of expectations dropped after their
// timeout — each a lost informer event (OpenKruise's
// <kind>_scale_expectation_leakage): <Name>_scale_expectation_leakage_total
// for scale (scaleHelp says what it counts) and
// <Name>_resource_version_expectation_timeouts_total for RV.
func (b *Base) ExpectationCounters(scale *expectations.Scale[types.NamespacedName], scaleHelp string) []kitapp.Counter {
	return []kitapp.Counter{
		{Name: b.Spec.Name + "_scale_expectation_leakage_total", Help: scaleHelp,
			Value: func() float64 { return float64(scale.TimedOut()) }},
		{Name: b.Spec.Name + "_resource_version_expectation_timeouts_total",
			Help:  "Own writes the informer cache did not show before the expectation timeout.",
			Value: func() float64 { return float64(b.RV.TimedOut()) }},
	}
}
