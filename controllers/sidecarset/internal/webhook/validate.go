package webhook

import (
	"fmt"
	"regexp"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/kit/selector"
)

// Validate applies the rules that need objects other than the SidecarSet
// itself (the CRD schema and its CEL rules cover the rest): set against its
// previous version old (nil on create), the other SidecarSets and the
// ControllerRevisions. Every error names its field.
func Validate(set, old *appsv1alpha1.SidecarSet, others []*appsv1alpha1.SidecarSet, revs sidecarcontrol.RevisionSource) field.ErrorList {
	spec := field.NewPath("spec")
	errs := validateSelf(set, spec)
	if old != nil {
		errs = append(errs, validateContainerChanges(set.Spec.Containers, old.Spec.Containers, spec.Child("containers"))...)
	}
	errs = append(errs, validateRevision(set, revs, spec.Child("injectionStrategy", "revision"))...)
	errs = append(errs, validateConflicts(set, others, spec)...)
	return errs
}

// validateSelf checks rules on the SidecarSet alone that a CRD CEL rule
// cannot: each would run once per item of an unbounded list (containers,
// their transferEnv) and exceed the API server's cost budget.
func validateSelf(set *appsv1alpha1.SidecarSet, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range set.Spec.Containers {
		p := spec.Child("containers").Index(i)
		if c.UpgradeStrategy.UpgradeType == appsv1alpha1.SidecarContainerHotUpgrade && c.UpgradeStrategy.HotUpgradeEmptyImage == "" {
			errs = append(errs, field.Required(p.Child("upgradeStrategy", "hotUpgradeEmptyImage"), "a HotUpgrade sidecar needs the image of its idle twin"))
		}
		errs = append(errs, validateTransferEnv(c.TransferEnv, p.Child("transferEnv"))...)
	}
	for i, c := range set.Spec.InitContainers {
		p := spec.Child("initContainers").Index(i)
		if c.UpgradeStrategy.UpgradeType == appsv1alpha1.SidecarContainerHotUpgrade {
			errs = append(errs, field.Invalid(p.Child("upgradeStrategy", "upgradeType"), c.UpgradeStrategy.UpgradeType, "init containers are not hot-upgraded"))
		}
		if sidecarcontrol.IsNativeSidecar(&c.Container) && set.Spec.UpdateStrategy.Type != appsv1alpha1.NotUpdateSidecarSetStrategyType {
			errs = append(errs, field.Invalid(spec.Child("updateStrategy", "type"), set.Spec.UpdateStrategy.Type,
				fmt.Sprintf("init container %s is a native sidecar (restartPolicy Always), which is not updated in place: use NotUpdate", c.Name)))
		}
		errs = append(errs, validateTransferEnv(c.TransferEnv, p.Child("transferEnv"))...)
	}
	return errs
}

// validateTransferEnv: sourceContainerNameFrom reads the pod's name, a
// label or an annotation, nothing else (OpenKruise's rule).
func validateTransferEnv(envs []appsv1alpha1.TransferEnvVar, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for j, e := range envs {
		if e.SourceContainerNameFrom == nil || e.SourceContainerNameFrom.FieldRef == nil {
			continue
		}
		fp := e.SourceContainerNameFrom.FieldRef.FieldPath
		if fp != "metadata.name" && !fieldRefPath.MatchString(fp) {
			errs = append(errs, field.NotSupported(path.Index(j).Child("sourceContainerNameFrom", "fieldRef", "fieldPath"), fp,
				[]string{"metadata.name", "metadata.labels['<key>']", "metadata.annotations['<key>']"}))
		}
	}
	return errs
}

var fieldRefPath = regexp.MustCompile(`^metadata\.(labels|annotations)\['[^']+'\]$`)

// validateContainerChanges: an update may change a sidecar's image and
// settings, not its upgradeType (a hot-upgrade pair cannot become one
// container in place, nor the reverse), nor bring a container name the
// SidecarSet did not have (pods already injected could never converge).
func validateContainerChanges(cur, old []appsv1alpha1.SidecarContainer, path *field.Path) field.ErrorList {
	oldType := map[string]appsv1alpha1.SidecarContainerUpgradeType{}
	for _, c := range old {
		oldType[c.Name] = c.UpgradeStrategy.UpgradeType
	}
	var errs field.ErrorList
	for i, c := range cur {
		t, ok := oldType[c.Name]
		switch {
		case !ok:
			errs = append(errs, field.Forbidden(path.Index(i).Child("name"),
				fmt.Sprintf("container %s is not in the SidecarSet being updated: sidecar containers cannot be added or renamed (create another SidecarSet)", c.Name)))
		case upgradeType(t) != upgradeType(c.UpgradeStrategy.UpgradeType):
			errs = append(errs, field.Invalid(path.Index(i).Child("upgradeStrategy", "upgradeType"), c.UpgradeStrategy.UpgradeType,
				fmt.Sprintf("immutable: container %s was %s", c.Name, upgradeType(t))))
		}
	}
	return errs
}

func upgradeType(t appsv1alpha1.SidecarContainerUpgradeType) appsv1alpha1.SidecarContainerUpgradeType {
	if t == "" {
		return appsv1alpha1.SidecarContainerColdUpgrade
	}
	return t
}

