// Package features holds the OpenKruise feature-gate names and defaults that
// Flotilla's controllers honour, and builds a per-binary feature gate that
// registers only the gates that binary uses.
//
// There is deliberately no package-level gate: each binary creates its own
// with NewGate and injects it into the code that needs it, so tests can build
// gates with any combination of values.
package features

import (
	"fmt"
	"slices"
	"sort"

	"k8s.io/component-base/featuregate"
)

// Gate names. They are OpenKruise's names (pkg/features/kruise_features.go) so
// that a --feature-gates value written for kruise-manager means the same here.
const (
	// PodWebhook enables the pod admission webhooks (SidecarSet injection,
	// PodUnavailableBudget protection, readiness-gate injection).
	PodWebhook featuregate.Feature = "PodWebhook"
	// KruiseDaemon says a node agent implementing kruise-daemon's contract
	// (image pre-pull, container restarts for env-from-metadata, probing) runs
	// in the cluster. Flotilla's (probe-agent) is installed on its own and a
	// binary cannot tell whether it runs, so it defaults to false (OpenKruise:
	// true) and the features that need it are off unless turned on where the
	// agent runs; see DependencyRules.
	KruiseDaemon featuregate.Feature = "KruiseDaemon"
	// CloneSetShortHash makes CloneSet write only the short hash into the pod
	// label controller-revision-hash.
	CloneSetShortHash featuregate.Feature = "CloneSetShortHash"
	// KruisePodReadinessGate injects the KruisePodReady readiness gate into all
	// pods, not only pods controlled by apps.kruise.io workloads.
	KruisePodReadinessGate featuregate.Feature = "KruisePodReadinessGate"
	// PreDownloadImageForInPlaceUpdate makes CloneSet/Advanced StatefulSet
	// pre-pull images of the update revision.
	PreDownloadImageForInPlaceUpdate featuregate.Feature = "PreDownloadImageForInPlaceUpdate"
	// CloneSetPartitionRollback rolls pods back to the current revision when
	// more pods are updated than replicas-partition allows.
	CloneSetPartitionRollback featuregate.Feature = "CloneSetPartitionRollback"
	// ResourcesDeletionProtection enables the delete-protection webhooks.
	ResourcesDeletionProtection featuregate.Feature = "ResourcesDeletionProtection"
	// DeletionProtectionForCRDCascadingGate lets delete-protection=Cascading
	// on a CustomResourceDefinition check for existing objects (off: such a
	// deletion is refused, as in OpenKruise).
	DeletionProtectionForCRDCascadingGate featuregate.Feature = "DeletionProtectionForCRDCascadingGate"
	// ResourceDistributionGate lets resourcedistribution-controller run (off:
	// the binary logs so and runs nothing). OpenKruise's default, off, is
	// kept so a --feature-gates value means the same; Flotilla's
	// resourcedistribution overlay, chart and make run turn it on.
	ResourceDistributionGate featuregate.Feature = "ResourceDistributionGate"
	// PodUnavailableBudgetDeleteGate makes PUB protect pod deletion/eviction
	// (and is one of the two gates that let the PUB controller run).
	PodUnavailableBudgetDeleteGate featuregate.Feature = "PodUnavailableBudgetDeleteGate"
	// PodUnavailableBudgetUpdateGate makes PUB protect pod updates.
	PodUnavailableBudgetUpdateGate featuregate.Feature = "PodUnavailableBudgetUpdateGate"
	// TemplateNoDefaults stops workload webhooks injecting pod defaults into
	// templates.
	TemplateNoDefaults featuregate.Feature = "TemplateNoDefaults"
	// InPlaceUpdateEnvFromMetadata allows in-place updates of env vars sourced
	// from pod labels/annotations: the workloads update such a change in place
	// and probe-agent restarts the containers (forced off without KruiseDaemon).
	InPlaceUpdateEnvFromMetadata featuregate.Feature = "InPlaceUpdateEnvFromMetadata"
	// StatefulSetAutoDeletePVC enables persistentVolumeClaimRetentionPolicy.
	StatefulSetAutoDeletePVC featuregate.Feature = "StatefulSetAutoDeletePVC"
	// SidecarSetPatchPodMetadataDefaultsAllowed allows patchPodMetadata
	// without a whitelist.
	SidecarSetPatchPodMetadataDefaultsAllowed featuregate.Feature = "SidecarSetPatchPodMetadataDefaultsAllowed"
	// SidecarTerminator stops sidecars once main containers of
	// Never/OnFailure pods have exited.
	SidecarTerminator featuregate.Feature = "SidecarTerminator"
	// PodProbeMarkerGate enables the PodProbeMarker/NodePodProbe controllers.
	PodProbeMarkerGate featuregate.Feature = "PodProbeMarkerGate"
	// PreDownloadImageForDaemonSetUpdate makes Advanced DaemonSet pre-pull
	// images before updates.
	PreDownloadImageForDaemonSetUpdate featuregate.Feature = "PreDownloadImageForDaemonSetUpdate"
	// CloneSetEventHandlerOptimization filters pod update events that cannot
	// change a CloneSet's decisions.
	CloneSetEventHandlerOptimization featuregate.Feature = "CloneSetEventHandlerOptimization"
	// PreparingUpdateAsUpdate counts PreparingUpdate pods as update-revision
	// pods in scale calculations.
	PreparingUpdateAsUpdate featuregate.Feature = "PreparingUpdateAsUpdate"
	// RecreatePodWhenChangeVCTInCloneSetGate forces recreation when a
	// CloneSet's volumeClaimTemplates change.
	RecreatePodWhenChangeVCTInCloneSetGate featuregate.Feature = "RecreatePodWhenChangeVCTInCloneSetGate"
	// StatefulSetStartOrdinal enables spec.ordinals.start.
	StatefulSetStartOrdinal featuregate.Feature = "StatefulSetStartOrdinal"
	// PodIndexLabel adds the apps.kubernetes.io/pod-index label.
	PodIndexLabel featuregate.Feature = "PodIndexLabel"
	// EnableExternalCerts uses externally provisioned webhook certificates.
	EnableExternalCerts featuregate.Feature = "EnableExternalCerts"
	// StatefulSetAutoResizePVCGate enables volumeClaimUpdateStrategy.
	StatefulSetAutoResizePVCGate featuregate.Feature = "StatefulSetAutoResizePVCGate"
	// ForceDeleteTimeoutExpectationGate drops CloneSet scale expectations
	// after --expectation-timeout instead of stalling.
	ForceDeleteTimeoutExpectationGate featuregate.Feature = "ForceDeleteTimeoutExpectationGate"
	// InPlaceWorkloadVerticalScaling allows in-place CPU/memory changes.
	InPlaceWorkloadVerticalScaling featuregate.Feature = "InPlaceWorkloadVerticalScaling"
	// EnablePodProbeMarkerOnServerless supports PodProbeMarker on
	// virtual-kubelet pods.
	EnablePodProbeMarkerOnServerless featuregate.Feature = "EnablePodProbeMarkerOnServerless"
	// EnableSortSidecarContainerByName sorts injected sidecars by name.
	EnableSortSidecarContainerByName featuregate.Feature = "EnableSortSidecarContainerByName"
	// InPlacePodVerticalScaling says the cluster supports native in-place
	// pod resize (PUB then distinguishes the RESIZE operation).
	InPlacePodVerticalScaling featuregate.Feature = "InPlacePodVerticalScaling"
	// DaemonSetPruneIneligibleNodes prunes pods on no-longer-eligible nodes
	// from the rolling-update budget.
	DaemonSetPruneIneligibleNodes featuregate.Feature = "DaemonSetPruneIneligibleNodes"
	// WorkloadSpread lets workloadspread-controller run (it also needs
	// PodWebhook, as in OpenKruise).
	WorkloadSpread featuregate.Feature = "WorkloadSpread"
	// ImagePullJobGate turns on image pre-download: the ImagePullJob
	// controller and the node agent's NodeImage puller.
	ImagePullJobGate featuregate.Feature = "ImagePullJobGate"
)

