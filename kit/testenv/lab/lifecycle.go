package lab

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// HookLabel is the label a user's controller keeps on a pod while its
// lifecycle hook has work to do: the tests put it in the template so pods
// start hooked, and release a pod by removing it.
const HookLabel = "example.com/hooked"

// AddHook sets the lifecycle hook of kind ("preDelete", "inPlaceUpdate" or
// "preNormal") in *lc, allocating it, handled by HookLabel. The preDelete and
// inPlaceUpdate hooks also put HookLabel in templateLabels, so that pods
// start hooked; markPodNotReady applies to those two.
func AddHook(lc **pub.Lifecycle, templateLabels map[string]string, kind string, markPodNotReady bool) {
	hook := &pub.LifecycleHook{LabelsHandler: map[string]string{HookLabel: "true"}, MarkPodNotReady: markPodNotReady}
	if *lc == nil {
		*lc = &pub.Lifecycle{}
	}
	switch kind {
	case "preDelete":
		(*lc).PreDelete = hook
		templateLabels[HookLabel] = "true"
	case "inPlaceUpdate":
		(*lc).InPlaceUpdate = hook
		templateLabels[HookLabel] = "true"
	case "preNormal":
		(*lc).PreNormal = &pub.LifecycleHook{LabelsHandler: map[string]string{HookLabel: "true"}}
	default: // a typo must not build a workload without its hook
		panic(fmt.Sprintf("lab.AddHook: unknown hook kind %q (preDelete, inPlaceUpdate or preNormal)", kind))
	}
}

// Release removes HookLabel from the pod: its hook's work is done.
func (l *Lab) Release(pod string) {
	l.T.Helper()
	l.PatchPod(pod, `{"metadata":{"labels":{"`+HookLabel+`":null}}}`)
}

// Hook puts HookLabel on the pod: the hook is (again) all applied.
func (l *Lab) Hook(pod string) {
	l.T.Helper()
	l.PatchPod(pod, `{"metadata":{"labels":{"`+HookLabel+`":"true"}}}`)
}

// State is the pod's lifecycle state label.
func State(p corev1.Pod) string { return p.Labels[pub.LifecycleStateKey] }

// InState returns the pods in lifecycle state s.
func InState(pods []corev1.Pod, s pub.LifecycleStateType) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if State(p) == string(s) {
			out = append(out, p)
		}
	}
	return out
}

// PreparingDeleteNotReady reports whether the pod waits in PreparingDelete
// out of service: KruisePodReady False and the pod not Ready.
func PreparingDeleteNotReady(p *corev1.Pod) bool {
	return State(*p) == string(pub.LifecycleStatePreparingDelete) &&
		testenv.ConditionStatus(p, pub.KruisePodReadyConditionType) == corev1.ConditionFalse && !testenv.PodReady(p)
}

// CheckKruisePodReady checks that every pod has the KruisePodReady readiness
// gate (what says why is msg) and the condition True.
func CheckKruisePodReady(t *testing.T, pods []corev1.Pod, msg string) {
	t.Helper()
	for _, p := range pods {
		assert.Contains(t, p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.KruisePodReadyConditionType}, msg)
		assert.Equal(t, corev1.ConditionTrue, testenv.ConditionStatus(&p, pub.KruisePodReadyConditionType))
	}
}

// HeldWhileHooked checks for 2 seconds that the pod, hooked, is not deleted:
// list returns the workload's live pods.
func (l *Lab) HeldWhileHooked(list func() []corev1.Pod, pod string) {
	l.T.Helper()
	testenv.Consistently(l.T, 2*time.Second, func() error {
		if !slices.Contains(testenv.PodNames(list()), pod) {
			return fmt.Errorf("hooked pod %s was deleted", pod)
		}
		return nil
	})
}
