package integration

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// Five pods that never become ready (a crash loop, as far as the controller
// can tell) and maxUnavailable 1: a rollout replaces one, and while that pod
// at the new revision is unavailable too, no other pod is touched — a bad
// template is not rolled onto every pod at once. Once the new pod is ready,
// the next one follows.
func TestUpdateCapWithUnavailablePods(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("crash", 5, neverReady, func(cs *appsv1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	}))
	h.waitPods("crash", "5 running, none ready", func(ps []corev1.Pod) bool {
		return len(ps) == 5 && countRunning(ps) == 5
	})
	h.modify("crash", setImage(imageV2))
	h.waitPods("crash", "one pod on v2", func(ps []corev1.Pod) bool { return countImage(ps, imageV2) == 1 })
	testenv.Consistently(t, 3*time.Second, func() error {
		if n := countImage(h.pods("crash"), imageV2); n > 1 {
			return fmt.Errorf("%d pods moved to v2 while the first one is unavailable", n)
		}
		return nil
	})
	for _, p := range h.pods("crash") {
		if p.Spec.Containers[0].Image == imageV2 {
			h.patchPod(p.Name, `{"metadata":{"annotations":{"`+unreadyAnnotation+`":null}}}`)
		}
	}
	h.waitPods("crash", "the next pod follows", func(ps []corev1.Pod) bool { return countImage(ps, imageV2) == 2 })
}

func countRunning(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning {
			n++
		}
	}
	return n
}
