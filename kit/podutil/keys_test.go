package podutil

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The keys are OpenKruise's wire contract and must equal apis/apps/pub's
// constants. kit cannot import apis, so both sides are pinned to the literals
// of the OpenKruise reference instead.
func TestWireKeysMatchOpenKruise(t *testing.T) {
	for got, want := range map[string]string{
		SpecifiedDeleteKey:            "apps.kruise.io/specified-delete",
		PodDeletionCostAnnotation:     "controller.kubernetes.io/pod-deletion-cost",
		LifecycleStateKey:             "lifecycle.apps.kruise.io/state",
		LifecycleStatePreparingNormal: "PreparingNormal",
		LifecycleStateNormal:          "Normal",
		LifecycleStatePreparingUpdate: "PreparingUpdate",
		LifecycleStateUpdating:        "Updating",
		LifecycleStateUpdated:         "Updated",
		LifecycleStatePreparingDelete: "PreparingDelete",
	} {
		assert.Equal(t, want, got)
	}
}
