package sidecarcontrol

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// The hot-upgrade sequence of pod states (kwok runs no postStart, so the
// hand-over itself is the sidecar's business; these are the states the
// controller writes).
func TestHotUpgradeSequence(t *testing.T) {
	hot := func(image string) *appsv1alpha1.SidecarSet {
		return newSet("s", func(s *appsv1alpha1.SidecarSet) {
			s.ResourceVersion = "rv-" + image
			s.Spec.Containers[0] = sidecar("proxy", image, func(c *appsv1alpha1.SidecarContainer) {
				c.UpgradeStrategy = appsv1alpha1.SidecarContainerUpgradeStrategy{UpgradeType: appsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:1"}
			})
		})
	}
	v1, v2, v3 := hot("proxy:1"), hot("proxy:2"), hot("proxy:3")
	pod, _ := mustInject(t, newPod(), []*appsv1alpha1.SidecarSet{v1}, RevisionList{}, Options{})
	pod = running(pod)
	if !Ready(pod, v1) || HotUpgrading(pod, v1) {
		t.Fatal("freshly injected pod: ready, not upgrading")
	}
	images := func(p *corev1.Pod) [2]string {
		return [2]string{container(t, p, "proxy-1").Image, container(t, p, "proxy-2").Image}
	}

	// 1. The new image goes on the empty container, which becomes working.
	up, changed, err := Upgrade(pod, v2, "r2", false, t0)
	if err != nil {
		t.Fatal(err)
	}
	if images(up) != [2]string{"proxy:1", "proxy:2"} || !reflect.DeepEqual(changed, []string{"proxy-2"}) {
		t.Fatalf("after upgrade images %v changed %v", images(up), changed)
	}
	if w, _ := HotUpgradeContainers("proxy", up); w != "proxy-2" {
		t.Fatalf("working %s, want proxy-2", w)
	}
	wantAnn := map[string]string{
		VersionAnnotation("proxy-2"): "rv-proxy:2", VersionAltAnnotation("proxy-2"): "1",
		VersionAnnotation("proxy-1"): "1", VersionAltAnnotation("proxy-1"): "rv-proxy:2",
	}
	for k, v := range wantAnn {
		if up.Annotations[k] != v {
			t.Errorf("%s = %q, want %q", k, up.Annotations[k], v)
		}
	}
	if !HotUpgrading(up, v2) || Ready(running(up), v2) {
		t.Fatal("mid-upgrade: upgrading and not ready for the sidecarset")
	}
	// 2. Not flippable until the new container runs the new image and is ready.
	notYet := up.DeepCopy()
	notYet.Status = pod.Status
	for i := range notYet.Status.ContainerStatuses {
		if notYet.Status.ContainerStatuses[i].Name == "proxy-2" {
			notYet.Status.ContainerStatuses[i].Ready = false
		}
	}
	if FlipReady(notYet, v2) {
		t.Fatal("flip before the new container is ready")
	}
	ready := running(up)
	if !FlipReady(ready, v2) {
		t.Fatal("flip not ready once the new container runs")
	}
	// 3. The flip puts the old container back on the empty image.
	flipped, changed, err := Flip(ready, v2, t0)
	if err != nil {
		t.Fatal(err)
	}
	if images(flipped) != [2]string{"empty:1", "proxy:2"} || !reflect.DeepEqual(changed, []string{"proxy-1"}) {
		t.Fatalf("after flip %v %v", images(flipped), changed)
	}
	if flipped.Annotations[VersionAnnotation("proxy-1")] != "0" || flipped.Annotations[VersionAltAnnotation("proxy-2")] != "0" {
		t.Fatalf("flip annotations %v", flipped.Annotations)
	}
	flipped = running(flipped)
	if HotUpgrading(flipped, v2) || !Ready(flipped, v2) || !IsUpdated(flipped, v2) {
		t.Fatal("after flip: done, ready, updated")
	}
	if again, changed, _ := Flip(flipped, v2, t0); len(changed) != 0 || !reflect.DeepEqual(again.Spec, flipped.Spec) {
		t.Fatal("second flip changed the pod")
	}
	// 4. The next upgrade goes to proxy-1 (the empty one now).
	up3, changed, _ := Upgrade(flipped, v3, "r3", false, t0)
	if images(up3) != [2]string{"proxy:3", "proxy:2"} || changed[0] != "proxy-1" {
		t.Fatalf("third version %v", images(up3))
	}
	if w, _ := HotUpgradeContainers("proxy", up3); w != "proxy-1" {
		t.Fatal("working container not proxy-1")
	}
}

// hotSet is SidecarSet s with one hot-upgrade sidecar "proxy" at image.
func hotSet(image string) *appsv1alpha1.SidecarSet {
	return newSet("s", func(s *appsv1alpha1.SidecarSet) {
		s.ResourceVersion = "rv-" + image
		s.Spec.Containers[0] = sidecar("proxy", image, func(c *appsv1alpha1.SidecarContainer) {
			c.UpgradeStrategy = appsv1alpha1.SidecarContainerUpgradeStrategy{UpgradeType: appsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:1"}
		})
	})
}

// The decisions one at a time, on a pair proxy-1 / proxy-2 given by its
// images, readiness and working container.
func TestHotUpgradeDecisions(t *testing.T) {
	set := hotSet("proxy:2")
	sc := &set.Spec.Containers[0]
	base, _ := mustInject(t, newPod(), []*appsv1alpha1.SidecarSet{hotSet("proxy:1")}, RevisionList{}, Options{})
	pair := func(img1, img2 string, ready1, ready2 bool, working string) *corev1.Pod {
		images := map[string]string{"proxy-1": img1, "proxy-2": img2}
		ready := map[string]bool{"proxy-1": ready1, "proxy-2": ready2}
		p := base.DeepCopy()
		for i, c := range p.Spec.Containers {
			if img, ok := images[c.Name]; ok {
				p.Spec.Containers[i].Image = img
			}
		}
		p = running(p)
		for i, s := range p.Status.ContainerStatuses {
			if r, ok := ready[s.Name]; ok {
				p.Status.ContainerStatuses[i].Ready = r
			}
		}
		setWorking(p.Annotations, "proxy", working)
		return p
	}
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		wantTarget  string
		wantHot     bool     // HotUpgrading
		wantFlipOK  bool     // FlipReady: the working containers ready (the plan flips only when HotUpgrading too)
		wantFlipped []string // what Flip resets to the empty image
	}{
		{"idle on the empty image: it takes the new image", pair("proxy:1", "empty:1", true, true, "proxy-1"), "proxy-2", false, true, nil},
		{"first on the empty image", pair("empty:1", "proxy:1", true, true, "proxy-2"), "proxy-1", false, true, nil},
		{"both busy, the working one not ready: no flip yet", pair("proxy:1", "proxy:2", true, false, "proxy-2"), "proxy-2", true, false, []string{"proxy-1"}},
		{"both busy and ready: the idle one", pair("proxy:1", "proxy:2", true, true, "proxy-2"), "proxy-1", true, true, []string{"proxy-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, _ := hotUpgradeTarget(sc, tc.pod)
			if target != tc.wantTarget {
				t.Errorf("target %s, want %s", target, tc.wantTarget)
			}
			if got := HotUpgrading(tc.pod, set); got != tc.wantHot {
				t.Errorf("HotUpgrading %v, want %v", got, tc.wantHot)
			}
			if got := FlipReady(tc.pod, set); got != tc.wantFlipOK {
				t.Errorf("FlipReady %v, want %v", got, tc.wantFlipOK)
			}
			_, flipped, err := Flip(tc.pod, set, t0)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(flipped, tc.wantFlipped) {
				t.Errorf("flipped %v, want %v", flipped, tc.wantFlipped)
			}
		})
	}
}
