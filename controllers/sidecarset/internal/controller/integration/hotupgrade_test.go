package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// unready is kwok's simulated failing readinessProbe (hack/cluster/kwok).
const unready = "sim.kwok.x-k8s.io/unready-containers"

const emptyImage = "registry.local/empty:1.0.0"

// Item 5 (v0.9 seed): a HotUpgrade sidecar runs as proxy-1 (working) and
// proxy-2 (empty image). An upgrade puts the new image on the empty
// container, which becomes the working one; the old one keeps running until
// the new one is ready, then it is put back on the empty image (the flip).
// kwok runs no postStart hand-over, so the test walks the pod states: the
// new container is held unready (a failing readiness probe) to observe the
// state before the flip.
func TestHotUpgrade(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.createSet(h.newSet("hot", sideV1, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].Name = "proxy"
		s.Spec.Containers[0].UpgradeStrategy = appsv1alpha1.SidecarContainerUpgradeStrategy{
			UpgradeType: appsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: emptyImage,
		}
	}))
	created := h.createPods("hot", 1, nil, nil)
	name := created[0].Name
	pod := h.waitPods("hot", "ready", allReady(1))[0]
	assert.Equal(t, [2]string{sideV1, emptyImage}, pair(&pod))
	assert.Equal(t, `{"proxy":"proxy-1"}`, pod.Annotations[sidecarcontrol.WorkingHotUpgradeContainer])
	h.waitStatus("hot", "1 ready", func(s appsv1alpha1.SidecarSetStatus) bool { return s.ReadyPods == 1 && s.UpdatedPods == 1 })

	// The new container will fail its readiness probe for now.
	h.Env.PatchPod(t, h.NS, name, fmt.Sprintf(`{"metadata":{"annotations":{%q:"proxy-2"}}}`, unready))
	h.sets.Modify(h.setName("hot"), setImage("proxy", sideV2))

	// State 1: both containers on real images, proxy-2 (new) working, not flipped.
	mid := h.waitPods("hot", "v2 on the idle container", func(ps []corev1.Pod) bool {
		return len(ps) == 1 && pair(&ps[0]) == [2]string{sideV1, sideV2} && statusImage(&ps[0], "proxy-2") == sideV2
	})[0]
	assert.Equal(t, `{"proxy":"proxy-2"}`, mid.Annotations[sidecarcontrol.WorkingHotUpgradeContainer])
	assert.Equal(t, "1", mid.Annotations[sidecarcontrol.VersionAltAnnotation("proxy-2")], "the new container knows the old one's version")
	assert.NotEqual(t, "0", mid.Annotations[sidecarcontrol.VersionAnnotation("proxy-2")])
	assert.Equal(t, created[0].UID, mid.UID)
	testenv.Consistently(t, 2*time.Second, func() error {
		p := h.pods("hot")[0]
		if pair(&p) != [2]string{sideV1, sideV2} {
			return fmt.Errorf("flipped before the new container was ready: %v", pair(&p))
		}
		return nil
	})
	h.waitStatus("hot", "updated, not ready", func(s appsv1alpha1.SidecarSetStatus) bool { return s.UpdatedPods == 1 && s.UpdatedReadyPods == 0 })

	// State 2: the new container is ready — the old one goes back to the empty image.
	h.Env.PatchPod(t, h.NS, name, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, unready))
	done := h.waitPods("hot", "flipped", func(ps []corev1.Pod) bool {
		return len(ps) == 1 && pair(&ps[0]) == [2]string{emptyImage, sideV2} && statusImage(&ps[0], "proxy-1") == emptyImage && testenv.PodReady(&ps[0])
	})[0]
	assert.Equal(t, "0", done.Annotations[sidecarcontrol.VersionAnnotation("proxy-1")])
	assert.Equal(t, "0", done.Annotations[sidecarcontrol.VersionAltAnnotation("proxy-2")])
	assert.Equal(t, int32(0), restarts(&done, "main"), "the app container kept running")
	h.waitStatus("hot", "updated and ready", func(s appsv1alpha1.SidecarSetStatus) bool { return s.UpdatedReadyPods == 1 && s.ReadyPods == 1 })

	// The next version goes to proxy-1, the empty one now, and flips proxy-2.
	h.sets.Modify(h.setName("hot"), setImage("proxy", sideV3))
	h.waitPods("hot", "v3 working, flipped", func(ps []corev1.Pod) bool {
		return len(ps) == 1 && pair(&ps[0]) == [2]string{sideV3, emptyImage} && statusImage(&ps[0], "proxy-2") == emptyImage &&
			ps[0].Annotations[sidecarcontrol.WorkingHotUpgradeContainer] == `{"proxy":"proxy-1"}`
	})
}

func pair(p *corev1.Pod) [2]string { return [2]string{image(p, "proxy-1"), image(p, "proxy-2")} }
