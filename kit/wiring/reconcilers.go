package wiring

import (
	"context"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
)

// ReconcilerBinary describes a binary that runs reconcilers on the leader and serves no webhook — the shape of
// containerrecreate-, imagepulljob- and resourcedistribution-controller. Reconcilers turns it into the
// kitapp.Binary.
type ReconcilerBinary struct {
	Name string
	// Gates the binary accepts in --feature-gates.
	Gates []featuregate.Feature
	// AddFlags registers the binary's own flags (may be nil).
	AddFlags func(*pflag.FlagSet)
	// Off, when set and it returns a reason, makes Setup log the reason and run nothing: no clients, no
	// reconciler (OffUnless is the usual one).
	Off func(featuregate.FeatureGate) string
	// Reconcilers registers the leader's reconcilers (AddReconciler).
	Reconcilers func(env *kitapp.Env, cl *Clients) error
}

// Reconcilers returns the kitapp.Binary b describes. Its Setup builds the Clients and registers the reconcilers,
// unless Off gives a reason not to.
func Reconcilers(b ReconcilerBinary) kitapp.Binary {
	setup := func(ctx context.Context, env *kitapp.Env) error {
		cl, err := clientsUnlessOff(ctx, env, b.Off)
		if cl == nil || err != nil {
			return err
		}
		return b.Reconcilers(env, cl)
	}
	return kitapp.Binary{Name: b.Name, Gates: b.Gates, AddFlags: b.AddFlags, Setup: setup}
}

// OffUnless is an Off that runs nothing while gate is off, as OpenKruise adds a controller only when its gate is
// on.
func OffUnless(gate featuregate.Feature) func(featuregate.FeatureGate) string {
	return func(g featuregate.FeatureGate) string {
		if !g.Enabled(gate) {
			return string(gate) + " is off"
		}
		return ""
	}
}

// clientsUnlessOff builds env's Clients, or logs off's reason and returns none (nil, nil).
func clientsUnlessOff(ctx context.Context, env *kitapp.Env, off func(featuregate.FeatureGate) string) (*Clients, error) {
	if off != nil {
		if why := off(env.Gates); why != "" {
			env.Logger.Info(why + ": nothing to run")
			return nil, nil
		}
	}
	return New(ctx, env)
}
