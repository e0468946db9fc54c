package wiring

import (
	"context"
	"errors"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/app/shell"
	"github.com/flotilla-dev/flotilla/kit/features"
)

// A reconciler binary takes exactly its gates and flags (no --webhook-*, no EnableExternalCerts), runs its
// reconcilers with the binary's clients, and nothing at all while OffUnless's gate is off.
func TestReconcilers(t *testing.T) {
	var calls []*Clients
	var own string
	b := ReconcilerBinary{
		Name:     "x-controller",
		Gates:    []featuregate.Feature{features.KruiseDaemon},
		AddFlags: func(fs *pflag.FlagSet) { fs.StringVar(&own, "own", "", "") },
		Off:      OffUnless(features.KruiseDaemon),
		Reconcilers: func(_ *kitapp.Env, cl *Clients) error {
			calls = append(calls, cl)
			return nil
		},
	}
	env := func(gates ...string) *kitapp.Env {
		g := features.MustNewGate(b.Gates...)
		for _, s := range gates {
			require.NoError(t, g.Set(s))
		}
		return &kitapp.Env{Env: shell.Env{Name: "x-controller", RESTConfig: &rest.Config{Host: "https://127.0.0.1:1"}, Gates: g}, KubeClient: fake.NewClientset()}
	}
	bin := Reconcilers(b)
	assert.Equal(t, []featuregate.Feature{features.KruiseDaemon}, bin.Gates)
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	bin.AddFlags(fs)
	require.NoError(t, fs.Parse([]string{"--own=v"}))
	assert.Equal(t, "v", own)
	assert.Nil(t, fs.Lookup("webhook-port"))

	require.NoError(t, bin.Setup(context.Background(), env()))
	assert.Empty(t, calls, "KruiseDaemon at its default (off): nothing runs")
	assert.Equal(t, "KruiseDaemon is off", OffUnless(features.KruiseDaemon)(env().Gates))

	require.NoError(t, bin.Setup(context.Background(), env("KruiseDaemon=true")))
	require.Len(t, calls, 1)
	assert.NotNil(t, calls[0].Client, "the binary's clients")

	b.Reconcilers = func(*kitapp.Env, *Clients) error { return errors.New("boom") }
	assert.EqualError(t, Reconcilers(b).Setup(context.Background(), env("KruiseDaemon=true")), "boom")
}
