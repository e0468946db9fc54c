package sidecarcontrol

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"

	appspub "github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// Options tune Inject.
type Options struct {
	// Now stamps updateTimestamp in the hash annotations.
	Now time.Time
	// Rand draws in [0,1) for the Partial revision policy; nil: math/rand.
	Rand func() float64
	// SortByName sorts injected containers by name (EnableSortSidecarContainerByName).
	SortByName bool
	// Whitelist is the patchPodMetadata whitelist (nil: none configured).
	Whitelist *Whitelist
	// PatchMetadataDefaultsAllowed is the SidecarSetPatchPodMetadataDefaultsAllowed gate.
	PatchMetadataDefaultsAllowed bool
}

// Inject returns a copy of pod with the sidecars of sets injected, as the
// pod mutating webhook does at creation. matched are the SidecarSets that
// select the pod (Select); for each the version to inject is chosen
// (ChooseRevision). Warnings are for the admission response (a
// patchPodMetadata the whitelist forbids is skipped, not fatal). Errors
// reject the pod: a pinned revision that does not exist, two SidecarSets
// injecting different volumes or containers under one name, a
// MergePatchJson that cannot merge. pod is not modified.
func Inject(pod *corev1.Pod, matched []*appsv1alpha1.SidecarSet, revs RevisionSource, opts Options) (*corev1.Pod, []string, error) {
	out := pod.DeepCopy()
	if len(matched) == 0 {
		return out, nil, nil
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	rnd := opts.Rand
	if rnd == nil {
		rnd = rand.Float64
	}
	now := metav1.NewTime(opts.Now)
	var warnings []string

	versions := make([]*appsv1alpha1.SidecarSet, 0, len(matched))
	for _, set := range matched {
		v, err := ChooseRevision(set, pod, revs, rnd)
		if err != nil {
			return nil, nil, err
		}
		versions = append(versions, v)
	}
	versions = dropCanaryBases(versions)
	sortByName(versions)

	// Metadata first: transferEnv's sourceContainerNameFrom may read a patched annotation.
	for _, v := range versions {
		if len(v.Spec.PatchPodMetadata) == 0 {
			continue
		}
		if err := CheckPatchPodMetadata(v, opts.Whitelist, opts.PatchMetadataDefaultsAllowed); err != nil {
			warnings = append(warnings, fmt.Sprintf("sidecarset %s: patchPodMetadata skipped: %v", v.Name, err))
			continue
		}
		patched, err := PatchAnnotations(out.Annotations, v.Spec.PatchPodMetadata, false)
		if err != nil {
			return nil, nil, fmt.Errorf("sidecarset %s: %w", v.Name, err)
		}
		out.Annotations = patched
	}

	b := builder{pod: out, volumes: map[string]volumeFrom{}, names: map[string]string{}}
	for _, c := range out.Spec.Containers {
		b.names[c.Name] = ""
	}
	for _, c := range out.Spec.InitContainers {
		b.names[c.Name] = ""
	}
	injected := InjectedSets(out)
	for _, v := range versions {
		if err := b.add(v); err != nil {
			return nil, nil, err
		}
		for i := range v.Spec.Containers {
			if v.Spec.Containers[i].ResourcesPolicy != nil {
				warnings = append(warnings, fmt.Sprintf("sidecarset %s: container %s: resourcesPolicy is not supported, resources left as written", v.Name, v.Spec.Containers[i].Name))
			}
		}
		injected.Insert(v.Name)
		up := UpgradeSpec{UpdateTimestamp: now, SidecarSetName: v.Name, SidecarList: SidecarNames(v)}
		withImage := up
		withImage.Hash, withImage.ControllerRevision = Hash(v), v.Status.LatestRevision
		if err := setUpgradeSpec(out.Annotations, HashAnnotation, withImage); err != nil {
			return nil, nil, err
		}
		up.Hash = HashWithoutImage(v)
		if err := setUpgradeSpec(out.Annotations, HashWithoutImageAnnotation, up); err != nil {
			return nil, nil, err
		}
	}
	out.Annotations[InjectedListAnnotation] = strings.Join(sets.List(injected), ",")

	sort.SliceStable(b.initContainers, func(i, j int) bool { return b.initContainers[i].Name < b.initContainers[j].Name })
	out.Spec.InitContainers = mergeContainers(out.Spec.InitContainers, b.initContainers)
	if opts.SortByName {
		sort.SliceStable(b.containers, func(i, j int) bool { return b.containers[i].Name < b.containers[j].Name })
	}
	out.Spec.Containers = mergeContainers(out.Spec.Containers, b.containers)
	for _, vf := range b.volumeOrder {
		if !hasVolume(out.Spec.Volumes, vf) {
			out.Spec.Volumes = append(out.Spec.Volumes, b.volumes[vf].vol)
		}
	}
	for _, s := range b.secrets {
		if !hasSecret(out.Spec.ImagePullSecrets, s.Name) {
			out.Spec.ImagePullSecrets = append(out.Spec.ImagePullSecrets, s)
		}
	}
	return out, warnings, nil
}

type volumeFrom struct {
	vol corev1.Volume
	set string
}

type placed struct {
	corev1.Container
	policy appsv1alpha1.PodInjectPolicyType
}

// builder accumulates what the SidecarSets inject into one pod.
type builder struct {
	pod            *corev1.Pod
	containers     []placed
	initContainers []placed
	volumes        map[string]volumeFrom
	volumeOrder    []string
	secrets        []corev1.LocalObjectReference
	// names maps container names already taken to the SidecarSet that
	// injected them ("" for the pod's own).
	names map[string]string
}

func (b *builder) add(set *appsv1alpha1.SidecarSet) error {
	vols := map[string]*corev1.Volume{}
	for i := range set.Spec.Volumes {
		vols[set.Spec.Volumes[i].Name] = &set.Spec.Volumes[i]
	}
	for i := range set.Spec.InitContainers {
		sc := &set.Spec.InitContainers[i]
		cs, err := b.build(set, sc, vols, appsv1alpha1.AfterAppContainerType, IsNativeSidecar(&sc.Container))
		if err != nil {
			return err
		}
		b.initContainers = append(b.initContainers, cs...)
	}
	for i := range set.Spec.Containers {
		cs, err := b.build(set, &set.Spec.Containers[i], vols, appsv1alpha1.BeforeAppContainerType, true)
		if err != nil {
			return err
		}
		b.containers = append(b.containers, cs...)
	}
	b.secrets = append(b.secrets, set.Spec.ImagePullSecrets...)
	return nil
}

// build turns one sidecar into the pod container(s) it becomes.
func (b *builder) build(set *appsv1alpha1.SidecarSet, sc *appsv1alpha1.SidecarContainer, vols map[string]*corev1.Volume,
	defaultPolicy appsv1alpha1.PodInjectPolicyType, hotUpgradable bool) ([]placed, error) {
	c := sc.Container.DeepCopy()
	for _, m := range c.VolumeMounts {
		if err := b.addVolume(set, vols, m.Name); err != nil {
			return nil, err
		}
	}
	for _, d := range c.VolumeDevices {
		if err := b.addVolume(set, vols, d.Name); err != nil {
			return nil, err
		}
	}
	sharedMounts, sharedEnvs := sharedVolumeMounts(sc, b.pod)
	transfer := mergeEnv(transferEnvs(sc, b.pod), sharedEnvs)
	c.VolumeMounts = mergeMounts(c, sharedMounts)
	c.Env = mergeEnv(append(c.Env, corev1.EnvVar{Name: InjectedEnv, Value: "true"}), transfer)
	c.VolumeDevices = mergeDevices(c, sharedDevices(sc, b.pod))
	policy := sc.PodInjectPolicy
	if policy == "" {
		policy = defaultPolicy
	}
	var out []placed
	if hotUpgradable && IsHotUpgrade(sc) {
		withEnv := sc.DeepCopy()
		withEnv.Container = *c
		c1, c2 := hotUpgradePair(withEnv)
		out = append(out, placed{c1, policy}, placed{c2, policy})
		b.pod.Annotations[VersionAnnotation(c1.Name)] = "1"
		b.pod.Annotations[VersionAltAnnotation(c1.Name)] = "0"
		b.pod.Annotations[VersionAnnotation(c2.Name)] = "0"
		b.pod.Annotations[VersionAltAnnotation(c2.Name)] = "1"
		setWorking(b.pod.Annotations, sc.Name, c1.Name)
	} else {
		out = append(out, placed{*c, policy})
	}
	for _, p := range out {
		if owner, taken := b.names[p.Name]; taken && owner != "" {
			return nil, fmt.Errorf("sidecarset %s: container %s is also injected by sidecarset %s", set.Name, p.Name, owner)
		}
		b.names[p.Name] = set.Name
	}
	return out, nil
}

func (b *builder) addVolume(set *appsv1alpha1.SidecarSet, vols map[string]*corev1.Volume, name string) error {
	v, ok := vols[name]
	if !ok {
		// A mount of a pod volume (or of nothing, which the API server reports).
		return nil
	}
	if prev, seen := b.volumes[name]; seen {
		if prev.set != set.Name && !equality.Semantic.DeepEqual(prev.vol, *v) {
			return fmt.Errorf("sidecarset %s: spec.volumes[%s] conflicts with the volume of the same name in sidecarset %s", set.Name, name, prev.set)
		}
		return nil
	}
	b.volumes[name] = volumeFrom{vol: *v.DeepCopy(), set: set.Name}
	b.volumeOrder = append(b.volumeOrder, name)
	return nil
}

func hasVolume(vs []corev1.Volume, name string) bool {
	for _, v := range vs {
		if v.Name == name {
			return true
		}
	}
	return false
}

func hasSecret(ss []corev1.LocalObjectReference, name string) bool {
	for _, s := range ss {
		if s.Name == name {
			return true
		}
	}
	return false
}

// mergeContainers puts sidecars into a pod's container list: one whose
// name the pod already has replaces it in place; others go before the app
// containers (BeforeAppContainer) or after them.
func mergeContainers(pod []corev1.Container, sidecars []placed) []corev1.Container {
	index := map[string]int{}
	for i, c := range pod {
		index[c.Name] = i
	}
	var before, after []corev1.Container
	for _, s := range sidecars {
		if i, ok := index[s.Name]; ok {
			pod[i] = s.Container
			continue
		}
		if s.policy == appsv1alpha1.BeforeAppContainerType {
			before = append(before, s.Container)
		} else {
			after = append(after, s.Container)
		}
	}
	out := make([]corev1.Container, 0, len(before)+len(pod)+len(after))
	out = append(out, before...)
	out = append(out, pod...)
	return append(out, after...)
}

// appContainers are the pod's containers not injected by a SidecarSet.
func appContainers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if envValue(c, InjectedEnv) == "true" {
			continue
		}
		out = append(out, c)
	}
	return out
}

