package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	appspub "github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/podutil"
	"github.com/flotilla-dev/flotilla/kit/updatesort"
)

// plan is what one sync does to a SidecarSet's matched pods.
type plan struct {
	// flip: hot upgrades whose new container is ready; when any, nothing
	// else is upgraded in this sync (as OpenKruise).
	flip []*corev1.Pod
	// upgrade: pods to move in place to the latest version now.
	upgrade []*corev1.Pod
	// notUpgradable: pods behind the latest version in more than images.
	notUpgradable []*corev1.Pod
	// corrupt: pods with an annotation the upgrade reads that does not
	// decode; they are neither flipped nor upgraded, and count as unavailable.
	corrupt []corruptPod
	// invalid: the update strategy cannot be read (a value stored before the
	// schema rejected it); nothing is upgraded.
	invalid error
}

type corruptPod struct {
	pod *corev1.Pod
	err error
}

// planUpgrade decides, from the cache alone, which pods to flip or upgrade
// (OpenKruise's GetNextUpgradePods): nothing under NotUpdate or
// updateStrategy.paused, nor for a SidecarSet with native-sidecar init
// containers; hot upgrades ready to flip first; otherwise the
// pods not on the latest version, matching updateStrategy.selector, whose
// difference is images only and that have no upgrade in flight, in
// ActivePods order then priority then scatter, minus the last `partition`
// of them, limited so that updated-but-unavailable pods never exceed
// maxUnavailable — upgrading a pod that is not ready costs no budget.
func planUpgrade(set *appsv1alpha1.SidecarSet, pods []*corev1.Pod, now time.Time) plan {
	var p plan
	us := set.Spec.UpdateStrategy
	if us.Type == appsv1alpha1.NotUpdateSidecarSetStrategyType || us.Paused || hasNativeSidecar(set) {
		return p
	}
	broken := map[*corev1.Pod]bool{}
	for _, pod := range pods {
		if err := sidecarcontrol.CorruptAnnotation(pod); err != nil {
			p.corrupt = append(p.corrupt, corruptPod{pod, err})
			broken[pod] = true
		}
	}
	for _, pod := range pods {
		if broken[pod] {
			continue
		}
		if sidecarcontrol.HotUpgrading(pod, set) && sidecarcontrol.FlipReady(pod, set) {
			p.flip = append(p.flip, pod)
		}
	}
	if len(p.flip) > 0 {
		return p
	}
	selected := labels.Everything()
	if us.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(us.Selector)
		if err != nil {
			return p // the schema validates selectors; an invalid one updates nothing
		}
		selected = s
	}
	var waiting []*corev1.Pod
	for _, pod := range pods {
		if broken[pod] || sidecarcontrol.IsUpdated(pod, set) || !selected.Matches(labels.Set(pod.Labels)) {
			continue
		}
		switch {
		case !sidecarcontrol.InPlaceUpgradable(pod, set):
			p.notUpgradable = append(p.notUpgradable, pod)
		case sidecarcontrol.Consistent(pod, set):
			waiting = append(waiting, pod)
		}
	}
	waiting = podutil.SortForDeletion(waiting, nil, now)
	waiting = updatesort.Sort(waiting, us.PriorityStrategy, expandScatter(us.ScatterStrategy, pods))

	partition, err := partitionCount(us.Partition, len(pods))
	if err != nil {
		p.invalid = fmt.Errorf("spec.updateStrategy.partition: %w", err)
		return p
	}
	maxUnavailable := 1
	if us.MaxUnavailable != nil {
		if maxUnavailable, err = intstr.GetScaledValueFromIntOrPercent(us.MaxUnavailable, len(pods), true); err != nil {
			p.invalid = fmt.Errorf("spec.updateStrategy.maxUnavailable: %w", err)
			return p
		}
	}
	if len(waiting) <= partition {
		return p
	}
	waiting = waiting[:len(waiting)-partition]

	unavailable := 0
	for _, pod := range pods {
		if sidecarcontrol.IsUpdated(pod, set) && !available(pod, set) {
			unavailable++
		}
	}
	for _, pod := range waiting {
		if !available(pod, set) {
			p.upgrade = append(p.upgrade, pod)
			continue
		}
		if unavailable >= maxUnavailable {
			break
		}
		unavailable++
		p.upgrade = append(p.upgrade, pod)
	}
	return p
}

// available: the kubelet runs what the pod asks for and the pod is ready
// (hot-upgrade twins back on the empty image).
func available(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) bool {
	return sidecarcontrol.Consistent(pod, set) && sidecarcontrol.Ready(pod, set)
}

// partitionCount is OpenKruise's CalculatePartitionReplicas over the
// matched pods: a percentage rounds up (keeping at least one old pod), but
// below 100% at least one pod is updated when there are two or more.
func partitionCount(partition *intstr.IntOrString, total int) (int, error) {
	if partition == nil {
		return 0, nil
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(partition, total, true)
	if err != nil {
		return total, err
	}
	if total > 1 && v == total && partition.Type == intstr.String && partition.StrVal != "100%" {
		v = total - 1
	}
	return max(min(v, total), 0), nil
}

// expandScatter replaces a term with value "*" by one term per distinct
// value of that label among pods.
func expandScatter(scatter appspub.UpdateScatterStrategy, pods []*corev1.Pod) appspub.UpdateScatterStrategy {
	var out appspub.UpdateScatterStrategy
	seen := map[appspub.UpdateScatterTerm]bool{}
	add := func(t appspub.UpdateScatterTerm) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, term := range scatter {
		if term.Value != "*" {
			add(term)
			continue
		}
		for _, pod := range pods {
			if v, ok := pod.Labels[term.Key]; ok {
				add(appspub.UpdateScatterTerm{Key: term.Key, Value: v})
			}
		}
	}
	return out
}

// hasNativeSidecar: a SidecarSet with native-sidecar init containers is
// never upgraded in place (OpenKruise forbids RollingUpdate for it): their
// images are part of the hash, and a pod's init containers are not what an
// in-place upgrade changes.
func hasNativeSidecar(set *appsv1alpha1.SidecarSet) bool {
	for i := range set.Spec.InitContainers {
		if sidecarcontrol.IsNativeSidecar(&set.Spec.InitContainers[i].Container) {
			return true
		}
	}
	return false
}
