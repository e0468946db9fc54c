package sidecarcontrol

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// RevisionSource gives the ControllerRevisions of a SidecarSet: those in the
// controller's namespace labelled kruise.io/sidecarset-name=<name>. The
// webhook backs it with an informer lister; tests with a slice.
type RevisionSource interface {
	SidecarSetRevisions(setName string) ([]*appsv1.ControllerRevision, error)
}

// RevisionList is a RevisionSource over a fixed slice (tests, one-shot callers).
type RevisionList []*appsv1.ControllerRevision

// SidecarSetRevisions implements RevisionSource.
func (l RevisionList) SidecarSetRevisions(setName string) ([]*appsv1.ControllerRevision, error) {
	var out []*appsv1.ControllerRevision
	for _, r := range l {
		if r.Labels[RevisionNameLabel] == setName {
			out = append(out, r)
		}
	}
	return out, nil
}

// revisionSpec is the part of a SidecarSet a ControllerRevision records.
type revisionSpec struct {
	Volumes          []corev1.Volume                           `json:"volumes"`
	Containers       []appsv1alpha1.SidecarContainer           `json:"containers"`
	InitContainers   []appsv1alpha1.SidecarContainer           `json:"initContainers"`
	ImagePullSecrets []corev1.LocalObjectReference             `json:"imagePullSecrets"`
	PatchPodMetadata []appsv1alpha1.SidecarSetPatchPodMetadata `json:"patchPodMetadata"`
}

// RevisionData is the data of the SidecarSet's ControllerRevision, byte for
// byte as OpenKruise writes it (history_control.go getPatch): the spec is
// encoded, decoded into generic maps (numbers through float64) and the five
// recorded fields are encoded again under "$patch":"replace", so object keys
// are sorted at every level and absent fields are null:
// {"spec":{"$patch":"replace","containers":…,"imagePullSecrets":…,
// "initContainers":…,"patchPodMetadata":…,"volumes":…}}.
// Equal bytes are what lets Flotilla reuse the revisions OpenKruise left
// (FindEqual) instead of writing a twin of each on takeover.
func RevisionData(set *appsv1alpha1.SidecarSet) ([]byte, error) {
	raw, err := json.Marshal(&set.Spec)
	if err != nil {
		return nil, fmt.Errorf("encode revision of sidecarset %s: %w", set.Name, err)
	}
	var spec map[string]any
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, fmt.Errorf("decode spec of sidecarset %s: %w", set.Name, err)
	}
	recorded := map[string]any{"$patch": "replace"}
	for _, k := range []string{"volumes", "containers", "initContainers", "imagePullSecrets", "patchPodMetadata"} {
		recorded[k] = spec[k] // nil (null) when absent, as OpenKruise's map copy
	}
	data, err := json.Marshal(map[string]any{"spec": recorded})
	if err != nil {
		return nil, fmt.Errorf("encode revision of sidecarset %s: %w", set.Name, err)
	}
	return data, nil
}

// Restore returns a copy of set whose recorded fields (containers,
// initContainers, volumes, imagePullSecrets, patchPodMetadata) come from
// rev, and whose status.latestRevision is rev's name, so hashes and the
// recorded controllerRevision describe the historic version.
func Restore(set *appsv1alpha1.SidecarSet, rev *appsv1.ControllerRevision) (*appsv1alpha1.SidecarSet, error) {
	var data struct {
		Spec revisionSpec `json:"spec"`
	}
	if err := json.Unmarshal(rev.Data.Raw, &data); err != nil {
		return nil, fmt.Errorf("decode ControllerRevision %s: %w", rev.Name, err)
	}
	out := set.DeepCopy()
	out.Spec.Volumes = data.Spec.Volumes
	out.Spec.Containers = data.Spec.Containers
	out.Spec.InitContainers = data.Spec.InitContainers
	out.Spec.ImagePullSecrets = data.Spec.ImagePullSecrets
	out.Spec.PatchPodMetadata = data.Spec.PatchPodMetadata
	out.Status.LatestRevision = rev.Name
	return out, nil
}

