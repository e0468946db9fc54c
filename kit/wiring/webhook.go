package wiring

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
	"github.com/flotilla-dev/flotilla/kit/features"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// WebhookBinary describes a binary that runs reconcilers on the leader and
// admission webhooks on every replica — the shape of pub- and
// sidecarset-controller. Webhook turns it into the kitapp.Binary.
type WebhookBinary struct {
	Name string
	// Kind names what the webhooks admit, in errors ("set up <Kind>
	// webhook: ...").
	Kind string
	// Gates the binary accepts in --feature-gates; Webhook adds
	// EnableExternalCerts, which the shell itself honours.
	Gates []featuregate.Feature
	// Webhook holds the --webhook-* flag values (kitwebhook.DefaultOptions
	// when nil); a binary that changes a default, or reads the values
	// itself, passes its own.
	Webhook *kitwebhook.Options
	// AddFlags registers the binary's own flags beside --webhook-* (may be
	// nil).
	AddFlags func(*pflag.FlagSet)
	// Off, when set and it returns a reason, makes Setup log the reason and
	// run nothing: no clients, no reconciler, no webhook.
	Off func(featuregate.FeatureGate) string
	// Reconcilers registers the leader's reconcilers (env.AddController).
	Reconcilers func(env *kitapp.Env, cl *Clients) error
	// Webhooks registers the admission webhooks on every replica with the
	// parsed --webhook-* values (--webhook-disable included: it decides).
	Webhooks func(env *kitapp.Env, cl *Clients, wh kitwebhook.Options) error
}

// Webhook returns the kitapp.Binary b describes. Its Setup builds the
// Clients, registers the reconcilers, refuses EnableExternalCerts without
// --webhook-cert-dir (the certificates would be self-managed after all),
// then registers the webhooks.
func Webhook(b WebhookBinary) kitapp.Binary {
	wh := b.Webhook
	if wh == nil {
		o := kitwebhook.DefaultOptions(b.Name)
		wh = &o
	}
	gates := slices.Clone(b.Gates)
	if !slices.Contains(gates, features.EnableExternalCerts) {
		gates = append(gates, features.EnableExternalCerts)
	}
	addFlags := func(fs *pflag.FlagSet) {
		wh.AddFlags(fs)
		if b.AddFlags != nil {
			b.AddFlags(fs)
		}
	}
	setup := func(ctx context.Context, env *kitapp.Env) error {
		cl, err := clientsUnlessOff(ctx, env, b.Off)
		if cl == nil || err != nil {
			return err
		}
		if err := b.Reconcilers(env, cl); err != nil {
			return err
		}
		if env.Gates != nil && env.Gates.Enabled(features.EnableExternalCerts) && wh.CertDir == "" {
			return fmt.Errorf("EnableExternalCerts needs --webhook-cert-dir")
		}
		if err := b.Webhooks(env, cl, *wh); err != nil {
			return fmt.Errorf("set up %s webhook: %w", b.Kind, err)
		}
		return nil
	}
	return kitapp.Binary{Name: b.Name, Gates: gates, AddFlags: addFlags, Setup: setup}
}
