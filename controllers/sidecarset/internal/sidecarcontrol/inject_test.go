package sidecarcontrol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

func TestMatchesAndSelect(t *testing.T) {
	prod := map[string]string{"env": "prod", "kubernetes.io/metadata.name": "ns"}
	cases := []struct {
		name   string
		set    *appsv1alpha1.SidecarSet
		pod    *corev1.Pod
		nsLbls map[string]string
		want   bool
	}{
		{"selector matches", newSet("a"), newPod(), prod, true},
		{"selector does not match", newSet("a"), newPod(func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }), prod, false},
		{"empty selector matches nothing", newSet("a", func(s *appsv1alpha1.SidecarSet) { s.Spec.Selector = &metav1.LabelSelector{} }), newPod(), prod, false},
		{"namespace equal", newSet("a", func(s *appsv1alpha1.SidecarSet) { s.Spec.Namespace = "ns" }), newPod(), prod, true},
		{"namespace other", newSet("a", func(s *appsv1alpha1.SidecarSet) { s.Spec.Namespace = "other" }), newPod(), prod, false},
		{"pod without namespace is in default", newSet("a", func(s *appsv1alpha1.SidecarSet) { s.Spec.Namespace = "default" }),
			newPod(func(p *corev1.Pod) { p.Namespace = "" }), nil, true},
		{"namespaceSelector matches", newSet("a", func(s *appsv1alpha1.SidecarSet) {
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
		}), newPod(), prod, true},
		{"namespaceSelector does not match", newSet("a", func(s *appsv1alpha1.SidecarSet) {
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}
		}), newPod(), prod, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Matches(tc.pod, tc.nsLbls, tc.set)
			if err != nil || got != tc.want {
				t.Fatalf("Matches = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	paused := newSet("b", func(s *appsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true })
	other := newSet("c", func(s *appsv1alpha1.SidecarSet) { s.Spec.Selector.MatchLabels = map[string]string{"app": "db"} })
	got, err := Select(newPod(), prod, []*appsv1alpha1.SidecarSet{newSet("z"), paused, other, newSet("a")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "z" {
		t.Fatalf("Select: injectionStrategy.paused and non-matching sets are left out, the rest in name order; got %v", got)
	}
}

func TestInjectContainers(t *testing.T) {
	set := newSet("s", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers = []appsv1alpha1.SidecarContainer{
			sidecar("before", "b:1"), // default BeforeAppContainer
			sidecar("after", "a:1", func(c *appsv1alpha1.SidecarContainer) { c.PodInjectPolicy = appsv1alpha1.AfterAppContainerType }),
			sidecar("explicit-before", "e:1", func(c *appsv1alpha1.SidecarContainer) { c.PodInjectPolicy = appsv1alpha1.BeforeAppContainerType }),
		}
	})
	pod, _ := mustInject(t, newPod(), []*appsv1alpha1.SidecarSet{set}, RevisionList{}, Options{})
	if got, want := names(pod.Spec.Containers), []string{"before", "explicit-before", "main", "after"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("containers %v, want %v", got, want)
	}
	for _, n := range []string{"before", "after", "explicit-before"} {
		if envValue(container(t, pod, n), InjectedEnv) != "true" {
			t.Errorf("%s lacks IS_INJECTED=true", n)
		}
	}
	if envValue(container(t, pod, "main"), InjectedEnv) != "" {
		t.Error("app container got IS_INJECTED")
	}

	// A sidecar whose name the pod already has replaces it in place.
	withSame := newPod(func(p *corev1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "after", Image: "old"})
	})
	pod, _ = mustInject(t, withSame, []*appsv1alpha1.SidecarSet{set}, RevisionList{}, Options{})
	if got, want := names(pod.Spec.Containers), []string{"before", "explicit-before", "main", "after"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("containers %v, want %v", got, want)
	}
	if container(t, pod, "after").Image != "a:1" {
		t.Fatal("same-name container not replaced")
	}

	// EnableSortSidecarContainerByName.
	pod, _ = mustInject(t, newPod(), []*appsv1alpha1.SidecarSet{set}, RevisionList{}, Options{SortByName: true})
	if got, want := names(pod.Spec.Containers), []string{"before", "explicit-before", "main", "after"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("sorted containers %v, want %v", got, want)
	}
}

func TestInjectInitContainers(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	set := newSet("s", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.InitContainers = []appsv1alpha1.SidecarContainer{
			sidecar("z-init", "i:1"),
			sidecar("a-native", "n:1", func(c *appsv1alpha1.SidecarContainer) { c.RestartPolicy = &always }),
		}
	})
	pod := newPod(func(p *corev1.Pod) { p.Spec.InitContainers = []corev1.Container{{Name: "app-init", Image: "x"}} })
	out, _ := mustInject(t, pod, []*appsv1alpha1.SidecarSet{set}, RevisionList{}, Options{})
	if got, want := names(out.Spec.InitContainers), []string{"app-init", "a-native", "z-init"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("init containers %v, want %v (appended after the pod's, sorted by name)", got, want)
	}
	if envValue(container(t, out, "z-init"), InjectedEnv) != "true" {
		t.Error("init container lacks IS_INJECTED")
	}
	specs, err := PodUpgradeSpecs(out, HashAnnotation)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := specs["s"].SidecarList, []string{"a-native", "s-c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("sidecarList %v, want %v: native sidecars count, plain init containers do not", got, want)
	}
	// A native sidecar is hashed; a plain init container is not.
	plain := set.DeepCopy()
	plain.Spec.InitContainers = plain.Spec.InitContainers[:1]
	plain2 := plain.DeepCopy()
	plain2.Spec.InitContainers[0].Image = "i:2"
	if Hash(plain) != Hash(plain2) {
		t.Error("plain init container image changed the hash")
	}
	native2 := set.DeepCopy()
	native2.Spec.InitContainers[1].Image = "n:2"
	if Hash(set) == Hash(native2) {
		t.Error("native sidecar image change did not change the hash")
	}
}

