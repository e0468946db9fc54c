package controller

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appspub "github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
)

var now = time.Date(2026, 11, 23, 20, 0, 0, 0, time.UTC)

func testSet(image string, mut ...func(*appsv1alpha1.SidecarSet)) *appsv1alpha1.SidecarSet {
	s := &appsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Spec: appsv1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers: []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "side", Image: image}}},
		},
	}
	for _, m := range mut {
		m(s)
	}
	return s
}

// injectedPod is a pod as the webhook creates it for set, running and ready
// (kubelet statuses), with labels.
func injectedPod(t *testing.T, name string, set *appsv1alpha1.SidecarSet, lbls map[string]string) *corev1.Pod {
	t.Helper()
	l := map[string]string{"app": "web"}
	for k, v := range lbls {
		l[k] = v
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: l, CreationTimestamp: metav1.NewTime(now)},
		Spec:       corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "main", Image: "app:1"}}},
	}
	out, _, err := sidecarcontrol.Inject(pod, []*appsv1alpha1.SidecarSet{set}, sidecarcontrol.RevisionList{}, sidecarcontrol.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return running(out, true)
}

func running(pod *corev1.Pod, ready bool) *corev1.Pod {
	p := pod.DeepCopy()
	p.Status.Phase = corev1.PodRunning
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionFalse
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "id-" + c.Image, Ready: ready})
	}
	return p
}

func podNames(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestPartitionCount(t *testing.T) {
	cases := []struct {
		p     *intstr.IntOrString
		total int
		want  int
	}{
		{nil, 10, 0},
		{ptr.To(intstr.FromInt32(3)), 10, 3},
		{ptr.To(intstr.FromInt32(30)), 10, 10},
		{ptr.To(intstr.FromString("90%")), 10, 9},
		{ptr.To(intstr.FromString("25%")), 10, 3}, // rounds up
		{ptr.To(intstr.FromString("99%")), 10, 9}, // at least one updated below 100%
		{ptr.To(intstr.FromString("100%")), 10, 10},
		{ptr.To(intstr.FromString("99%")), 1, 1},
	}
	for _, tc := range cases {
		got, err := partitionCount(tc.p, tc.total)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "partition %v of %d", tc.p, tc.total)
	}
	got, err := partitionCount(ptr.To(intstr.FromString("half")), 10)
	assert.Error(t, err, "an unreadable partition is an error, not a number")
	assert.Equal(t, 10, got, "and keeps every pod")
}

