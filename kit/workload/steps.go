package workload

import "context"

// TakeSteps runs the writes of one sync of a replica workload in their
// order: refresh (pods' own state: readiness gates, lifecycle), scale, and
// — only when neither wrote nor failed — update (roll pods to the update
// revision): the update's budget is computed from pods, so it waits for a
// cache that shows what the other steps did. scaled reports whether scale
// wrote; a refresh error is reported as the update's.
func TakeSteps[S any](ctx context.Context, st S, refresh, scale func(context.Context, S) (bool, error),
	update func(context.Context, S) error) (scaled bool, scaleErr, updateErr error) {
	refreshed, refreshErr := refresh(ctx, st)
	scaled, scaleErr = scale(ctx, st)
	switch {
	case refreshErr != nil:
		updateErr = refreshErr
	case !scaled && !refreshed && scaleErr == nil:
		updateErr = update(ctx, st)
	}
	return scaled, scaleErr, updateErr
}
