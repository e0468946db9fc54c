package integration

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
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
	lab.CheckHealedInPlace(t, before, pods, imageV1)
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
		return h.CountEvents("deny", func(e corev1.Event) bool {
			return e.Reason == "FailedUpdatePodInPlace" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, msg)
		})
	}
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return rejections() > 0, nil })
	untouched := func() error { return testenv.InServiceUnwritten(before, h.pods("deny")) }
	h.BacksOffUnwritten(untouched, rejections)

	h.modify("deny", setImage(imageV1))
	h.waitStatus("deny", "settled at the reverted template", settled(2))
	if err := untouched(); err != nil {
		t.Fatal(err)
	}
}
