package pub

// LifecycleStateType is the value of the lifecycle state label on a pod.
type LifecycleStateType string

const (
	// LifecycleStateKey is the pod label that carries the lifecycle state.
	LifecycleStateKey = "lifecycle.apps.kruise.io/state"
	// LifecycleTimestampKey is the pod annotation recording (RFC3339) when the
	// lifecycle state last changed.
	LifecycleTimestampKey = "lifecycle.apps.kruise.io/timestamp"

	// LifecycleStatePreparingNormal: pod created, waiting for preNormal hooks.
	LifecycleStatePreparingNormal LifecycleStateType = "PreparingNormal"
	// LifecycleStateNormal: pod is serving normally.
	LifecycleStateNormal LifecycleStateType = "Normal"
	// LifecycleStatePreparingUpdate: waiting for the inPlaceUpdate hook to be released.
	LifecycleStatePreparingUpdate LifecycleStateType = "PreparingUpdate"
	// LifecycleStateUpdating: the in-place update is being applied.
	LifecycleStateUpdating LifecycleStateType = "Updating"
	// LifecycleStateUpdated: the in-place update finished; waiting for the hook to be re-applied.
	LifecycleStateUpdated LifecycleStateType = "Updated"
	// LifecycleStatePreparingDelete: waiting for the preDelete hook to be released.
	LifecycleStatePreparingDelete LifecycleStateType = "PreparingDelete"
)

// Lifecycle lists the hooks a workload applies around pod state transitions.
type Lifecycle struct {
	// PreDelete holds the pod in PreparingDelete before it is deleted.
	// +optional
	PreDelete *LifecycleHook `json:"preDelete,omitempty"`
	// InPlaceUpdate holds the pod in PreparingUpdate before, and in Updated
	// after, an in-place update.
	// +optional
	InPlaceUpdate *LifecycleHook `json:"inPlaceUpdate,omitempty"`
	// PreNormal holds a new pod in PreparingNormal until the hook is satisfied.
	// +optional
	PreNormal *LifecycleHook `json:"preNormal,omitempty"`
}

// LifecycleHook names the labels and/or finalizers whose presence on a pod
// means "a user controller still has work to do".
type LifecycleHook struct {
	// +optional
	LabelsHandler map[string]string `json:"labelsHandler,omitempty"`
	// FinalizersHandler are finalizer names: qualified names such as
	// example.com/hook, as the API server requires of a pod's finalizers (a
	// hook naming one that no pod can carry would never be satisfied).
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:items:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$`
	// +optional
	FinalizersHandler []string `json:"finalizersHandler,omitempty"`
	// MarkPodNotReady forces the pod NotReady (through the KruisePodReady
	// readiness gate) while it waits in PreparingDelete/PreparingUpdate.
	// +optional
	MarkPodNotReady bool `json:"markPodNotReady,omitempty"`
}
