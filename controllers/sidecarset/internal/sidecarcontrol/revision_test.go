package sidecarcontrol

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func TestRevisionData(t *testing.T) {
	set := newSet("s", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "reg"}}
	})
	data, err := RevisionData(set)
	if err != nil {
		t.Fatal(err)
	}
	// Keys sorted at every level, as OpenKruise's getPatch (history_control.go)
	// leaves them after its round trip through map[string]interface{}.
	want := `{"spec":{"$patch":"replace","containers":[{"image":"img:1","name":"s-c","resources":{},"shareVolumePolicy":{},"upgradeStrategy":{}}],"imagePullSecrets":[{"name":"reg"}],"initContainers":null,"patchPodMetadata":null,"volumes":null}}`
	if string(data) != want {
		t.Fatalf("data\n%s\nwant\n%s", data, want)
	}
	// Fields outside the recorded ones do not change the data.
	other := set.DeepCopy()
	other.Spec.UpdateStrategy.Paused = true
	other.Spec.Selector.MatchLabels["x"] = "y"
	if d2, _ := RevisionData(other); string(d2) != string(data) {
		t.Fatal("revision data depends on fields it does not record")
	}
	// Nested objects, numbers and defaulted fields as OpenKruise's defaulting
	// webhook stores them: every level sorted.
	deep := set.DeepCopy()
	deep.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	deep.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name", APIVersion: "v1"}}}}
	deep.Spec.Containers[0].UpgradeStrategy.UpgradeType = appsv1alpha1.SidecarContainerColdUpgrade
	deep.Spec.PatchPodMetadata = []appsv1alpha1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"z": "1", "a": "2"}, PatchPolicy: appsv1alpha1.SidecarSetRetainPatchPolicy}}
	deep.Spec.ImagePullSecrets = nil
	data, err = RevisionData(deep)
	if err != nil {
		t.Fatal(err)
	}
	want = `{"spec":{"$patch":"replace","containers":[{"env":[{"name":"POD","valueFrom":{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.name"}}}],"image":"img:1","name":"s-c","ports":[{"containerPort":8080,"name":"http","protocol":"TCP"}],"resources":{},"shareVolumePolicy":{},"upgradeStrategy":{"upgradeType":"ColdUpgrade"}}],"imagePullSecrets":null,"initContainers":null,"patchPodMetadata":[{"annotations":{"a":"2","z":"1"},"patchPolicy":"Retain"}],"volumes":null}}`
	if string(data) != want {
		t.Fatalf("data\n%s\nwant\n%s", data, want)
	}
}

func rev(t *testing.T, set *appsv1alpha1.SidecarSet, name string, n int64, customVersion string) *appsv1.ControllerRevision {
	t.Helper()
	data, err := RevisionData(set)
	if err != nil {
		t.Fatal(err)
	}
	r := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "flotilla-system", Labels: map[string]string{RevisionNameLabel: set.Name}},
		Data:       runtime.RawExtension{Raw: data}, Revision: n,
	}
	if customVersion != "" {
		r.Labels[CustomVersionLabel] = customVersion
	}
	return r
}

