// Package advancedcronjob is the AdvancedCronJob reconciler (placeholder until the reconciler lands).
package advancedcronjob

import (
	"context"

	"github.com/flotilla-dev/flotilla/controllers/cronjob/internal/deps"
	kitapp "github.com/flotilla-dev/flotilla/kit/app"
)

// Controller reconciles AdvancedCronJobs.
type Controller struct{}

// New requests the informers the reconciler needs from d's factories and returns it.
func New(d deps.Deps) (*Controller, error) { return &Controller{}, nil }

// Name implements kitapp.Controller.
func (c *Controller) Name() string { return "advancedcronjob" }

// Run implements kitapp.Controller.
func (c *Controller) Run(ctx context.Context, workers int) error { <-ctx.Done(); return nil }

var _ kitapp.Controller = (*Controller)(nil)
