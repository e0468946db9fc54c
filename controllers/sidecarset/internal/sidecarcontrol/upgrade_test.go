package sidecarcontrol

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// running gives every container of pod a ready status with imageID id(image).
func running(pod *corev1.Pod) *corev1.Pod {
	p := pod.DeepCopy()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "id-" + c.Image, Ready: true})
	}
	return p
}

func TestColdUpgrade(t *testing.T) {
	v1 := newSet("s")
	pod, _ := mustInject(t, newPod(), []*appsv1alpha1.SidecarSet{v1}, RevisionList{}, Options{})
	pod = running(pod)
	v2 := v1.DeepCopy()
	v2.Spec.Containers[0].Image = "img:2"
	if IsUpdated(pod, v2) || !IsUpdated(pod, v1) {
		t.Fatal("IsUpdated follows the pod's recorded hash")
	}
	if !InPlaceUpgradable(pod, v2) {
		t.Fatal("image-only change must be in-place upgradable")
	}
	cmd := v1.DeepCopy()
	cmd.Spec.Containers[0].Command = []string{"x"}
	if InPlaceUpgradable(pod, cmd) {
		t.Fatal("command change must not be in-place upgradable")
	}
	out, changed, err := Upgrade(pod, v2, "s-rev2", false, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(changed, []string{"s-c"}) || container(t, out, "s-c").Image != "img:2" || container(t, out, "main").Image != "app:1" {
		t.Fatalf("changed %v, containers %+v", changed, out.Spec.Containers)
	}
	if !IsUpdated(out, v2) || PodControllerRevision(out, "s") != "s-rev2" {
		t.Fatal("hash annotation not moved to v2")
	}
	st := States(out)["s"]
	if st == nil || st.LastContainerStatuses["s-c"].ImageID != "id-img:1" || st.Revision != Hash(v2) {
		t.Fatalf("in-place state %+v", st)
	}
	if !strings.Contains(out.Annotations[InplaceUpdateStateKey], `"lastContainerStatuses":{"s-c":{"imageID":"id-img:1"}}`) {
		t.Fatalf("state annotation %s", out.Annotations[InplaceUpdateStateKey])
	}
	// The kubelet has not restarted the container yet: not consistent.
	if Consistent(out, v2) {
		t.Fatal("consistent before the new imageID")
	}
	if !Consistent(running(out), v2) {
		t.Fatal("not consistent after the new imageID")
	}
	if !Consistent(pod, v1) {
		t.Fatal("a never-upgraded pod is consistent")
	}
}

func TestUpgradeReappliesPatchPodMetadata(t *testing.T) {
	v1 := newSet("s", func(s *appsv1alpha1.SidecarSet) { s.Spec.PatchPodMetadata = seedPatches })
	pod, _ := mustInject(t, newPod(), []*appsv1alpha1.SidecarSet{v1}, RevisionList{}, Options{PatchMetadataDefaultsAllowed: true})
	v2 := v1.DeepCopy()
	v2.Spec.Containers[0].Image = "img:2"
	v2.Spec.PatchPodMetadata[1].Annotations["apps.kruise.io/container-launch-priority"] = "Changed"
	v2.Spec.PatchPodMetadata[0].Annotations["oom-score"] = `{"log-agent": 5}`
	out, _, err := Upgrade(pod, v2, "r", true, t0)
	if err != nil {
		t.Fatal(err)
	}
	if out.Annotations["apps.kruise.io/container-launch-priority"] != "Changed" || out.Annotations["oom-score"] != `{"log-agent":5}` {
		t.Fatalf("annotations %v", out.Annotations)
	}
	out, _, _ = Upgrade(pod, v2, "r", false, t0)
	if out.Annotations["apps.kruise.io/container-launch-priority"] != "Ordered" {
		t.Fatal("patch applied although not allowed")
	}
}

// The SidecarSetUpgradable condition as OpenKruise writes it: a JSON map of
// booleans, True/AllSidecarsetUpgradable when all are true (written after
// every upgrade, even with no condition yet), False/UpdateImmutableField
// otherwise; lastTransitionTime moves with the status only.
func TestSetUpgradableCondition(t *testing.T) {
	t1 := t0.Add(time.Minute)
	cond := func(status corev1.ConditionStatus, reason, msg string) *corev1.PodCondition {
		return &corev1.PodCondition{Type: UpgradableCondition, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(t0)}
	}
	cases := []struct {
		name       string
		cur        *corev1.PodCondition
		set        string
		upgradable bool
		want       *corev1.PodCondition // nil: no change
	}{
		{name: "upgraded, no condition yet: True written", set: "s", upgradable: true,
			want: &corev1.PodCondition{Type: UpgradableCondition, Status: corev1.ConditionTrue, Reason: "AllSidecarsetUpgradable", Message: `{"s":true}`, LastTransitionTime: metav1.NewTime(t1)}},
		{name: "not upgradable, no condition yet", set: "s", upgradable: false,
			want: &corev1.PodCondition{Type: UpgradableCondition, Status: corev1.ConditionFalse, Reason: "UpdateImmutableField", Message: `{"s":false}`, LastTransitionTime: metav1.NewTime(t1)}},
		{name: "same verdict: no write", cur: cond(corev1.ConditionFalse, "UpdateImmutableField", `{"s":false}`), set: "s", upgradable: false},
		{name: "same True verdict: no write", cur: cond(corev1.ConditionTrue, "AllSidecarsetUpgradable", `{"s":true}`), set: "s", upgradable: true},
		{name: "second set blocked: both kept, keys sorted", cur: cond(corev1.ConditionTrue, "AllSidecarsetUpgradable", `{"s":true}`), set: "a", upgradable: false,
			want: &corev1.PodCondition{Type: UpgradableCondition, Status: corev1.ConditionFalse, Reason: "UpdateImmutableField", Message: `{"a":false,"s":true}`, LastTransitionTime: metav1.NewTime(t1)}},
		{name: "one of two blocked sets upgradable: still False, transition time kept", cur: cond(corev1.ConditionFalse, "UpdateImmutableField", `{"a":false,"s":false}`), set: "s", upgradable: true,
			want: &corev1.PodCondition{Type: UpgradableCondition, Status: corev1.ConditionFalse, Reason: "UpdateImmutableField", Message: `{"a":false,"s":true}`, LastTransitionTime: metav1.NewTime(t0)}},
		{name: "last blocked set upgradable: True", cur: cond(corev1.ConditionFalse, "UpdateImmutableField", `{"a":true,"s":false}`), set: "s", upgradable: true,
			want: &corev1.PodCondition{Type: UpgradableCondition, Status: corev1.ConditionTrue, Reason: "AllSidecarsetUpgradable", Message: `{"a":true,"s":true}`, LastTransitionTime: metav1.NewTime(t1)}},
		{name: "Flotilla's former string message counts as blocked", cur: cond(corev1.ConditionFalse, "UpdateImmutableField", `{"a":"only images may change in place"}`), set: "s", upgradable: true,
			want: &corev1.PodCondition{Type: UpgradableCondition, Status: corev1.ConditionFalse, Reason: "UpdateImmutableField", Message: `{"a":false,"s":true}`, LastTransitionTime: metav1.NewTime(t0)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod()
			if tc.cur != nil {
				pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, *tc.cur}
			}
			before := pod.DeepCopy()
			got, changed := SetUpgradableCondition(pod, tc.set, tc.upgradable, t1)
			if !reflect.DeepEqual(pod, before) {
				t.Fatal("the pod was modified")
			}
			if tc.want == nil {
				if changed {
					t.Fatalf("no change expected, got %+v", got)
				}
				return
			}
			if !changed || !reflect.DeepEqual(got, *tc.want) {
				t.Fatalf("got %+v (changed %v), want %+v", got, changed, *tc.want)
			}
		})
	}
}