func TestInjectVolumesAndSecrets(t *testing.T) {
	vol := func(name, path string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}
	}
	a := newSet("a", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/s"}, {Name: "podvol", MountPath: "/p"}}
		s.Spec.Volumes = []corev1.Volume{vol("shared", "/x"), vol("unused", "/u"), vol("podvol", "/ignored")}
		s.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "reg"}, {Name: "pod-secret"}}
	})
	b := newSet("b", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "shared", MountPath: "/s"}}
		s.Spec.Volumes = []corev1.Volume{vol("shared", "/x")}
		s.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "reg"}}
	})
	pod := newPod(func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{vol("podvol", "/mine")}
		p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pod-secret"}}
	})
	out, _ := mustInject(t, pod, []*appsv1alpha1.SidecarSet{a, b}, RevisionList{}, Options{})
	want := []corev1.Volume{vol("podvol", "/mine"), vol("shared", "/x")}
	if !reflect.DeepEqual(out.Spec.Volumes, want) {
		t.Fatalf("volumes %+v, want %+v (pod's volume wins, unreferenced volumes not injected, identical ones once)", out.Spec.Volumes, want)
	}
	if got := out.Spec.ImagePullSecrets; len(got) != 2 || got[0].Name != "pod-secret" || got[1].Name != "reg" {
		t.Fatalf("imagePullSecrets %v, want [pod-secret reg]", got)
	}

	conflicting := b.DeepCopy()
	conflicting.Spec.Volumes = []corev1.Volume{vol("shared", "/other")}
	_, _, err := Inject(pod, []*appsv1alpha1.SidecarSet{a, conflicting}, RevisionList{}, Options{})
	if err == nil || !strings.Contains(err.Error(), "spec.volumes[shared]") {
		t.Fatalf("conflicting volumes of two sidecarsets: err %v, want one naming spec.volumes[shared]", err)
	}

	sameName := newSet("c", func(s *appsv1alpha1.SidecarSet) { s.Spec.Containers[0].Name = "a-c" })
	_, _, err = Inject(pod, []*appsv1alpha1.SidecarSet{a, sameName}, RevisionList{}, Options{})
	if err == nil || !strings.Contains(err.Error(), "container a-c") {
		t.Fatalf("two sidecarsets injecting one container name: err %v", err)
	}
}

func TestInjectTransferEnv(t *testing.T) {
	set := newSet("s", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "OWN", Value: "sidecar"}}
		s.Spec.Containers[0].TransferEnv = []appsv1alpha1.TransferEnvVar{
			{SourceContainerName: "main", EnvName: "A"},
			{SourceContainerName: "main", EnvNames: []string{"OWN", "MISSING"}},
			{SourceContainerNameFrom: &appsv1alpha1.SourceContainerNameSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['source']"}}, EnvName: "B"},
			{SourceContainerNameFrom: &appsv1alpha1.SourceContainerNameSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['src']"}}, EnvName: "C"},
			{SourceContainerName: "nope", EnvName: "A"},
		}
	})
	pod := newPod(func(p *corev1.Pod) {
		p.Labels["source"] = "other"
		p.Annotations = map[string]string{"src": "main"}
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "OWN", Value: "app"}, {Name: "C", Value: "3"}}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "other", Image: "o", Env: []corev1.EnvVar{{Name: "B", Value: "2"}}})
	})
	out, _ := mustInject(t, pod, []*appsv1alpha1.SidecarSet{set}, RevisionList{}, Options{})
	got := container(t, out, "s-c").Env
	want := []corev1.EnvVar{{Name: "OWN", Value: "sidecar"}, {Name: InjectedEnv, Value: "true"}, {Name: "A", Value: "1"}, {Name: "B", Value: "2"}, {Name: "C", Value: "3"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("env %+v\nwant %+v", got, want)
	}
}

