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
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// A webhook binary registers --webhook-* and its own flags, accepts
// EnableExternalCerts, runs its reconcilers then its webhooks with the
// parsed options, refuses EnableExternalCerts without --webhook-cert-dir and
// runs nothing when Off gives a reason.
func TestWebhook(t *testing.T) {
	var calls []string
	var got kitwebhook.Options
	var own string
	b := WebhookBinary{
		Name:     "x-controller",
		Kind:     "X",
		Gates:    []featuregate.Feature{features.PodWebhook},
		AddFlags: func(fs *pflag.FlagSet) { fs.StringVar(&own, "own", "", "") },
		Reconcilers: func(*kitapp.Env, *Clients) error {
			calls = append(calls, "reconcilers")
			return nil
		},
		Webhooks: func(_ *kitapp.Env, _ *Clients, wh kitwebhook.Options) error {
			calls = append(calls, "webhooks")
			got = wh
			return nil
		},
	}
	env := func(gates ...string) *kitapp.Env {
		g := features.MustNewGate(Webhook(b).Gates...)
		for _, s := range gates {
			require.NoError(t, g.Set(s))
		}
		return &kitapp.Env{Env: shell.Env{Name: "x-controller", RESTConfig: &rest.Config{Host: "https://127.0.0.1:1"}, Gates: g}, KubeClient: fake.NewClientset()}
	}
	bin := Webhook(b)
	assert.ElementsMatch(t, []featuregate.Feature{features.PodWebhook, features.EnableExternalCerts}, bin.Gates)
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	bin.AddFlags(fs)
	require.NoError(t, fs.Parse([]string{"--webhook-port=9555", "--own=v"}))
	require.NoError(t, bin.Setup(context.Background(), env()))
	assert.Equal(t, []string{"reconcilers", "webhooks"}, calls)
	assert.Equal(t, 9555, got.Port)
	assert.Equal(t, "x-controller-webhook", got.ServiceName)
	assert.Equal(t, "v", own)

	assert.ErrorContains(t, bin.Setup(context.Background(), env("EnableExternalCerts=true")), "EnableExternalCerts needs --webhook-cert-dir")

	b.Webhooks = func(*kitapp.Env, *Clients, kitwebhook.Options) error { return errors.New("boom") }
	assert.ErrorContains(t, Webhook(b).Setup(context.Background(), env()), "set up X webhook: boom")

	calls = nil
	b.Off = func(featuregate.FeatureGate) string { return "off" }
	require.NoError(t, Webhook(b).Setup(context.Background(), env()))
	assert.Empty(t, calls)
}
