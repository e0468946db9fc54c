package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

var inPlaceIfPossible = rolling(func(r *appsv1beta1.RollingUpdateStatefulSetStrategy) {
	r.PodUpdatePolicy = appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType
})

// Issue 26 item 4: the controller crashes between the two writes of an
// in-place update (the pod is left InPlaceUpdateReady=False, NotReady, at
// its old images, with no in-place state) and the rollout is reverted before
// it comes back. The restarted controller sets the gate True again, so the
// pod is Ready and back in Service endpoints; it used to stay NotReady for
// good (and, with OrderedReady, block every later rollout).
func TestInPlaceGateStrandedByCrashIsHealed(t *testing.T) {
	h := newHarness(t)
	stop := h.startController()
	h.create(newSet("strand", 2, inPlaceReady, inPlaceIfPossible))
	h.waitStatus("strand", "settled", settled(2))
	before := h.pods("strand")

	stop() // the crash, between the status write and the pod write
	p := h.Env.StrandInPlaceUpdate(t, h.NS, "strand-1")
	assert.False(t, testenv.PodReady(p), "the pod is out of service")

	h.startController()
	pods := h.waitPods("strand", "strand-1 Ready again", func(ps []corev1.Pod) bool {
		return readyNames("strand-0", "strand-1")(ps) && testenv.ConditionStatus(&ps[1], pub.InPlaceUpdateReady) == corev1.ConditionTrue
	})
	h.waitStatus("strand", "settled", settled(2))
	assert.Equal(t, testenv.PodUIDs(before), testenv.PodUIDs(pods), "no pod replaced")
	for _, p := range pods {
		assert.Equal(t, imageV1, p.Spec.Containers[0].Image, p.Name)
		assert.NotContains(t, p.Annotations, pub.InPlaceUpdateStateKey, "no update was started")
	}
}

// Issue 26 item 4, the pod write rejected (an image policy) and the rollout
// not reverted: the pod is never taken out of service for an update that
// cannot land (the write is tried as a dry run first), no pod is written,
// the retries back off, and a Warning event says why. Reverting the template
// settles the set with the same untouched pods.
func TestInPlaceUpdateRejectedByAdmission(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newSet("deny", 2, inPlaceReady, inPlaceIfPossible))
	h.waitStatus("deny", "settled", settled(2))
	msg := h.Env.DenyPodImage(t, h.NS, imageV2)
	before := h.pods("deny")

	h.modify("deny", setImage(imageV2))
	rejections := func() int32 {
		var n int32
		for _, e := range h.events("deny") {
			if e.Reason == "FailedUpdatePodInPlace" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, msg) {
				n += max(e.Count, 1)
			}
		}
		return n
	}
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return rejections() > 0, nil })
	untouched := func() error { return testenv.InServiceUnwritten(before, h.pods("deny")) }
	testenv.Consistently(t, 3*time.Second, untouched)
	// One dry run per attempt, retried with the queue's exponential back-off
	// (5 ms doubling): about ten here; a loop re-triggered by its own pod
	// writes would reach the recorder's spam cap (25) at once.
	n := rejections()
	t.Logf("FailedUpdatePodInPlace events after the rejection: %d", n)
	assert.LessOrEqual(t, n, int32(20), "retries back off")

	h.modify("deny", setImage(imageV1))
	h.waitStatus("deny", "settled at the reverted template", settled(2))
	if err := untouched(); err != nil {
		t.Fatal(err)
	}
}
