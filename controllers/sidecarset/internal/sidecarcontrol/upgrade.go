package sidecarcontrol

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	appspub "github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/podutil"
)

// IsUpdated reports that pod runs set's current sidecars (hash recorded on the pod).
func IsUpdated(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) bool {
	return PodHash(pod, set.Name) == Hash(set)
}

// HasAllSidecars reports that pod carries every container set's containers
// occupy; the controller only counts (and upgrades) such pods.
func HasAllSidecars(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) bool {
	have := sets.New[string]()
	for _, c := range pod.Spec.Containers {
		have.Insert(c.Name)
	}
	return have.IsSuperset(ContainersInPod(set))
}

// InPlaceUpgradable reports whether set's current version differs from the
// pod's only in images (without-image hashes equal), so it can be applied
// in place.
func InPlaceUpgradable(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) bool {
	return PodHashWithoutImage(pod, set.Name) == HashWithoutImage(set)
}

// States decodes kruise.io/sidecarset-inplace-update-state: SidecarSet name →
// the in-place state of its last upgrade of pod. A corrupt value decodes as
// nothing recorded; callers that must not take that for a fact check
// CorruptAnnotation first (the controller does, for every pod it plans).
func States(pod *corev1.Pod) map[string]*appspub.InPlaceUpdateState {
	out, _ := decodeStates(pod)
	return out
}

func decodeStates(pod *corev1.Pod) (map[string]*appspub.InPlaceUpdateState, error) {
	out := map[string]*appspub.InPlaceUpdateState{}
	if v := pod.Annotations[InplaceUpdateStateKey]; v != "" {
		if err := json.Unmarshal([]byte(v), &out); err != nil {
			return map[string]*appspub.InPlaceUpdateState{}, fmt.Errorf("annotation %s: %w", InplaceUpdateStateKey, err)
		}
	}
	return out, nil
}

// CorruptAnnotation returns an error naming the first annotation of pod that
// the upgrade logic reads and cannot decode (in-place state, hot-upgrade
// working containers, the two hashes), or nil. Read as empty, such a pod
// would look never upgraded (so consistent), or have the wrong twin taken
// as working (and reset to the empty image): the controller leaves it
// alone instead and says so.
func CorruptAnnotation(pod *corev1.Pod) error {
	if _, err := decodeStates(pod); err != nil {
		return err
	}
	if _, err := decodeWorking(pod); err != nil {
		return err
	}
	for _, key := range []string{HashAnnotation, HashWithoutImageAnnotation} {
		if _, err := PodUpgradeSpecs(pod, key); err != nil {
			return err
		}
	}
	return nil
}

// Consistent reports that the kubelet runs what pod's spec asks for in set's
// containers: after an upgrade each changed container reports an imageID
// other than the one recorded before it (or, for a digest image, that
// digest). A pod never upgraded is consistent.
func Consistent(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) bool {
	states, err := decodeStates(pod)
	if err != nil {
		return false // unknown: never claimed consistent
	}
	state := states[set.Name]
	if state == nil {
		return true
	}
	status := map[string]corev1.ContainerStatus{}
	for _, s := range pod.Status.ContainerStatuses {
		status[s.Name] = s
	}
	spec := map[string]string{}
	for _, c := range pod.Spec.Containers {
		spec[c.Name] = c.Image
	}
	for name, last := range state.LastContainerStatuses {
		s, ok := status[name]
		if !ok {
			return false
		}
		if i := strings.Index(spec[name], "@"); i >= 0 {
			if !strings.HasSuffix(s.ImageID, spec[name][i:]) {
				return false
			}
			continue
		}
		if s.ImageID == "" || s.ImageID == last.ImageID {
			return false
		}
	}
	return true
}

// Ready reports pod Running and Ready with, for hot-upgrade sidecars, the
// idle container back on the empty image (OpenKruise's IsPodReady for a
// SidecarSet).
func Ready(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) bool {
	return !HotUpgrading(pod, set) && podutil.IsActiveAndReady(pod)
}

// Upgrade returns a copy of pod moved in place to set's current version
// (revision is its ControllerRevision name): each sidecar whose image
// differs gets the new image — a cold sidecar in its own container, a hot
// one in its idle container, which becomes the working one (version
// annotations follow) — the hash annotations are rewritten, the in-place
// state records the pre-upgrade imageIDs of the changed containers, and
// patchPodMetadata Overwrite/MergePatchJson entries are re-applied when
// patchAllowed. changed lists the containers given a new image. The caller
// checks InPlaceUpgradable first.
func Upgrade(pod *corev1.Pod, set *appsv1alpha1.SidecarSet, revision string, patchAllowed bool, now time.Time) (*corev1.Pod, []string, error) {
	out, index := editableCopy(pod)
	var changed []string
	for i := range set.Spec.Containers {
		sc := &set.Spec.Containers[i]
		if !IsHotUpgrade(sc) {
			j, ok := index[sc.Name]
			if !ok || out.Spec.Containers[j].Image == sc.Image {
				continue
			}
			out.Spec.Containers[j].Image = sc.Image
			changed = append(changed, sc.Name)
			continue
		}
		target, other := hotUpgradeTarget(sc, out)
		ti, ok1 := index[target]
		oi, ok2 := index[other]
		if !ok1 || !ok2 || out.Spec.Containers[oi].Image == sc.Image || out.Spec.Containers[ti].Image == sc.Image {
			continue
		}
		out.Spec.Containers[ti].Image = sc.Image
		changed = append(changed, target)
		setWorking(out.Annotations, sc.Name, target)
		version := set.ResourceVersion
		if version == "" {
			version = fmt.Sprint(set.Generation)
		}
		out.Annotations[VersionAnnotation(target)] = version
		out.Annotations[VersionAltAnnotation(target)] = out.Annotations[VersionAnnotation(other)]
		out.Annotations[VersionAltAnnotation(other)] = version
	}
	if patchAllowed && len(set.Spec.PatchPodMetadata) > 0 {
		patched, err := PatchAnnotations(out.Annotations, set.Spec.PatchPodMetadata, true)
		if err != nil {
			return nil, nil, fmt.Errorf("sidecarset %s: %w", set.Name, err)
		}
		out.Annotations = patched
	}
	t := metav1.NewTime(now)
	spec := UpgradeSpec{UpdateTimestamp: t, SidecarSetName: set.Name, SidecarList: SidecarNames(set), Hash: Hash(set), ControllerRevision: revision}
	if err := setUpgradeSpec(out.Annotations, HashAnnotation, spec); err != nil {
		return nil, nil, err
	}
	if err := recordState(out, set, changed, t); err != nil {
		return nil, nil, err
	}
	return out, changed, nil
}

