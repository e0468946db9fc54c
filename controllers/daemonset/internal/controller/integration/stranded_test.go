package integration

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/daemonset/internal/controller"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	"github.com/flotilla-dev/flotilla/kit/testenv/lab"
)

var inPlaceRolling = rolling(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.Type = appsv1alpha1.InplaceRollingUpdateType })

// Issue 26 item 4: the controller crashes between the two writes of an
// in-place update (the pod is left InPlaceUpdateReady=False, NotReady, at
// its old images, with no in-place state) and the rollout is reverted before
// it comes back. The restarted controller sets the gate True again, so the
// node's daemon is Ready and back in Service endpoints; it used to be
// skipped (no in-place state) and stay NotReady for good.
func TestInPlaceGateStrandedByCrashIsHealed(t *testing.T) {
	h := newHarness(t)
	nodes := h.nodes(2, nil)
	stop := h.start()
	h.sets.Create(h.newDS("strand", inPlaceRolling))
	before := h.waitPlaced("strand", nodes, "")
	h.waitStatus("strand", "settled", settled(2))

	stop() // the crash, between the status write and the pod write
	victim := before[nodes[0]]
	p := h.Env.StrandInPlaceUpdate(t, h.NS, victim.Name)
	assert.False(t, testenv.PodReady(p), "the pod is out of service")

	h.start()
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		for _, p := range h.pods("strand") {
			if p.Name == victim.Name {
				return testenv.PodReady(&p) && testenv.ConditionStatus(&p, pub.InPlaceUpdateReady) == corev1.ConditionTrue, nil
			}
		}
		return false, fmt.Errorf("pod %s gone", victim.Name)
	})
	after := h.waitPlaced("strand", nodes, "")
	h.waitStatus("strand", "settled", settled(2))
	lab.CheckHealedInPlace(t, slices.Collect(maps.Values(before)), slices.Collect(maps.Values(after)), imageV1)
}

// Issue 26 item 4, the pod write rejected (an image policy) and the rollout
// not reverted: the daemon is never taken out of service for an update that
// cannot land (the write is tried as a dry run first), no pod is written,
// the retries back off, and a Warning event says why. Reverting the
// template settles the DaemonSet with the same untouched pods.
func TestInPlaceUpdateRejectedByAdmission(t *testing.T) {
	h := newHarness(t)
	nodes, before := h.place("deny", 2, inPlaceRolling)
	h.waitStatus("deny", "settled", settled(2))
	msg := h.Env.DenyPodImage(t, h.NS, imageV2)
	for n, p := range h.waitPlaced("deny", nodes, "") {
		before[n] = p // the versions the rejection must not change
	}

	h.sets.Modify("deny", setImage(imageV2))
	rejections := func() int32 {
		return h.CountEvents("deny", func(e corev1.Event) bool {
			return e.Reason == controller.EventFailedInPlaceUpdate && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, msg)
		})
	}
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return rejections() > 0, nil })
	untouched := func() error { return testenv.InServiceUnwritten(slices.Collect(maps.Values(before)), h.pods("deny")) }
	h.BacksOffUnwritten(untouched, rejections)

	h.sets.Modify("deny", setImage(imageV1))
	h.waitStatus("deny", "settled at the reverted template", settled(2))
	if err := untouched(); err != nil {
		t.Fatal(err)
	}
}