func TestInjectShareVolumePolicies(t *testing.T) {
	set := newSet("s", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "own", MountPath: "/data"}}
		s.Spec.Containers[0].ShareVolumePolicy.Type = appsv1alpha1.ShareVolumePolicyEnabled
		s.Spec.Containers[0].ShareVolumeDevicePolicy = &appsv1alpha1.ShareVolumePolicy{Type: appsv1alpha1.ShareVolumePolicyEnabled}
	})
	pod := newPod(func(p *corev1.Pod) {
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{
			{Name: "logs", MountPath: "/logs", SubPathExpr: "$(POD_NAME)"},
			{Name: "data", MountPath: "/data"},
		}
		p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "blk", DevicePath: "/dev/xvda"}}
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	})
	out, _ := mustInject(t, pod, []*appsv1alpha1.SidecarSet{set}, RevisionList{}, Options{})
	c := container(t, out, "s-c")
	wantMounts := []corev1.VolumeMount{{Name: "own", MountPath: "/data"}, {Name: "logs", MountPath: "/logs", SubPathExpr: "$(POD_NAME)"}}
	if !reflect.DeepEqual(c.VolumeMounts, wantMounts) {
		t.Fatalf("mounts %+v, want %+v (app mounts shared, the sidecar's own path wins)", c.VolumeMounts, wantMounts)
	}
	if len(c.Env) != 2 || c.Env[1].Name != "POD_NAME" || c.Env[1].ValueFrom == nil {
		t.Fatalf("env %+v: the subPathExpr variable is copied", c.Env)
	}
	if len(c.VolumeDevices) != 1 || c.VolumeDevices[0].DevicePath != "/dev/xvda" {
		t.Fatalf("devices %+v", c.VolumeDevices)
	}
	// Disabled (the default): nothing shared.
	off := set.DeepCopy()
	off.Spec.Containers[0].ShareVolumePolicy.Type = appsv1alpha1.ShareVolumePolicyDisabled
	off.Spec.Containers[0].ShareVolumeDevicePolicy = nil
	out, _ = mustInject(t, pod, []*appsv1alpha1.SidecarSet{off}, RevisionList{}, Options{})
	if c := container(t, out, "s-c"); len(c.VolumeMounts) != 1 || len(c.VolumeDevices) != 0 {
		t.Fatalf("disabled sharing still shared: %+v %+v", c.VolumeMounts, c.VolumeDevices)
	}
}

func TestInjectAnnotationShapes(t *testing.T) {
	set := newSet("b", func(s *appsv1alpha1.SidecarSet) { s.Status.LatestRevision = "b-rev1" })
	pod := newPod(func(p *corev1.Pod) {
		p.Annotations = map[string]string{InjectedListAnnotation: "zz"}
	})
	out, _ := mustInject(t, pod, []*appsv1alpha1.SidecarSet{set, newSet("a")}, RevisionList{}, Options{})
	if got := out.Annotations[InjectedListAnnotation]; got != "a,b,zz" {
		t.Fatalf("injected list %q, want a,b,zz (sorted, comma-joined, existing kept)", got)
	}
	var raw map[string]map[string]any
	if err := json.Unmarshal([]byte(out.Annotations[HashAnnotation]), &raw); err != nil {
		t.Fatal(err)
	}
	b := raw["b"]
	if b["hash"] != Hash(set) || b["sidecarSetName"] != "b" || b["controllerRevision"] != "b-rev1" ||
		b["updateTimestamp"] != "2026-11-23T20:00:00Z" || !reflect.DeepEqual(b["sidecarList"], []any{"b-c"}) {
		t.Fatalf("hash annotation entry %v", b)
	}
	if err := json.Unmarshal([]byte(out.Annotations[HashWithoutImageAnnotation]), &raw); err != nil {
		t.Fatal(err)
	}
	if raw["b"]["hash"] != HashWithoutImage(set) {
		t.Fatalf("without-image entry %v", raw["b"])
	}
	if _, ok := raw["b"]["controllerRevision"]; ok {
		t.Fatal("without-image entries carry no controllerRevision (OpenKruise shape)")
	}

	// The older map[name]hash shape on a pod is still read.
	old := newPod(func(p *corev1.Pod) { p.Annotations = map[string]string{HashAnnotation: `{"x":"h1"}`} })
	if PodHash(old, "x") != "h1" {
		t.Fatal("old annotation shape not read")
	}
}

