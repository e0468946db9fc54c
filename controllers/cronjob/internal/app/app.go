// Package app wires the cronjob-controller binary: the feature gates it
// registers and, in Setup, the informers and controllers it runs. It exists
// so that cmd/cronjob-controller/main.go stays one line and tests can build the
// binary's Binary without a process.
package app

import (
	"context"

	"k8s.io/component-base/featuregate"

	kitapp "github.com/flotilla-dev/flotilla/kit/app"
)

// Name is the binary name: user agent, logger name and default Lease name.
const Name = "cronjob-controller"

// Gates are the feature gates cronjob-controller accepts in --feature-gates:
// AdvancedCronJob has none.
func Gates() []featuregate.Feature { return nil }

// Binary describes cronjob-controller to the kit/app shell.
func Binary() kitapp.Binary {
	return kitapp.Binary{Name: Name, Gates: Gates(), Setup: setup}
}

// setup registers informers and controllers. No reconciler is written yet,
// so it registers nothing and the shell idles after winning the Lease.
func setup(_ context.Context, _ *kitapp.Env) error {
	return nil
}
