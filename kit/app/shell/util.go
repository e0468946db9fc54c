package shell

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitFor polls cond every 100ms until it is true or ctx ends.
func WaitFor(ctx context.Context, cond func() bool) error {
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
}