// The v1.3 release blog (§3): 10% of pods on version-2, new pods get version-1.
func TestChooseRevision(t *testing.T) {
	v1 := newSet("sidecarset", func(s *appsv1alpha1.SidecarSet) { s.Spec.Containers[0].Image = "sidecar:1" })
	v2 := newSet("sidecarset", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].Image = "sidecar:2"
		s.Labels = map[string]string{CustomVersionLabel: "version-2"}
		s.Status.LatestRevision = "sidecarset-v2"
	})
	revs := RevisionList{
		rev(t, v1, "sidecarset-old", 1, "version-1"),
		rev(t, v1, "sidecarset-v1", 2, "version-1"),
		rev(t, v2, "sidecarset-v2", 3, "version-2"),
		rev(t, newSet("other"), "other-x", 9, "version-1"),
	}
	with := func(mut func(*appsv1alpha1.SidecarSet)) *appsv1alpha1.SidecarSet {
		s := v2.DeepCopy()
		mut(s)
		return s
	}
	pin := func(policy appsv1alpha1.SidecarSetInjectRevisionPolicy, name, custom *string) func(*appsv1alpha1.SidecarSet) {
		return func(s *appsv1alpha1.SidecarSet) {
			s.Spec.InjectionStrategy.Revision = &appsv1alpha1.SidecarSetInjectRevision{RevisionName: name, CustomVersion: custom, Policy: policy}
		}
	}
	canary := newPod(func(p *corev1.Pod) { p.Labels["canary"] = "true" })
	cases := []struct {
		name      string
		set       *appsv1alpha1.SidecarSet
		pod       *corev1.Pod
		rnd       float64
		wantImage string
		wantRev   string
		wantErr   string
	}{
		{name: "nothing pinned: latest", set: v2, pod: newPod(), wantImage: "sidecar:2", wantRev: "sidecarset-v2"},
		{name: "revisionName", set: with(pin("", ptr.To("sidecarset-old"), nil)), pod: newPod(), wantImage: "sidecar:1", wantRev: "sidecarset-old"},
		{name: "customVersion: newest revision with the label", set: with(pin("", nil, ptr.To("version-1"))), pod: newPod(), wantImage: "sidecar:1", wantRev: "sidecarset-v1"},
		{name: "seed: partition 90%, customVersion version-1, policy Always",
			set: with(func(s *appsv1alpha1.SidecarSet) {
				s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("90%"))
				pin(appsv1alpha1.AlwaysSidecarSetInjectRevisionPolicy, nil, ptr.To("version-1"))(s)
			}), pod: newPod(), rnd: 0.95, wantImage: "sidecar:1", wantRev: "sidecarset-v1"},
		{name: "missing revisionName", set: with(pin("", ptr.To("gone"), nil)), pod: newPod(), wantErr: "spec.injectionStrategy.revision.revisionName"},
		{name: "missing customVersion", set: with(pin("", nil, ptr.To("version-9"))), pod: newPod(), wantErr: "spec.injectionStrategy.revision.customVersion"},
		{name: "updateStrategy.paused: pinned even with Partial", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Paused = true
			pin(appsv1alpha1.PartialSidecarSetInjectRevisionPolicy, nil, ptr.To("version-1"))(s)
		}), pod: newPod(), wantImage: "sidecar:1", wantRev: "sidecarset-v1"},
		{name: "Partial, pod outside updateStrategy.selector: pinned", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
			pin(appsv1alpha1.PartialSidecarSetInjectRevisionPolicy, nil, ptr.To("version-1"))(s)
		}), pod: newPod(), wantImage: "sidecar:1", wantRev: "sidecarset-v1"},
		{name: "Partial, pod inside updateStrategy.selector: latest", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
			pin(appsv1alpha1.PartialSidecarSetInjectRevisionPolicy, nil, ptr.To("version-1"))(s)
		}), pod: canary, wantImage: "sidecar:2", wantRev: "sidecarset-v2"},
		{name: "Partial, integer partition: latest", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(3))
			pin(appsv1alpha1.PartialSidecarSetInjectRevisionPolicy, nil, ptr.To("version-1"))(s)
		}), pod: newPod(), wantImage: "sidecar:2", wantRev: "sidecarset-v2"},
		{name: "Partial, 90% partition, draw below: pinned", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("90%"))
			pin(appsv1alpha1.PartialSidecarSetInjectRevisionPolicy, nil, ptr.To("version-1"))(s)
		}), pod: newPod(), rnd: 0.5, wantImage: "sidecar:1", wantRev: "sidecarset-v1"},
		{name: "Partial, 90% partition, draw above: latest", set: with(func(s *appsv1alpha1.SidecarSet) {
			s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("90%"))
			pin(appsv1alpha1.PartialSidecarSetInjectRevisionPolicy, nil, ptr.To("version-1"))(s)
		}), pod: newPod(), rnd: 0.95, wantImage: "sidecar:2", wantRev: "sidecarset-v2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ChooseRevision(tc.set, tc.pod, revs, func() float64 { return tc.rnd })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				// Inject rejects the pod with the same message.
				if _, _, err := Inject(tc.pod, []*appsv1alpha1.SidecarSet{tc.set}, revs, Options{}); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Inject err %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.Containers[0].Image != tc.wantImage || got.Status.LatestRevision != tc.wantRev {
				t.Fatalf("chose %s (%s), want %s (%s)", got.Spec.Containers[0].Image, got.Status.LatestRevision, tc.wantImage, tc.wantRev)
			}
			// The injected pod records the chosen revision and its hash.
			pod, _, err := Inject(tc.pod, []*appsv1alpha1.SidecarSet{tc.set}, revs, Options{Rand: func() float64 { return tc.rnd }})
			if err != nil {
				t.Fatal(err)
			}
			if PodControllerRevision(pod, "sidecarset") != tc.wantRev || PodHash(pod, "sidecarset") != Hash(got) {
				t.Fatalf("pod records %s / %s", PodControllerRevision(pod, "sidecarset"), PodHash(pod, "sidecarset"))
			}
		})
	}
}