// specs is the immutable table of known gates. It is never written after
// package initialisation; NewGate copies entries into a fresh gate.
var specs = map[featuregate.Feature]featuregate.FeatureSpec{
	PodWebhook:                                {Default: true, PreRelease: featuregate.Beta},
	WorkloadSpread:                            {Default: true, PreRelease: featuregate.Beta},
	ImagePullJobGate:                          {Default: false, PreRelease: featuregate.Alpha},
	KruiseDaemon:                              {Default: false, PreRelease: featuregate.Beta},
	CloneSetShortHash:                         {Default: false, PreRelease: featuregate.Alpha},
	KruisePodReadinessGate:                    {Default: false, PreRelease: featuregate.Alpha},
	PreDownloadImageForInPlaceUpdate:          {Default: false, PreRelease: featuregate.Alpha},
	CloneSetPartitionRollback:                 {Default: false, PreRelease: featuregate.Alpha},
	ResourcesDeletionProtection:               {Default: false, PreRelease: featuregate.Beta},
	DeletionProtectionForCRDCascadingGate:     {Default: false, PreRelease: featuregate.Alpha},
	ResourceDistributionGate:                  {Default: false, PreRelease: featuregate.Alpha},
	PodUnavailableBudgetDeleteGate:            {Default: true, PreRelease: featuregate.Beta},
	PodUnavailableBudgetUpdateGate:            {Default: false, PreRelease: featuregate.Alpha},
	TemplateNoDefaults:                        {Default: false, PreRelease: featuregate.Alpha},
	InPlaceUpdateEnvFromMetadata:              {Default: true, PreRelease: featuregate.Beta},
	StatefulSetAutoDeletePVC:                  {Default: true, PreRelease: featuregate.Beta},
	SidecarSetPatchPodMetadataDefaultsAllowed: {Default: false, PreRelease: featuregate.Alpha},
	SidecarTerminator:                         {Default: false, PreRelease: featuregate.Alpha},
	PodProbeMarkerGate:                        {Default: true, PreRelease: featuregate.Beta},
	PreDownloadImageForDaemonSetUpdate:        {Default: false, PreRelease: featuregate.Alpha},
	CloneSetEventHandlerOptimization:          {Default: false, PreRelease: featuregate.Alpha},
	PreparingUpdateAsUpdate:                   {Default: false, PreRelease: featuregate.Alpha},
	RecreatePodWhenChangeVCTInCloneSetGate:    {Default: false, PreRelease: featuregate.Alpha},
	StatefulSetStartOrdinal:                   {Default: false, PreRelease: featuregate.Alpha},
	PodIndexLabel:                             {Default: true, PreRelease: featuregate.Beta},
	EnableExternalCerts:                       {Default: false, PreRelease: featuregate.Alpha},
	StatefulSetAutoResizePVCGate:              {Default: false, PreRelease: featuregate.Alpha},
	ForceDeleteTimeoutExpectationGate:         {Default: false, PreRelease: featuregate.Alpha},
	InPlaceWorkloadVerticalScaling:            {Default: false, PreRelease: featuregate.Alpha},
	EnablePodProbeMarkerOnServerless:          {Default: false, PreRelease: featuregate.Alpha},
	EnableSortSidecarContainerByName:          {Default: false, PreRelease: featuregate.Alpha},
	InPlacePodVerticalScaling:                 {Default: false, PreRelease: featuregate.Alpha},
	DaemonSetPruneIneligibleNodes:             {Default: false, PreRelease: featuregate.Alpha},
}