func TestHashes(t *testing.T) {
	base := newSet("s")
	img := base.DeepCopy()
	img.Spec.Containers[0].Image = "img:2"
	cmd := base.DeepCopy()
	cmd.Spec.Containers[0].Command = []string{"run"}
	if Hash(base) == Hash(img) || HashWithoutImage(base) != HashWithoutImage(img) {
		t.Error("an image change changes the hash and not the without-image hash")
	}
	if HashWithoutImage(base) == HashWithoutImage(cmd) {
		t.Error("a command change changes the without-image hash")
	}
	if Hash(base) != Hash(base.DeepCopy()) {
		t.Error("hash not stable")
	}
	if len(Hash(base)) == 0 || strings.ContainsAny(Hash(base), "aeiou") {
		t.Errorf("hash %q is not safe-encoded", Hash(base))
	}
}

func TestInjectHotUpgrade(t *testing.T) {
	set := newSet("s", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0] = sidecar("nginx-sidecar", "nginx:1.18", func(c *appsv1alpha1.SidecarContainer) {
			c.UpgradeStrategy = appsv1alpha1.SidecarContainerUpgradeStrategy{UpgradeType: appsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:1.0.0"}
		})
	})
	out, _ := mustInject(t, newPod(), []*appsv1alpha1.SidecarSet{set}, RevisionList{}, Options{})
	if got, want := names(out.Spec.Containers), []string{"nginx-sidecar-1", "nginx-sidecar-2", "main"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("containers %v, want %v", got, want)
	}
	c1, c2 := container(t, out, "nginx-sidecar-1"), container(t, out, "nginx-sidecar-2")
	if c1.Image != "nginx:1.18" || c2.Image != "empty:1.0.0" {
		t.Fatalf("images %s %s", c1.Image, c2.Image)
	}
	for _, c := range []*corev1.Container{c1, c2} {
		var v, alt string
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				switch e.Name {
				case VersionEnv:
					v = e.ValueFrom.FieldRef.FieldPath
				case VersionAltEnv:
					alt = e.ValueFrom.FieldRef.FieldPath
				}
			}
		}
		if v != "metadata.annotations['version.sidecarset.kruise.io/"+c.Name+"']" || alt != "metadata.annotations['versionalt.sidecarset.kruise.io/"+c.Name+"']" {
			t.Errorf("%s version env %q %q", c.Name, v, alt)
		}
		if envValue(c, InjectedEnv) != "true" {
			t.Errorf("%s lacks IS_INJECTED", c.Name)
		}
	}
	want := map[string]string{
		"version.sidecarset.kruise.io/nginx-sidecar-1":    "1",
		"versionalt.sidecarset.kruise.io/nginx-sidecar-1": "0",
		"version.sidecarset.kruise.io/nginx-sidecar-2":    "0",
		"versionalt.sidecarset.kruise.io/nginx-sidecar-2": "1",
		WorkingHotUpgradeContainer:                        `{"nginx-sidecar":"nginx-sidecar-1"}`,
	}
	for k, v := range want {
		if out.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, out.Annotations[k], v)
		}
	}
	if !HasAllSidecars(out, set) {
		t.Error("HasAllSidecars false on the injected pod")
	}
}

func TestInjectDoesNotModifyInputs(t *testing.T) {
	set := newSet("s", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.PatchPodMetadata = []appsv1alpha1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"k": "v"}}}
	})
	pod := newPod()
	setCopy, podCopy := set.DeepCopy(), pod.DeepCopy()
	mustInject(t, pod, []*appsv1alpha1.SidecarSet{set}, RevisionList{}, Options{PatchMetadataDefaultsAllowed: true})
	if !reflect.DeepEqual(set, setCopy) || !reflect.DeepEqual(pod, podCopy) {
		t.Fatal("Inject modified its inputs")
	}
}

func TestInjectCanary(t *testing.T) {
	base := newSet("mesh", func(s *appsv1alpha1.SidecarSet) { s.Spec.Containers[0] = sidecar("proxy", "proxy:1") })
	canary := newSet("mesh-canary", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers[0] = sidecar("proxy", "proxy:2")
		s.Annotations = map[string]string{"apps.kruise.io/sidecarset-canary": "true", "apps.kruise.io/sidecarset-base": "mesh"}
	})
	out, _ := mustInject(t, newPod(), []*appsv1alpha1.SidecarSet{base, canary}, RevisionList{}, Options{})
	if container(t, out, "proxy").Image != "proxy:2" || out.Annotations[InjectedListAnnotation] != "mesh-canary" {
		t.Fatalf("the canary stands in for its base: %v %s", names(out.Spec.Containers), out.Annotations[InjectedListAnnotation])
	}
	out, _ = mustInject(t, newPod(), []*appsv1alpha1.SidecarSet{base}, RevisionList{}, Options{})
	if container(t, out, "proxy").Image != "proxy:1" {
		t.Fatal("base alone")
	}
}
