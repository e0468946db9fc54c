package podreadiness

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestInitGateConditions(t *testing.T) {
	containersReady := cond(corev1.ContainersReady, corev1.ConditionTrue)
	containersNotReady := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady",
		Message: "containers with unready status: [main]", LastTransitionTime: metav1.NewTime(t0)}
	gatesNotReady := func(msg string) corev1.PodCondition {
		return corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: ReasonReadinessGatesNotReady,
			Message: msg, LastTransitionTime: metav1.NewTime(t0)}
	}
	missing := func(t corev1.PodConditionType) string {
		return `corresponding condition of pod readiness gate "` + string(t) + `" does not exist.`
	}
	added := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}
	}
	readyNow := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}
	both := []corev1.PodConditionType{inPlaceUpdateReady, ConditionType}

	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		types   []corev1.PodConditionType
		changed bool
		want    []corev1.PodCondition // when changed
	}{
		{
			name:  "no readiness gates",
			pod:   newPod(nil, containersReady, cond(corev1.PodReady, corev1.ConditionTrue)),
			types: both,
		},
		{
			name:  "gated type already has a condition (even False)",
			pod:   newPod([]corev1.PodConditionType{inPlaceUpdateReady}, containersReady, gatesNotReady("x"), cond(inPlaceUpdateReady, corev1.ConditionFalse)),
			types: both,
		},
		{
			name:  "gated but not asked for",
			pod:   newPod([]corev1.PodConditionType{ConditionType}, containersReady, gatesNotReady(missing(ConditionType))),
			types: []corev1.PodConditionType{inPlaceUpdateReady},
		},
		{
			name:    "missing gate condition added True; Ready recomputed True",
			pod:     newPod([]corev1.PodConditionType{inPlaceUpdateReady}, containersReady, gatesNotReady(missing(inPlaceUpdateReady))),
			types:   both,
			changed: true,
			want:    []corev1.PodCondition{containersReady, readyNow, added(inPlaceUpdateReady)},
		},
		{
			name:    "both gates missing: both added, in the order asked",
			pod:     newPod([]corev1.PodConditionType{ConditionType, inPlaceUpdateReady}, containersReady, gatesNotReady(missing(ConditionType)+", "+missing(inPlaceUpdateReady))),
			types:   both,
			changed: true,
			want:    []corev1.PodCondition{containersReady, readyNow, added(inPlaceUpdateReady), added(ConditionType)},
		},
		{
			name: "only the missing one is added; a False one keeps Ready False",
			pod: newPod([]corev1.PodConditionType{ConditionType, inPlaceUpdateReady}, containersReady,
				gatesNotReady(missing(inPlaceUpdateReady)), kruiseCond(corev1.ConditionFalse, `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`)),
			types:   both,
			changed: true,
			want: []corev1.PodCondition{containersReady,
				gatesNotReady(`the status of pod readiness gate "KruisePodReady" is not "True", but False`),
				kruiseCond(corev1.ConditionFalse, `[{"userAgent":"Lifecycle","key":"preDeleteHook"}]`),
				added(inPlaceUpdateReady)},
		},
		{
			name:    "a gate nobody asked for keeps Ready False",
			pod:     newPod([]corev1.PodConditionType{ConditionType, inPlaceUpdateReady}, containersReady, gatesNotReady(missing(ConditionType)+", "+missing(inPlaceUpdateReady))),
			types:   []corev1.PodConditionType{inPlaceUpdateReady},
			changed: true,
			want:    []corev1.PodCondition{containersReady, gatesNotReady(missing(ConditionType)), added(inPlaceUpdateReady)},
		},
		{
			name:    "containers not ready: Ready stays False with their reason",
			pod:     newPod([]corev1.PodConditionType{inPlaceUpdateReady}, containersNotReady, gatesNotReady(missing(inPlaceUpdateReady))),
			types:   both,
			changed: true,
			want: []corev1.PodCondition{containersNotReady,
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [main]", LastTransitionTime: metav1.NewTime(t0)},
				added(inPlaceUpdateReady)},
		},
		{
			name:    "no Ready condition yet: none is added",
			pod:     newPod([]corev1.PodConditionType{inPlaceUpdateReady}),
			types:   both,
			changed: true,
			want:    []corev1.PodCondition{added(inPlaceUpdateReady)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pod.DeepCopy()
			changed, got := InitGateConditions(tc.pod, now, tc.types...)
			assert.Equal(t, before, tc.pod, "pod modified")
			assert.Equal(t, tc.changed, changed)
			assert.Equal(t, tc.changed, MissingGateCondition(tc.pod, tc.types...), "MissingGateCondition")
			if !tc.changed {
				// The pod's own slice comes back: same backing array.
				assert.Equal(t, tc.pod.Status.Conditions, got)
				if assert.NotEmpty(t, got) {
					assert.Same(t, &tc.pod.Status.Conditions[0], &got[0], "unchanged conditions should be the pod's slice")
				}
				return
			}
			assert.Equal(t, tc.want, got)
		})
		t.Run(tc.name+"/WithGateConditions", func(t *testing.T) {
			before := tc.pod.DeepCopy()
			next := WithGateConditions(tc.pod, now, tc.types...)
			assert.Equal(t, before, tc.pod, "pod modified")
			if !tc.changed {
				assert.Nil(t, next, "nothing missing: nothing to write")
				return
			}
			want := before.DeepCopy()
			want.Status.Conditions = tc.want
			assert.Equal(t, want, next)
		})
	}
}