// Rule forces the Forced gates off whenever When is disabled. It mirrors
// OpenKruise's SetDefaultFeatureGates.
type Rule struct {
	When   featuregate.Feature
	Forced []featuregate.Feature
}

// DependencyRules are the OpenKruise dependency rules Flotilla keeps. A rule
// only acts inside one binary's gate, and only on gates that binary registered.
//
// Kept:
//   - PodWebhook=false ⇒ KruisePodReadinessGate, PodUnavailableBudgetDeleteGate,
//     PodUnavailableBudgetUpdateGate, WorkloadSpread, SidecarSetPatchPodMetadataDefaultsAllowed,
//     EnablePodProbeMarkerOnServerless are off (they are implemented by the pod
//     webhook that the same binary serves).
//   - KruiseDaemon=false ⇒ PreDownloadImageForInPlaceUpdate,
//     PreDownloadImageForDaemonSetUpdate, InPlaceUpdateEnvFromMetadata,
//     PodProbeMarkerGate, SidecarTerminator, ImagePullJobGate are off (they need a node agent;
//     Flotilla's, probe-agent, is installed on its own, and a binary cannot tell whether it
//     runs, so KruiseDaemon defaults to false and is turned on where the agent is).
//
// Dropped, because Flotilla has no component they would affect:
// DaemonWatchingPod, EnhancedLivenessProbe, and "either PreDownload gate ⇒
// ImagePullJobGate=true" (a rule here only forces gates off; the workloads'
// PreDownload gates create ImagePullJobs whatever ImagePullJobGate says).
//
// Also kept: ResourcesDeletionProtection=false ⇒
// DeletionProtectionForCRDCascadingGate is off (deletionprotection-controller).
var DependencyRules = []Rule{
	{When: PodWebhook, Forced: []featuregate.Feature{
		KruisePodReadinessGate, PodUnavailableBudgetDeleteGate, PodUnavailableBudgetUpdateGate, WorkloadSpread,
		SidecarSetPatchPodMetadataDefaultsAllowed, EnablePodProbeMarkerOnServerless,
	}},
	{When: KruiseDaemon, Forced: []featuregate.Feature{
		PreDownloadImageForInPlaceUpdate, PreDownloadImageForDaemonSetUpdate,
		InPlaceUpdateEnvFromMetadata, PodProbeMarkerGate, SidecarTerminator, ImagePullJobGate,
	}},
	{When: ResourcesDeletionProtection, Forced: []featuregate.Feature{DeletionProtectionForCRDCascadingGate}},
}