func TestRecordedNotUpgradable(t *testing.T) {
	pod := newPod()
	if RecordedNotUpgradable(pod, "s") {
		t.Fatal("no condition")
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: UpgradableCondition, Status: corev1.ConditionFalse, Message: `{"a":true,"s":false}`}}
	if !RecordedNotUpgradable(pod, "s") || RecordedNotUpgradable(pod, "a") || RecordedNotUpgradable(pod, "b") {
		t.Fatal("verdicts misread")
	}
}

func TestConsistentDigestImage(t *testing.T) {
	const digest = "reg/side@sha256:0123456789abcdef"
	v1 := newSet("s")
	v2 := v1.DeepCopy()
	v2.Spec.Containers[0].Image = digest
	pod, _ := mustInject(t, newPod(), []*appsv1alpha1.SidecarSet{v1}, RevisionList{}, Options{})
	up, _, err := Upgrade(running(pod), v2, "r", false, t0)
	if err != nil {
		t.Fatal(err)
	}
	if Consistent(up, v2) {
		t.Fatal("consistent while the kubelet still reports the old image")
	}
	st := up.DeepCopy()
	for i := range st.Status.ContainerStatuses {
		if st.Status.ContainerStatuses[i].Name == "s-c" {
			st.Status.ContainerStatuses[i].ImageID = "docker.io/reg/side@sha256:0123456789abcdef"
		}
	}
	if !Consistent(st, v2) {
		t.Fatal("a digest image is consistent once the imageID carries that digest")
	}
	st.Status.ContainerStatuses[0].ImageID = "docker.io/reg/side@sha256:ffff"
	if Consistent(st, v2) {
		t.Fatal("another digest is not the image asked for")
	}
}
