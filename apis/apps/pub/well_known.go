package pub

import corev1 "k8s.io/api/core/v1"

// Readiness gates.
const (
	// KruisePodReadyConditionType is the readiness gate / condition shared by
	// writers that need to force a pod NotReady (lifecycle hooks, CRR, ...).
	KruisePodReadyConditionType corev1.PodConditionType = "KruisePodReady"
)

// Well-known labels and annotations on pods and workloads. Values are part
// of OpenKruise's wire contract and must not change.
const (
	// ControllerRevisionHashLabelKey is the revision label on pods and ControllerRevisions.
	ControllerRevisionHashLabelKey = "controller-revision-hash"
	// PodTemplateHashLabelKey carries the short revision hash on CloneSet pods.
	PodTemplateHashLabelKey = "pod-template-hash"
	// SpecifiedDeleteKey (label, any value) asks the owning workload to delete the pod.
	SpecifiedDeleteKey = "apps.kruise.io/specified-delete"
	// CloneSetInstanceID is the label with the CloneSet instance id on pods and PVCs.
	CloneSetInstanceID = "apps.kruise.io/cloneset-instance-id"
	// CloneSetScalingExcludePreparingDeleteKey (label on a CloneSet, "true")
	// excludes PreparingDelete pods from the replica count.
	CloneSetScalingExcludePreparingDeleteKey = "apps.kruise.io/cloneset-scaling-exclude-preparing-delete"
	// CloneSetVolumeClaimTemplateHashKey is the VCT hash annotation on CloneSet revisions.
	CloneSetVolumeClaimTemplateHashKey = "kruise.io/cloneset-volumeclaimtemplate-hash"
	// PodDeletionCostAnnotation is the upstream pod deletion cost annotation.
	PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"
	// KubectlKruiseRestartedAtKey is the template annotation set by
	// `kubectl-kruise rollout restart`.
	KubectlKruiseRestartedAtKey = "kubectl.kruise.io/restartedAt"
	// ChangeCauseAnnotation is copied onto ControllerRevisions.
	ChangeCauseAnnotation = "kubernetes.io/change-cause"

	// ContainerLaunchPriorityKey (pod annotation, value "Ordered") gives
	// containers a launch priority by their index.
	ContainerLaunchPriorityKey = "apps.kruise.io/container-launch-priority"
	// ContainerLaunchOrdered is the value of ContainerLaunchPriorityKey.
	ContainerLaunchOrdered = "Ordered"
	// ContainerLaunchPriorityEnvName is the container env opting into a priority.
	ContainerLaunchPriorityEnvName = "KRUISE_CONTAINER_PRIORITY"
	// ContainerLaunchBarrierEnvName is the env injected to implement the barrier.
	ContainerLaunchBarrierEnvName = "KRUISE_CONTAINER_BARRIER"

	// ImagePreDownloadParallelismKey sets the parallelism of pre-download jobs.
	ImagePreDownloadParallelismKey = "apps.kruise.io/image-predownload-parallelism"
	// ImagePreDownloadTimeoutSecondsKey sets the timeout of pre-download jobs.
	ImagePreDownloadTimeoutSecondsKey = "apps.kruise.io/image-predownload-timeout-seconds"
	// ImagePreDownloadMinUpdatedReadyPods sets how many updated pods must be
	// ready before images are pre-downloaded.
	ImagePreDownloadMinUpdatedReadyPods = "apps.kruise.io/image-predownload-min-updated-ready-pods"
	// ImagePreDownloadCreatedKey / ImagePreDownloadIgnoredKey label revisions
	// after the pre-download decision.
	ImagePreDownloadCreatedKey = "apps.kruise.io/pre-predownload-created"
	ImagePreDownloadIgnoredKey = "apps.kruise.io/image-predownload-ignored"

	// DaemonSetProgressiveCreatePodKey (ADS annotation "true") makes the
	// partition also throttle pod creation on new nodes.
	DaemonSetProgressiveCreatePodKey = "daemonset.kruise.io/progressive-create-pod"

	// StatefulSetPodNameLabel / PodIndexLabel are the upstream pod identity labels.
	StatefulSetPodNameLabel = "statefulset.kubernetes.io/pod-name"
	PodIndexLabel           = "apps.kubernetes.io/pod-index"
	// OwnedByASTSAnnotation marks PVCs managed in resize mode.
	OwnedByASTSAnnotation = "apps.kruise.io/owned-by-asts"

	// PubUnavailablePodLabelPrefix: a pod label with this prefix marks the
	// pod unavailable for PodUnavailableBudget purposes.
	PubUnavailablePodLabelPrefix = "unavailable-pod.kruise.io/"
	// PodRelatedPubAnnotation names the PUB protecting a pod (v1alpha1 key).
	PodRelatedPubAnnotation = "kruise.io/related-pub"
	// PodRelatedPubAnnotationNew is the newer key (written alongside the old one).
	PodRelatedPubAnnotationNew = "pub.kruise.io/related-pub"
	// PodPubNoProtectionAnnotation ("true") opts a pod out of PUB protection.
	PodPubNoProtectionAnnotation = "pub.kruise.io/no-protect"
	// PubProtectOperationAnnotation lists protected operations on a PUB (comma separated).
	PubProtectOperationAnnotation = "kruise.io/pub-protect-operations"
	// PubProtectTotalReplicasAnnotation overrides the expected replica count of a PUB.
	PubProtectTotalReplicasAnnotation = "pub.kruise.io/protect-total-replicas"

	// SidecarSetHashAnnotation / SidecarSetHashWithoutImageAnnotation are the
	// content hashes on SidecarSets and the per-SidecarSet hash maps on pods.
	SidecarSetHashAnnotation             = "kruise.io/sidecarset-hash"
	SidecarSetHashWithoutImageAnnotation = "kruise.io/sidecarset-hash-without-image"
	// SidecarSetListAnnotation lists the SidecarSets injected into a pod.
	SidecarSetListAnnotation = "kruise.io/sidecarset-injected-list"
	// SidecarSetInplaceUpdateStateKey is the per-SidecarSet in-place state on pods.
	SidecarSetInplaceUpdateStateKey = "kruise.io/sidecarset-inplace-update-state"
	// SidecarSetWorkingHotUpgradeContainer maps hot-upgrade sidecars to their working container.
	SidecarSetWorkingHotUpgradeContainer = "kruise.io/sidecarset-working-hotupgrade-container"
	// SidecarSetNameLabel labels SidecarSet ControllerRevisions.
	SidecarSetNameLabel = "kruise.io/sidecarset-name"
	// SidecarSetCustomVersionLabel marks a SidecarSet (and its revisions) with a user version.
	SidecarSetCustomVersionLabel = "apps.kruise.io/sidecarset-custom-version"
	// SidecarSetCanaryAnnotation / SidecarSetBaseAnnotation configure canary SidecarSets.
	SidecarSetCanaryAnnotation = "apps.kruise.io/sidecarset-canary"
	SidecarSetBaseAnnotation   = "apps.kruise.io/sidecarset-base"
	// SidecarSetUpgradable is the pod condition telling whether sidecars can be updated in place.
	SidecarSetUpgradable corev1.PodConditionType = "SidecarSetUpgradable"

	// PodProbeMarkerFinalizer is added to PodProbeMarkers to clean up NodePodProbes.
	PodProbeMarkerFinalizer = "kruise.io/node-pod-probe-cleanup"

	// AdvancedCronJobScheduledAtAnnotation records the scheduled time on children.
	AdvancedCronJobScheduledAtAnnotation = "apps.kruise.io/scheduled-at"
	// CronJobInstantiateAnnotation marks jobs created by hand from an ACJ.
	CronJobInstantiateAnnotation = "cronjob.kubernetes.io/instantiate"

	// DeleteProtectionLabel ("Always" | "Cascading") protects objects from deletion.
	DeleteProtectionLabel = "policy.kruise.io/delete-protection"
)