// Known returns every gate name this package knows, sorted.
func Known() []featuregate.Feature {
	out := make([]featuregate.Feature, 0, len(specs))
	for f := range specs {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}

// Spec returns the default spec of a known gate.
func Spec(f featuregate.Feature) (featuregate.FeatureSpec, bool) {
	s, ok := specs[f]
	return s, ok
}

// NewGate returns a fresh feature gate with only the given gates registered,
// at OpenKruise's defaults. Bind it to a flag set with AddFlag (that is
// --feature-gates) and call Resolve after parsing.
func NewGate(gates ...featuregate.Feature) (featuregate.MutableFeatureGate, error) {
	m := make(map[featuregate.Feature]featuregate.FeatureSpec, len(gates))
	for _, g := range gates {
		s, ok := specs[g]
		if !ok {
			return nil, fmt.Errorf("unknown feature gate %q", g)
		}
		m[g] = s
	}
	gate := featuregate.NewFeatureGate()
	if err := gate.Add(m); err != nil {
		return nil, err
	}
	return gate, nil
}

// MustNewGate is NewGate that panics on an unknown gate name (a programming
// error in the binary's gate list).
func MustNewGate(gates ...featuregate.Feature) featuregate.MutableFeatureGate {
	g, err := NewGate(gates...)
	if err != nil {
		panic(err)
	}
	return g
}

// Resolve applies DependencyRules to gate (after flag parsing) and returns the
// gates it forced off, sorted. Rules whose trigger is not registered in this
// gate do not apply.
func Resolve(gate featuregate.MutableFeatureGate) ([]featuregate.Feature, error) {
	known := gate.GetAll()
	forced := map[string]bool{}
	for _, r := range DependencyRules {
		if _, ok := known[r.When]; !ok || gate.Enabled(r.When) {
			continue
		}
		for _, f := range r.Forced {
			if _, ok := known[f]; ok && gate.Enabled(f) {
				forced[string(f)] = false
			}
		}
	}
	if len(forced) == 0 {
		return nil, nil
	}
	if err := gate.SetFromMap(forced); err != nil {
		return nil, err
	}
	out := make([]featuregate.Feature, 0, len(forced))
	for f := range forced {
		out = append(out, featuregate.Feature(f))
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// Values lists the registered Flotilla gates with their current values,
// for logging at start-up.
func Values(gate featuregate.MutableFeatureGate) map[string]bool {
	out := map[string]bool{}
	for f := range gate.GetAll() {
		if _, ok := specs[f]; ok {
			out[string(f)] = gate.Enabled(f)
		}
	}
	return out
}