func envValue(c *corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

var subPathExprEnv = regexp.MustCompile(`\$\(([-._a-zA-Z][-._a-zA-Z0-9]*)\)`)

// sharedVolumeMounts: with shareVolumePolicy enabled, the app containers'
// volumeMounts, plus the env vars their subPathExpr reference.
func sharedVolumeMounts(sc *appsv1alpha1.SidecarContainer, pod *corev1.Pod) ([]corev1.VolumeMount, []corev1.EnvVar) {
	if sc.ShareVolumePolicy.Type != appsv1alpha1.ShareVolumePolicyEnabled {
		return nil, nil
	}
	var mounts []corev1.VolumeMount
	var envs []corev1.EnvVar
	for _, c := range appContainers(pod) {
		for _, m := range c.VolumeMounts {
			mounts = append(mounts, m)
			for _, match := range subPathExprEnv.FindAllStringSubmatch(m.SubPathExpr, -1) {
				for _, e := range c.Env {
					if e.Name == match[1] {
						envs = append(envs, e)
						break
					}
				}
			}
		}
	}
	return mounts, envs
}

// sharedDevices: with shareVolumeDevicePolicy enabled, the app containers' volumeDevices.
func sharedDevices(sc *appsv1alpha1.SidecarContainer, pod *corev1.Pod) []corev1.VolumeDevice {
	if sc.ShareVolumeDevicePolicy == nil || sc.ShareVolumeDevicePolicy.Type != appsv1alpha1.ShareVolumePolicyEnabled {
		return nil
	}
	var out []corev1.VolumeDevice
	for _, c := range appContainers(pod) {
		out = append(out, c.VolumeDevices...)
	}
	return out
}

// transferEnvs copies the named env vars of the source container (named
// directly or read from a pod label/annotation); missing ones are skipped.
func transferEnvs(sc *appsv1alpha1.SidecarContainer, pod *corev1.Pod) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, t := range sc.TransferEnv {
		names := sets.New[string](t.EnvNames...)
		if t.EnvName != "" {
			names.Insert(t.EnvName)
		}
		source := t.SourceContainerName
		if t.SourceContainerNameFrom != nil && t.SourceContainerNameFrom.FieldRef != nil {
			name, ok := containerNameFrom(t.SourceContainerNameFrom.FieldRef.FieldPath, pod)
			if !ok {
				continue
			}
			source = name
		}
		var src *corev1.Container
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == source {
				src = &pod.Spec.Containers[i]
			}
		}
		if src == nil {
			continue
		}
		for _, n := range sets.List(names) {
			for _, e := range src.Env {
				if e.Name == n {
					out = append(out, e)
					break
				}
			}
		}
	}
	return out
}