func recordState(pod *corev1.Pod, set *appsv1alpha1.SidecarSet, changed []string, now metav1.Time) error {
	states := States(pod)
	st := states[set.Name]
	if st == nil || len(changed) > 0 {
		// A new upgrade starts a new record; a flip adds to the current one.
		if st == nil || st.Revision != Hash(set) {
			st = &appspub.InPlaceUpdateState{Revision: Hash(set), UpdateTimestamp: now}
		}
	}
	if st.LastContainerStatuses == nil {
		st.LastContainerStatuses = map[string]appspub.InPlaceUpdateContainerStatus{}
	}
	ids := map[string]string{}
	for _, s := range pod.Status.ContainerStatuses {
		ids[s.Name] = s.ImageID
	}
	for _, c := range changed {
		st.LastContainerStatuses[c] = appspub.InPlaceUpdateContainerStatus{ImageID: ids[c]}
	}
	states[set.Name] = st
	data, err := json.Marshal(states)
	if err != nil {
		return fmt.Errorf("encode %s: %w", InplaceUpdateStateKey, err)
	}
	pod.Annotations[InplaceUpdateStateKey] = string(data)
	return nil
}

// Reasons of the SidecarSetUpgradable condition, OpenKruise's words.
const (
	ReasonAllUpgradable        = "AllSidecarsetUpgradable"
	ReasonUpdateImmutableField = "UpdateImmutableField"
)

// upgradableVerdicts decodes the SidecarSetUpgradable message: SidecarSet
// name → whether it can upgrade the pod in place, a JSON object of booleans
// as OpenKruise writes it. A non-boolean value (Flotilla used to store a
// reason string for a blocked SidecarSet) counts as not upgradable.
func upgradableVerdicts(cond *corev1.PodCondition) map[string]bool {
	out := map[string]bool{}
	if cond == nil || cond.Message == "" {
		return out
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(cond.Message), &raw); err != nil {
		return out // not ours to keep: the next verdict rewrites it
	}
	for name, v := range raw {
		b, _ := v.(bool)
		out[name] = b
	}
	return out
}

func upgradableCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == UpgradableCondition {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// RecordedNotUpgradable reports whether the pod's SidecarSetUpgradable
// condition says setName cannot upgrade it in place.
func RecordedNotUpgradable(pod *corev1.Pod, setName string) bool {
	v, ok := upgradableVerdicts(upgradableCondition(pod))[setName]
	return ok && !v
}

// SetUpgradableCondition returns the pod's SidecarSetUpgradable condition
// with this SidecarSet's verdict recorded, as OpenKruise keeps it: the
// message maps every SidecarSet that gave a verdict to true/false
// ({"a":true,"b":false}); the status is True with reason
// AllSidecarsetUpgradable when all are true, else False with reason
// UpdateImmutableField. lastTransitionTime moves only when the status does.
// changed is false when the pod already says exactly this.
func SetUpgradableCondition(pod *corev1.Pod, setName string, upgradable bool, now time.Time) (corev1.PodCondition, bool) {
	cur := upgradableCondition(pod)
	verdicts := upgradableVerdicts(cur)
	verdicts[setName] = upgradable
	want := corev1.PodCondition{Type: UpgradableCondition, Status: corev1.ConditionTrue, Reason: ReasonAllUpgradable}
	for _, ok := range verdicts {
		if !ok {
			want.Status, want.Reason = corev1.ConditionFalse, ReasonUpdateImmutableField
			break
		}
	}
	msg, _ := json.Marshal(verdicts) // map keys come out sorted: a stable message
	want.Message = string(msg)
	if cur == nil {
		want.LastTransitionTime = metav1.NewTime(now)
		return want, true
	}
	if cur.Status == want.Status && cur.Reason == want.Reason && cur.Message == want.Message {
		return *cur, false
	}
	want.LastProbeTime, want.LastTransitionTime = cur.LastProbeTime, cur.LastTransitionTime
	if cur.Status != want.Status {
		want.LastTransitionTime = metav1.NewTime(now)
	}
	return want, true
}

// editableCopy returns a deep copy of pod for Upgrade and Flip to change
// (annotations map present) and the index of its containers by name.
func editableCopy(pod *corev1.Pod) (*corev1.Pod, map[string]int) {
	out := pod.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	index := make(map[string]int, len(out.Spec.Containers))
	for i, c := range out.Spec.Containers {
		index[c.Name] = i
	}
	return out, index
}
