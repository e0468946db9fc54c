// Package deps holds what the two reconcilers of cronjob-controller (AdvancedCronJob and BroadcastJob) share:
// the clients, one set of informer factories (so an informer both need, e.g. BroadcastJobs, exists once),
// the clock and the event recorder. Tests build a Deps of their own with a fake clock.
package deps

import "github.com/flotilla-dev/flotilla/kit/wiring"

// Deps are the collaborators of a reconciler (kit/wiring builds them). Neither reconciler reads Gates or
// ExpectationTimeout.
type Deps = wiring.Deps
