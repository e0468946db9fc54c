package wiring

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/featuregate"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
)

// metricsRegistrar is a reconciler with collectors of its own.
type metricsRegistrar interface {
	RegisterMetrics(prometheus.Registerer) error
}

// Workload describes a binary that runs one reconciler built from Deps, with
// the --expectation-timeout flag (expectationHelp says what a create or
// delete that never shows up may block) — the shape of cloneset-,
// statefulset- and daemonset-controller. kind names the reconciler in
// errors. A reconciler with a RegisterMetrics method has it called with the
// binary's registry.
func Workload[C kitapp.Controller](name string, gates []featuregate.Feature, kind, expectationHelp string, newReconciler func(Deps) (C, error)) kitapp.Binary {
	timeout := NewExpectationTimeout(expectationHelp)
	setup := func(ctx context.Context, env *kitapp.Env) error {
		cl, err := New(ctx, env)
		if err != nil {
			return err
		}
		d := cl.Deps(env)
		d.ExpectationTimeout = timeout.Value
		c, err := newReconciler(d)
		if err != nil {
			return fmt.Errorf("set up %s reconciler: %w", kind, err)
		}
		if m, ok := any(c).(metricsRegistrar); ok && env.Metrics != nil {
			if err := m.RegisterMetrics(env.Metrics); err != nil {
				return fmt.Errorf("register metrics: %w", err)
			}
		}
		env.AddController(c)
		return nil
	}
	return kitapp.Binary{Name: name, Gates: gates, AddFlags: timeout.AddFlags, Setup: setup}
}
