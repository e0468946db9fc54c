package revision

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Resolved is the outcome of Resolve.
type Resolved struct {
	// Update is the revision of the workload's current template.
	Update *appsv1.ControllerRevision
	// Revisions are the workload's revisions, oldest first, including one
	// Resolve created.
	Revisions []*appsv1.ControllerRevision
	// Written is true when Update was created or re-numbered by this call:
	// the caller's cache does not show it yet.
	Written bool
}

// Resolve finds or creates the update revision of parent. want is the
// unsaved revision of the current template (from New, numbered
// NextRevisionNumber(revisions)); revisions are parent's, oldest first.
// When revisions hold one with the same data — the same bytes, or failing
// that Equivalent data (the same template encoded by another writer or an
// older Flotilla) — the newest such is reused and,
// unless it is already the newest revision, re-numbered to come last — a
// rollback keeps its revision instead of creating a twin. Otherwise want is
// created through ctl, which may bump *collisionCount.
func Resolve(ctx context.Context, ctl Control, parent metav1.Object, want *appsv1.ControllerRevision,
	revisions []*appsv1.ControllerRevision, collisionCount *int32) (Resolved, error) {
	eq := FindEqual(revisions, want.Data.Raw)
	if len(eq) == 0 {
		// Only when no revision has the bytes: decoding costs more, and a
		// revision with the exact bytes is the better (OpenKruise-named) one.
		eq = FindEquivalent(revisions, want.Data.Raw)
	}
	if len(eq) > 0 {
		found := eq[len(eq)-1]
		if found.Revision == revisions[len(revisions)-1].Revision {
			return Resolved{Update: found, Revisions: revisions}, nil
		}
		out, err := ctl.UpdateRevision(ctx, found, NextRevisionNumber(revisions))
		if err != nil {
			return Resolved{}, fmt.Errorf("roll back to revision %s: %w", found.Name, err)
		}
		return Resolved{Update: out, Revisions: revisions, Written: true}, nil
	}
	created, err := ctl.Create(ctx, parent, want, collisionCount)
	if err != nil {
		return Resolved{}, fmt.Errorf("create revision: %w", err)
	}
	return Resolved{Update: created, Revisions: append(revisions, created), Written: true}, nil
}
