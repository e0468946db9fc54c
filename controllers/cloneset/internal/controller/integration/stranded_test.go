package integration

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

// Issue 26 item 4: the controller crashes between the two writes of an
// in-place update (the pod is left InPlaceUpdateReady=False, NotReady, at
// its old images, with no in-place state), and the rollout is reverted
// before it comes back. The restarted controller sets the gate True again,
// so the pod is Ready and back in Service endpoints — it used to be skipped
// as settled and stay NotReady for good.
func TestInPlaceGateStrandedByCrashIsHealed(t *testing.T) {
	h := newHarness(t)
	stop := h.startController()
	h.create(newCloneSet("strand", 2, strategy(appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)))
	before := h.waitPods("strand", "2 ready", allReady(2))
	h.waitStatus("strand", "settled", settled(2))

	stop() // the crash, between the status write and the pod write
	victim := before[0].Name
	p := h.Env.StrandInPlaceUpdate(t, h.NS, victim)
	assert.False(t, podReady(p), "the pod is out of service")
	assert.NotContains(t, p.Annotations, pub.InPlaceUpdateStateKey)

	h.startController()
	pods := h.waitPods("strand", "the stranded pod Ready again", func(ps []corev1.Pod) bool {
		return allReady(2)(ps) && testenv.ConditionStatus(&ps[0], pub.InPlaceUpdateReady) == corev1.ConditionTrue
	})
	h.waitStatus("strand", "settled", settled(2))
	lab.CheckHealedInPlace(t, before, pods, imageV1)
}

// Issue 26 item 4, the variant where the pod write is rejected (an image
// policy) and the rollout is not reverted: the pod is never taken out of
// service for an update that cannot land (the write is tried as a dry run
// first) and the controller does not hot-loop writing it — the pods are not
// written at all; a Warning event says why. Reverting the template then
// settles the CloneSet with the same untouched pods.
func TestInPlaceUpdateRejectedByAdmission(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.create(newCloneSet("deny", 2, strategy(appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType)))
	h.waitPods("deny", "2 ready", allReady(2))
	h.waitStatus("deny", "settled", settled(2))
	msg := h.Env.DenyPodImage(t, h.NS, imageV2)
	before := h.pods("deny")

	h.modify("deny", setImage(imageV2))
	ev := h.waitEvent("deny", "FailedUpdatePodInPlace")
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Contains(t, ev.Message, msg)
	untouched := func() error { return testenv.InServiceUnwritten(before, h.pods("deny")) }
	h.BacksOffUnwritten(untouched, func() int32 {
		return h.CountEvents("deny", func(e corev1.Event) bool {
			return e.Reason == "FailedUpdatePodInPlace" && strings.Contains(e.Message, msg)
		})
	})

	h.modify("deny", setImage(imageV1))
	h.waitStatus("deny", "settled at the reverted template", settled(2))
	if err := untouched(); err != nil {
		t.Fatal(err)
	}
}