// containerNameFrom resolves metadata.name, metadata.labels['k'] or
// metadata.annotations['k'] on pod.
func containerNameFrom(path string, pod *corev1.Pod) (string, bool) {
	if path == "metadata.name" {
		return pod.Name, true
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if !strings.HasPrefix(path, prefix+"['") || !strings.HasSuffix(path, "']") {
			continue
		}
		key := path[len(prefix)+2 : len(path)-2]
		if len(validation.IsQualifiedName(strings.ToLower(key))) != 0 {
			return "", false
		}
		v, ok := m[key]
		return v, ok
	}
	return "", false
}

func mergeEnv(original, extra []corev1.EnvVar) []corev1.EnvVar {
	seen := sets.New[string]()
	for _, e := range original {
		seen.Insert(e.Name)
	}
	return appendUnused(original, extra, seen, func(e corev1.EnvVar) string { return e.Name })
}

// mergeMounts adds mounts at paths the container does not use yet.
func mergeMounts(c *corev1.Container, extra []corev1.VolumeMount) []corev1.VolumeMount {
	out := append([]corev1.VolumeMount(nil), c.VolumeMounts...)
	return appendUnused(out, extra, pathsInUse(c), func(m corev1.VolumeMount) string { return m.MountPath })
}

// mergeDevices adds devices at paths the container does not use yet.
func mergeDevices(c *corev1.Container, extra []corev1.VolumeDevice) []corev1.VolumeDevice {
	out := append([]corev1.VolumeDevice(nil), c.VolumeDevices...)
	return appendUnused(out, extra, pathsInUse(c), func(d corev1.VolumeDevice) string { return d.DevicePath })
}

