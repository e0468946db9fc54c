package wiring

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/app/shell"
)

type fakeReconciler struct {
	deps       Deps
	registered bool
}

func (f *fakeReconciler) Name() string                   { return "fake" }
func (f *fakeReconciler) Run(context.Context, int) error { return nil }
func (f *fakeReconciler) RegisterMetrics(prometheus.Registerer) error {
	f.registered = true
	return nil
}

// A workload binary passes --expectation-timeout into the Deps it builds its
// reconciler from, registers the reconciler's metrics and the reconciler.
func TestWorkload(t *testing.T) {
	var got *fakeReconciler
	b := Workload("x-controller", nil, "X", "what a lost event blocks", func(d Deps) (*fakeReconciler, error) {
		got = &fakeReconciler{deps: d}
		return got, nil
	})
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	b.AddFlags(fs)
	require.NoError(t, fs.Parse([]string{"--expectation-timeout=7s"}))
	env := &kitapp.Env{Env: shell.Env{Name: "x-controller", RESTConfig: &rest.Config{Host: "https://127.0.0.1:1"},
		Metrics: prometheus.NewRegistry()}, KubeClient: fake.NewClientset()}
	require.NoError(t, b.Setup(context.Background(), env))
	require.NotNil(t, got)
	assert.Equal(t, 7*time.Second, got.deps.ExpectationTimeout)
	assert.True(t, got.registered)
	assert.Equal(t, []string{"fake"}, env.Controllers())

	failing := Workload("x-controller", nil, "X", "", func(Deps) (*fakeReconciler, error) { return nil, errors.New("boom") })
	err := failing.Setup(context.Background(), &kitapp.Env{Env: shell.Env{Name: "x-controller", RESTConfig: &rest.Config{Host: "https://127.0.0.1:1"}}, KubeClient: fake.NewClientset()})
	assert.ErrorContains(t, err, "set up X reconciler: boom")
}

// AddReconciler builds a reconciler from any Deps type and adds it, or says
// what failed to set up.
func TestAddReconciler(t *testing.T) {
	type ownDeps struct {
		Deps
		Extra string
	}
	env := &kitapp.Env{Env: shell.Env{Name: "x-controller"}}
	var got ownDeps
	require.NoError(t, AddReconciler(env, "X reconciler", func(d ownDeps) (*fakeReconciler, error) {
		got = d
		return &fakeReconciler{}, nil
	}, ownDeps{Extra: "y"}))
	assert.Equal(t, "y", got.Extra)
	assert.Equal(t, []string{"fake"}, env.Controllers())

	err := AddReconciler(env, "the X refusal", func(ownDeps) (*fakeReconciler, error) { return nil, errors.New("boom") }, ownDeps{})
	assert.EqualError(t, err, "set up the X refusal: boom")
	assert.Equal(t, []string{"fake"}, env.Controllers(), "nothing added on error")
}

// Reconciler registers the one reconciler built from the binary's own Deps, or says what failed to set up.
func TestReconciler(t *testing.T) {
	newEnv := func() *kitapp.Env {
		return &kitapp.Env{Env: shell.Env{Name: "x-controller", RESTConfig: &rest.Config{Host: "https://127.0.0.1:1"}},
			KubeClient: fake.NewClientset()}
	}
	var got *fakeReconciler
	b := Reconcilers(ReconcilerBinary{Name: "x-controller", Reconcilers: Reconciler("X reconciler", func(d Deps) (*fakeReconciler, error) {
		got = &fakeReconciler{deps: d}
		return got, nil
	})})
	env := newEnv()
	require.NoError(t, b.Setup(context.Background(), env))
	require.NotNil(t, got)
	assert.Same(t, env.KubeClient, got.deps.Kube, "built from the binary's clients")
	assert.Equal(t, []string{"fake"}, env.Controllers())

	failing := Reconcilers(ReconcilerBinary{Name: "x-controller", Reconcilers: Reconciler("X reconciler", func(Deps) (*fakeReconciler, error) {
		return nil, errors.New("boom")
	})})
	env = newEnv()
	assert.EqualError(t, failing.Setup(context.Background(), env), "set up X reconciler: boom")
	assert.Empty(t, env.Controllers())
}