// validateRevision: a pinned injection revision must exist, or every pod
// the SidecarSet selects would be rejected at creation.
func validateRevision(set *appsv1alpha1.SidecarSet, revs sidecarcontrol.RevisionSource, path *field.Path) field.ErrorList {
	info := set.Spec.InjectionStrategy.Revision
	if info == nil {
		return nil
	}
	if info.RevisionName == nil && info.CustomVersion == nil {
		return field.ErrorList{field.Required(path, "set revisionName or customVersion")}
	}
	if _, err := sidecarcontrol.PinnedRevision(set, revs); err != nil {
		p := path.Child("customVersion")
		var v any
		if info.RevisionName != nil {
			p, v = path.Child("revisionName"), *info.RevisionName
		} else {
			v = *info.CustomVersion
		}
		return field.ErrorList{field.Invalid(p, v, fmt.Sprintf("no such ControllerRevision of sidecarset %s", set.Name))}
	}
	return nil
}

// validateConflicts: SidecarSets that can inject into the same pod must not
// define containers (or init containers) of the same name, must define
// volumes of the same name identically, and must not both claim an
// annotation key where one of them overwrites it.
func validateConflicts(set *appsv1alpha1.SidecarSet, others []*appsv1alpha1.SidecarSet, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	overlapping := make([]*appsv1alpha1.SidecarSet, 0, len(others))
	for _, o := range others {
		if o.Name != set.Name && o.DeletionTimestamp == nil && Overlap(set, o) {
			overlapping = append(overlapping, o)
		}
	}
	sort.Slice(overlapping, func(i, j int) bool { return overlapping[i].Name < overlapping[j].Name })
	containerOwner := func(name string, init bool) string {
		for _, o := range overlapping {
			list := o.Spec.Containers
			if init {
				list = o.Spec.InitContainers
			}
			if slices.ContainsFunc(list, func(c appsv1alpha1.SidecarContainer) bool { return c.Name == name }) {
				return o.Name
			}
		}
		return ""
	}
	for i, c := range set.Spec.InitContainers {
		if other := containerOwner(c.Name, true); other != "" {
			errs = append(errs, field.Invalid(spec.Child("initContainers").Index(i).Child("name"), c.Name,
				fmt.Sprintf("sidecarset %s, which selects some of the same pods, already injects an init container of this name", other)))
		}
	}
	for i, c := range set.Spec.Containers {
		if other := containerOwner(c.Name, false); other != "" {
			errs = append(errs, field.Invalid(spec.Child("containers").Index(i).Child("name"), c.Name,
				fmt.Sprintf("sidecarset %s, which selects some of the same pods, already injects a container of this name", other)))
		}
	}
	for i, v := range set.Spec.Volumes {
		for _, o := range overlapping {
			j := slices.IndexFunc(o.Spec.Volumes, func(ov corev1.Volume) bool { return ov.Name == v.Name })
			if j >= 0 && !equality.Semantic.DeepEqual(v, o.Spec.Volumes[j]) {
				errs = append(errs, field.Invalid(spec.Child("volumes").Index(i), v.Name,
					fmt.Sprintf("sidecarset %s, which selects some of the same pods, defines volume %s differently", o.Name, v.Name)))
				break
			}
		}
	}
	for i, p := range set.Spec.PatchPodMetadata {
		if p.PatchPolicy == "" || p.PatchPolicy == appsv1alpha1.SidecarSetRetainPatchPolicy {
			continue
		}
		for _, key := range sets.List(sets.KeySet(p.Annotations)) {
			for _, o := range overlapping {
				if policy, ok := annotationPolicy(o, key); ok && (p.PatchPolicy == appsv1alpha1.SidecarSetOverwritePatchPolicy || policy == appsv1alpha1.SidecarSetOverwritePatchPolicy) {
					errs = append(errs, field.Invalid(spec.Child("patchPodMetadata").Index(i).Child("annotations").Key(key), p.Annotations[key],
						fmt.Sprintf("sidecarset %s, which selects some of the same pods, also patches this annotation (%s)", o.Name, policy)))
					break
				}
			}
		}
	}
	return errs
}

// annotationPolicy is the non-Retain patch policy o applies to key.
func annotationPolicy(o *appsv1alpha1.SidecarSet, key string) (appsv1alpha1.SidecarSetPatchPolicyType, bool) {
	for _, p := range o.Spec.PatchPodMetadata {
		if p.PatchPolicy == "" || p.PatchPolicy == appsv1alpha1.SidecarSetRetainPatchPolicy {
			continue
		}
		if _, ok := p.Annotations[key]; ok {
			return p.PatchPolicy, true
		}
	}
	return "", false
}

// Overlap reports whether a and b may select a common pod: their namespaces
// may coincide and their selectors are not provably disjoint.
func Overlap(a, b *appsv1alpha1.SidecarSet) bool {
	return selector.Overlap(namespaceSelector(a), namespaceSelector(b)) && selector.Overlap(a.Spec.Selector, b.Spec.Selector)
}

// namespaceSelector is a SidecarSet's namespace restriction as a selector
// over Namespace labels (spec.namespace is the metadata.name label, as
// OpenKruise's v1beta1 conversion does); nil means every namespace.
func namespaceSelector(s *appsv1alpha1.SidecarSet) *metav1.LabelSelector {
	if s.Spec.Namespace != "" {
		return &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: s.Spec.Namespace}}
	}
	return s.Spec.NamespaceSelector
}