// pathsInUse are the paths c's volume mounts and devices take.
func pathsInUse(c *corev1.Container) sets.Set[string] {
	used := sets.New[string]()
	for _, m := range c.VolumeMounts {
		used.Insert(m.MountPath)
	}
	for _, d := range c.VolumeDevices {
		used.Insert(d.DevicePath)
	}
	return used
}

// appendUnused appends to out the items of extra whose key is not in used
// yet, the first of a repeated key only; used records the keys taken.
func appendUnused[T any](out, extra []T, used sets.Set[string], key func(T) string) []T {
	for _, x := range extra {
		if k := key(x); !used.Has(k) {
			out = append(out, x)
			used.Insert(k)
		}
	}
	return out
}

// IsCanary reports a canary SidecarSet and the base it stands in for:
// annotations apps.kruise.io/sidecarset-canary "true" and
// apps.kruise.io/sidecarset-base naming the base.
func IsCanary(set *appsv1alpha1.SidecarSet) (bool, string) {
	base := set.Annotations[appspub.SidecarSetBaseAnnotation]
	return set.Annotations[appspub.SidecarSetCanaryAnnotation] == "true" && base != "", base
}

// dropCanaryBases leaves out the SidecarSets a matching canary stands in for.
func dropCanaryBases(sets []*appsv1alpha1.SidecarSet) []*appsv1alpha1.SidecarSet {
	bases := map[string]bool{}
	for _, s := range sets {
		if ok, base := IsCanary(s); ok {
			bases[base] = true
		}
	}
	if len(bases) == 0 {
		return sets
	}
	out := make([]*appsv1alpha1.SidecarSet, 0, len(sets))
	for _, s := range sets {
		if !bases[s.Name] {
			out = append(out, s)
		}
	}
	return out
}