// PinnedRevision finds the revision injectionStrategy.revision names: by
// revisionName, or the newest (highest .revision) labelled with
// customVersion. nil, nil when nothing is pinned; an error naming the field
// when the revision does not exist.
func PinnedRevision(set *appsv1alpha1.SidecarSet, revs RevisionSource) (*appsv1.ControllerRevision, error) {
	info := set.Spec.InjectionStrategy.Revision
	if info == nil || (info.RevisionName == nil && info.CustomVersion == nil) {
		return nil, nil
	}
	all, err := revs.SidecarSetRevisions(set.Name)
	if err != nil {
		return nil, fmt.Errorf("list revisions of sidecarset %s: %w", set.Name, err)
	}
	if info.RevisionName != nil {
		for _, r := range all {
			if r.Name == *info.RevisionName {
				return r, nil
			}
		}
		return nil, fmt.Errorf("sidecarset %s: spec.injectionStrategy.revision.revisionName: ControllerRevision %q not found", set.Name, *info.RevisionName)
	}
	var found *appsv1.ControllerRevision
	for _, r := range all {
		if r.Labels[CustomVersionLabel] != *info.CustomVersion {
			continue
		}
		if found == nil || r.Revision > found.Revision {
			found = r
		}
	}
	if found == nil {
		return nil, fmt.Errorf("sidecarset %s: spec.injectionStrategy.revision.customVersion: no ControllerRevision labelled %s=%s", set.Name, CustomVersionLabel, *info.CustomVersion)
	}
	return found, nil
}

// ChooseRevision returns the version of set to inject into a new pod
// (OpenKruise's getSuitableRevisionSidecarSet): the latest when nothing is
// pinned; the pinned revision when updateStrategy.paused or policy Always;
// with policy Partial, the pinned revision for pods outside
// updateStrategy.selector, else the latest — except that a percentage
// partition p injects the pinned revision with probability p (rnd returns a
// float in [0,1)). The returned SidecarSet may be set itself: never modify it.
func ChooseRevision(set *appsv1alpha1.SidecarSet, pod *corev1.Pod, revs RevisionSource, rnd func() float64) (*appsv1alpha1.SidecarSet, error) {
	pinned, err := PinnedRevision(set, revs)
	if err != nil || pinned == nil {
		return set, err
	}
	historic, err := Restore(set, pinned)
	if err != nil {
		return nil, err
	}
	if set.Spec.UpdateStrategy.Paused {
		return historic, nil
	}
	if set.Spec.InjectionStrategy.Revision.Policy != appsv1alpha1.PartialSidecarSetInjectRevisionPolicy {
		return historic, nil
	}
	if us := set.Spec.UpdateStrategy.Selector; us != nil {
		sel, err := metav1.LabelSelectorAsSelector(us)
		if err != nil {
			return nil, fmt.Errorf("sidecarset %s: spec.updateStrategy.selector: %w", set.Name, err)
		}
		if !sel.Matches(labels.Set(pod.Labels)) {
			return historic, nil
		}
	}
	p := set.Spec.UpdateStrategy.Partition
	if p == nil || p.Type == intstr.Int {
		return set, nil
	}
	prob, err := percent(p.StrVal)
	if err != nil {
		return nil, fmt.Errorf("sidecarset %s: spec.updateStrategy.partition: %w", set.Name, err)
	}
	if rnd() < prob {
		return historic, nil
	}
	return set, nil
}

func percent(s string) (float64, error) {
	v, err := strconv.Atoi(strings.TrimSuffix(s, "%"))
	if err != nil || !strings.HasSuffix(s, "%") {
		return 0, fmt.Errorf("invalid percentage %q", s)
	}
	return float64(v) / 100, nil
}

func sortByName(s []*appsv1alpha1.SidecarSet) {
	sort.Slice(s, func(i, j int) bool { return s[i].Name < s[j].Name })
}
