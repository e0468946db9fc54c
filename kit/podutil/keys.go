package podutil

// Wire-level keys read by this package. kit may not import the API module,
// so these are declared here and MUST stay equal to their counterparts in
// apis/apps/pub (named in each comment); keys_test.go pins the literals.
const (
	// SpecifiedDeleteKey is the pod label asking the owning workload to
	// delete the pod; any value counts. (pub.SpecifiedDeleteKey)
	SpecifiedDeleteKey = "apps.kruise.io/specified-delete"
	// PodDeletionCostAnnotation is the upstream annotation ranking pods for
	// deletion, lower first. (pub.PodDeletionCostAnnotation)
	PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"
	// LifecycleStateKey is the pod label holding the lifecycle state.
	// (pub.LifecycleStateKey)
	LifecycleStateKey = "lifecycle.apps.kruise.io/state"
)

// Lifecycle states, the values of LifecycleStateKey. They equal
// pub.LifecycleState* (typed there as pub.LifecycleStateType).
const (
	LifecycleStatePreparingNormal = "PreparingNormal"
	LifecycleStateNormal          = "Normal"
	LifecycleStatePreparingUpdate = "PreparingUpdate"
	LifecycleStateUpdating        = "Updating"
	LifecycleStateUpdated         = "Updated"
	LifecycleStatePreparingDelete = "PreparingDelete"
)