func TestPlanUpgrade(t *testing.T) {
	v1 := testSet("side:1")
	v2 := testSet("side:2")
	pods := func(n int, mut ...func(i int, p *corev1.Pod) *corev1.Pod) []*corev1.Pod {
		var out []*corev1.Pod
		for i := range n {
			p := injectedPod(t, fmt.Sprintf("p%d", i), v1, map[string]string{"idx": fmt.Sprint(i)})
			for _, m := range mut {
				p = m(i, p)
			}
			out = append(out, p)
		}
		return out
	}
	upgraded := func(p *corev1.Pod, set *appsv1alpha1.SidecarSet, kubeletCaughtUp bool) *corev1.Pod {
		out, _, err := sidecarcontrol.Upgrade(p, set, "r", false, now)
		if err != nil {
			t.Fatal(err)
		}
		if kubeletCaughtUp {
			return running(out, true)
		}
		return out
	}
	with := func(mut func(*appsv1alpha1.SidecarSet)) *appsv1alpha1.SidecarSet {
		s := v2.DeepCopy()
		mut(s)
		return s
	}
	cases := []struct {
		name          string
		set           *appsv1alpha1.SidecarSet
		pods          []*corev1.Pod
		wantUpgrade   []string
		wantNotUpgr   []string
		wantFlipCount int
		wantCorrupt   []string
		wantInvalid   string
	}{
		{name: "maxUnavailable defaults to 1", set: v2, pods: pods(3), wantUpgrade: []string{"p0"}},
		{name: "maxUnavailable 2", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
		}), pods: pods(3), wantUpgrade: []string{"p0", "p1"}},
		{name: "maxUnavailable 50% of 3 rounds up to 2", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("50%"))
		}), pods: pods(3), wantUpgrade: []string{"p0", "p1"}},
		{name: "an updated pod the kubelet has not caught up with uses the budget", set: v2,
			pods: pods(3, func(i int, p *corev1.Pod) *corev1.Pod {
				if i == 0 {
					return upgraded(p, v2, false)
				}
				return p
			}), wantUpgrade: nil},
		{name: "an updated, consistent, ready pod frees the budget", set: v2,
			pods: pods(3, func(i int, p *corev1.Pod) *corev1.Pod {
				if i == 0 {
					return upgraded(p, v2, true)
				}
				return p
			}), wantUpgrade: []string{"p1"}},
		{name: "not-ready pods go first and cost nothing", set: v2,
			pods: pods(3, func(i int, p *corev1.Pod) *corev1.Pod {
				if i == 2 {
					return running(p, false)
				}
				return p
			}), wantUpgrade: []string{"p2", "p0"}},
		{name: "partition keeps the last pods", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(2))
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(5))
		}), pods: pods(4), wantUpgrade: []string{"p0", "p1"}},
		{name: "partition 90% of 10: one pod", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("90%"))
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(5))
		}), pods: pods(10), wantUpgrade: []string{"p0"}},
		{name: "partition reached: nothing", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("90%"))
		}), pods: pods(10, func(i int, p *corev1.Pod) *corev1.Pod {
			if i == 0 {
				return upgraded(p, v2, true)
			}
			return p
		}), wantUpgrade: nil},
		{name: "selector limits the pods", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"idx": "2"}}
		}), pods: pods(3), wantUpgrade: []string{"p2"}},
		{name: "paused", set: with(func(s *appsv1alpha1.SidecarSet) { s.Spec.UpdateStrategy.Paused = true }), pods: pods(3)},
		{name: "NotUpdate", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Type = appsv1alpha1.NotUpdateSidecarSetStrategyType
		}), pods: pods(3)},
		{name: "priority: higher order value first", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.PriorityStrategy = &appspub.UpdatePriorityStrategy{OrderPriority: []appspub.UpdatePriorityOrderTerm{{OrderedKey: "idx"}}}
		}), pods: pods(3), wantUpgrade: []string{"p2"}},
		{name: "more than images changed: not upgradable", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.Containers[0].Command = []string{"new"}
		}), pods: pods(2), wantNotUpgr: []string{"p0", "p1"}},
		// Issue 26 item 13: what cannot be read is neither guessed nor dropped.
		{name: "a corrupt in-place state: that pod is left alone and reported", set: v2,
			pods: pods(3, func(i int, p *corev1.Pod) *corev1.Pod {
				if i == 0 {
					p.Annotations[sidecarcontrol.InplaceUpdateStateKey] = "{not json"
				}
				return p
			}), wantUpgrade: []string{"p1"}, wantCorrupt: []string{"p0"}},
		{name: "a corrupt hash annotation: that pod is left alone and reported", set: v2,
			pods: pods(3, func(i int, p *corev1.Pod) *corev1.Pod {
				if i == 1 {
					p.Annotations[sidecarcontrol.HashAnnotation] = "[]"
				}
				return p
			}), wantUpgrade: []string{"p0"}, wantCorrupt: []string{"p1"}},
		{name: "an unreadable maxUnavailable upgrades nothing and says why", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("half"))
		}), pods: pods(3), wantInvalid: "spec.updateStrategy.maxUnavailable"},
		{name: "an unreadable partition upgrades nothing and says why", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("most"))
		}), pods: pods(3), wantInvalid: "spec.updateStrategy.partition"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := planUpgrade(tc.set, tc.pods, now)
			assert.Equal(t, tc.wantUpgrade, nilIfEmpty(podNames(p.upgrade)), "upgrade")
			assert.Equal(t, tc.wantNotUpgr, nilIfEmpty(podNames(p.notUpgradable)), "not upgradable")
			assert.Len(t, p.flip, tc.wantFlipCount)
			var corrupt []*corev1.Pod
			for _, cp := range p.corrupt {
				corrupt = append(corrupt, cp.pod)
			}
			assert.Equal(t, tc.wantCorrupt, nilIfEmpty(podNames(corrupt)), "corrupt")
			if tc.wantInvalid == "" {
				assert.NoError(t, p.invalid)
			} else if assert.Error(t, p.invalid) {
				assert.Contains(t, p.invalid.Error(), tc.wantInvalid)
			}
		})
	}
}

// A native sidecar's image change would move the pod's hash without
// changing its init container: never in place.
func TestPlanUpgradeNativeSidecar(t *testing.T) {
	native := func(img string) *appsv1alpha1.SidecarSet {
		return testSet("side:1", func(s *appsv1alpha1.SidecarSet) {
			s.Spec.InitContainers = []appsv1alpha1.SidecarContainer{{Container: corev1.Container{Name: "n", Image: img, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}}
		})
	}
	pods := []*corev1.Pod{injectedPod(t, "p0", native("n:1"), nil), injectedPod(t, "p1", native("n:1"), nil)}
	p := planUpgrade(native("n:2"), pods, now)
	assert.Empty(t, p.upgrade)
	assert.Empty(t, p.notUpgradable)
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestExpandScatter(t *testing.T) {
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"zone": "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"zone": "b"}}},
		{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"zone": "a"}}},
	}
	got := expandScatter(appspub.UpdateScatterStrategy{{Key: "zone", Value: "*"}, {Key: "x", Value: "y"}}, pods)
	assert.Equal(t, appspub.UpdateScatterStrategy{{Key: "zone", Value: "a"}, {Key: "zone", Value: "b"}, {Key: "x", Value: "y"}}, got)
}
