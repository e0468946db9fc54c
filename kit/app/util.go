package app

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// waitFor polls cond every 100ms until it is true or ctx ends.
func waitFor(ctx context.Context, cond func() bool) error {
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
}
