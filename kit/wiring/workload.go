package wiring

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/featuregate"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/predownload"
	"github.com/flotilla-dev/flotilla/kit/workload"
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
		return AddReconciler(env, kind+" reconciler", newReconciler, d)
	}
	return kitapp.Binary{Name: name, Gates: gates, AddFlags: timeout.AddFlags, Setup: setup}
}

// AddReconciler builds a reconciler from d with newReconciler and adds it to
// env's controllers (run by the leader); what names it in the error ("set up
// <what>: …"). A reconciler with a RegisterMetrics method has it called
// with the binary's registry first. D is Deps or a controller's own Deps
// that embeds it.
func AddReconciler[D any, C kitapp.Controller](env *kitapp.Env, what string, newReconciler func(D) (C, error), d D) error {
	c, err := newReconciler(d)
	if err != nil {
		return fmt.Errorf("set up %s: %w", what, err)
	}
	if m, ok := any(c).(metricsRegistrar); ok && env.Metrics != nil {
		if err := m.RegisterMetrics(env.Metrics); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
	}
	env.AddController(c)
	return nil
}

// Reconciler is the Reconcilers of a binary (WebhookBinary, ReconcilerBinary) that runs one reconciler built
// from the binary's plain Deps: AddReconciler(env, what, newReconciler, cl.Deps(env)).
func Reconciler[C kitapp.Controller](what string, newReconciler func(Deps) (C, error)) func(*kitapp.Env, *Clients) error {
	return func(env *kitapp.Env, cl *Clients) error { return AddReconciler(env, what, newReconciler, cl.Deps(env)) }
}

// Workload returns the Kubernetes side of d, what kit/workload's skeleton
// is built from.
func (d Deps) Workload() workload.Deps {
	return workload.Deps{
		Kube: d.Kube, KubeInformers: d.KubeInformers, Namespace: d.Namespace, Gates: d.Gates, Clock: d.Clock, Recorder: d.Recorder,
		QueueOptions: d.QueueOptions, QueueConfig: d.QueueConfig, ExpectationTimeout: d.ExpectationTimeout, PodControl: d.PodControl,
	}
}

// NewBase builds the kit/workload skeleton of a pod workload from d
// (workload.New over d.Workload()) and, when spec.PreDownload names a gate
// that is on, its image pre-download (ImagePullJobs into Base.Jobs).
func (d Deps) NewBase(spec workload.Spec, sync func(context.Context, types.NamespacedName) error) (*workload.Base, error) {
	b, err := workload.New(d.Workload(), spec, sync)
	if err != nil {
		return nil, err
	}
	if spec.PreDownload != "" && b.Gates.Enabled(spec.PreDownload) {
		if b.Jobs, err = d.ImagePullJobs(b.Watch); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// ImagePullJobs builds the ImagePullJob side of a workload's image
// pre-download (kit/predownload) over d's clients and Flotilla informer
// factory; watch (the reconciler's kit/workload Base.Watch) has the
// reconciler wait for the ImagePullJob informer.
func (d Deps) ImagePullJobs(watch func(cache.SharedIndexInformer, cache.ResourceEventHandler, string) error) (*predownload.Control, error) {
	inf := d.Informers.Apps().V1alpha1().ImagePullJobs().Informer()
	jobs, err := predownload.NewControl(d.Kube, func(ns string) predownload.JobClient { return d.Client.AppsV1alpha1().ImagePullJobs(ns) }, inf, d.Recorder)
	if err != nil {
		return nil, err
	}
	return jobs, watch(inf, nil, "ImagePullJobs")
}
