package controller

import (
	"encoding/json"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

// Kind names a subset workload kind.
type Kind string

// The subset workload kinds, by the template field that selects them.
const (
	KindCloneSet            Kind = "CloneSet"
	KindDeployment          Kind = "Deployment"
	KindStatefulSet         Kind = "StatefulSet"
	KindAdvancedStatefulSet Kind = "AdvancedStatefulSet"
)

// AllKinds lists every kind, in the order the reconciler looks at them.
var AllKinds = []Kind{KindCloneSet, KindDeployment, KindStatefulSet, KindAdvancedStatefulSet}

// TemplateKind returns the kind ud's template asks for ("" if none: the API server's rules make that impossible).
func TemplateKind(ud *appsv1alpha1.UnitedDeployment) Kind {
	t := &ud.Spec.Template
	switch {
	case t.CloneSetTemplate != nil:
		return KindCloneSet
	case t.DeploymentTemplate != nil:
		return KindDeployment
	case t.StatefulSetTemplate != nil:
		return KindStatefulSet
	case t.AdvancedStatefulSetTemplate != nil:
		return KindAdvancedStatefulSet
	}
	return ""
}

// templateMeta returns the labels and annotations of ud's template.
func templateMeta(ud *appsv1alpha1.UnitedDeployment) (labels, annotations map[string]string) {
	t := &ud.Spec.Template
	switch {
	case t.CloneSetTemplate != nil:
		return t.CloneSetTemplate.Labels, t.CloneSetTemplate.Annotations
	case t.DeploymentTemplate != nil:
		return t.DeploymentTemplate.Labels, t.DeploymentTemplate.Annotations
	case t.StatefulSetTemplate != nil:
		return t.StatefulSetTemplate.Labels, t.StatefulSetTemplate.Annotations
	case t.AdvancedStatefulSetTemplate != nil:
		return t.AdvancedStatefulSetTemplate.Labels, t.AdvancedStatefulSetTemplate.Annotations
	}
	return nil, nil
}

// SubsetPrefix is the generateName of a subset's workload: "<ud>-<subset>-", or "<ud>-" when that would not be a
// valid name prefix.
func SubsetPrefix(udName, subsetName string) string {
	prefix := fmt.Sprintf("%s-%s-", udName, subsetName)
	if len(validation.NameIsDNSSubdomain(prefix, true)) != 0 {
		prefix = udName + "-"
	}
	return prefix
}

// Desired is what one subset workload should be: written over the object the reconciler builds or updates.
type Desired struct {
	UD        *appsv1alpha1.UnitedDeployment
	Subset    *appsv1alpha1.Subset
	Revision  string
	Replicas  int32
	Partition int32
}

// applyMeta writes the workload metadata a UnitedDeployment owns: its template's labels and annotations merged
// over what the object has, the selector's labels, the revision and subset labels, the patch annotation, the
// generateName and the controllerRef.
func (d Desired) applyMeta(m *metav1.ObjectMeta) {
	tl, ta := templateMeta(d.UD)
	m.Namespace = d.UD.Namespace
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	maps.Copy(m.Labels, tl)
	maps.Copy(m.Labels, d.UD.Spec.Selector.MatchLabels)
	m.Labels[appsv1alpha1.UnitedDeploymentRevisionLabelKey] = d.Revision
	m.Labels[appsv1alpha1.SubSetNameLabelKey] = d.Subset.Name
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	maps.Copy(m.Annotations, ta)
	m.Annotations[appsv1alpha1.AnnotationSubsetPatchKey] = string(d.Subset.Patch.Raw)
	m.GenerateName = SubsetPrefix(d.UD.Name, d.Subset.Name)
	m.OwnerReferences = ownerRefs(m.OwnerReferences, d.UD)
}

// ownerRefs replaces any controllerRef in refs by one to ud, keeping the other references.
func ownerRefs(refs []metav1.OwnerReference, ud *appsv1alpha1.UnitedDeployment) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, 0, len(refs)+1)
	for _, r := range refs {
		if r.Controller == nil || !*r.Controller {
			out = append(out, r)
		}
	}
	return append(out, *metav1.NewControllerRef(ud, appsv1alpha1.SchemeGroupVersion.WithKind("UnitedDeployment")))
}

// selector is the subset workload's selector: the UnitedDeployment's plus the subset label.
func (d Desired) selector() *metav1.LabelSelector {
	s := d.UD.Spec.Selector.DeepCopy()
	if s.MatchLabels == nil {
		s.MatchLabels = map[string]string{}
	}
	s.MatchLabels[appsv1alpha1.SubSetNameLabelKey] = d.Subset.Name
	return s
}

// podTemplate returns the subset's pod template: tmpl with the subset and revision labels, the subset's node
// selector term added to every required node-affinity term, its tolerations appended and its patch applied.
func (d Desired) podTemplate(tmpl corev1.PodTemplateSpec) (corev1.PodTemplateSpec, error) {
	t := *tmpl.DeepCopy()
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[appsv1alpha1.SubSetNameLabelKey] = d.Subset.Name
	t.Labels[appsv1alpha1.UnitedDeploymentRevisionLabelKey] = d.Revision
	AttachNodeAffinity(&t.Spec, d.Subset.NodeSelectorTerm)
	if d.Subset.Tolerations != nil {
		t.Spec.Tolerations = append(t.Spec.Tolerations, d.Subset.Tolerations...)
	}
	if len(d.Subset.Patch.Raw) == 0 {
		return t, nil
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return t, fmt.Errorf("encode pod template: %w", err)
	}
	patched, err := strategicpatch.StrategicMergePatch(raw, d.Subset.Patch.Raw, &corev1.PodTemplateSpec{})
	if err != nil {
		return t, fmt.Errorf("apply the patch of subset %s: %w", d.Subset.Name, err)
	}
	var out corev1.PodTemplateSpec
	if err := json.Unmarshal(patched, &out); err != nil {
		return t, fmt.Errorf("decode the patched pod template of subset %s: %w", d.Subset.Name, err)
	}
	return out, nil
}

// AttachNodeAffinity ANDs term's match expressions into every required node-selector term of spec (creating one
// when there is none). A term without match expressions changes nothing; its matchFields are ignored, as
// OpenKruise ignores them.
func AttachNodeAffinity(spec *corev1.PodSpec, term corev1.NodeSelectorTerm) {
	if len(term.MatchExpressions) == 0 {
		return
	}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	req := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(req.NodeSelectorTerms) == 0 {
		req.NodeSelectorTerms = []corev1.NodeSelectorTerm{{}}
	}
	for i := range req.NodeSelectorTerms {
		req.NodeSelectorTerms[i].MatchExpressions = append(req.NodeSelectorTerms[i].MatchExpressions, term.MatchExpressions...)
	}
}

// common writes what every kind shares: the metadata, the selector, the replicas and the pod template (from src).
func (d Desired) common(m *metav1.ObjectMeta, selector **metav1.LabelSelector, replicas **int32, tmpl *corev1.PodTemplateSpec,
	src corev1.PodTemplateSpec) error {
	d.applyMeta(m)
	*selector = d.selector()
	*replicas = ptr.To(d.Replicas)
	var err error
	*tmpl, err = d.podTemplate(src)
	return err
}

// rollingPartition is the partition of a StatefulSet-like update strategy: set for RollingUpdate (the default),
// none for OnDelete, as in OpenKruise.
func (d Desired) rollingPartition(t *appsv1.StatefulSetUpdateStrategyType) *int32 {
	if *t != "" && *t != appsv1.RollingUpdateStatefulSetStrategyType {
		return nil
	}
	*t = appsv1.RollingUpdateStatefulSetStrategyType
	return ptr.To(d.Partition)
}

// CloneSet writes d over cs (a new one, or a copy of the existing).
func (d Desired) CloneSet(cs *appsv1alpha1.CloneSet) error {
	tmpl := d.UD.Spec.Template.CloneSetTemplate
	cs.Spec = *tmpl.Spec.DeepCopy()
	cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(d.Partition))
	return d.common(&cs.ObjectMeta, &cs.Spec.Selector, &cs.Spec.Replicas, &cs.Spec.Template, tmpl.Spec.Template)
}

// Deployment writes d over dep. A Deployment has no partition: it is ignored, as OpenKruise ignores it.
func (d Desired) Deployment(dep *appsv1.Deployment) error {
	tmpl := d.UD.Spec.Template.DeploymentTemplate
	dep.Spec = *tmpl.Spec.DeepCopy()
	return d.common(&dep.ObjectMeta, &dep.Spec.Selector, &dep.Spec.Replicas, &dep.Spec.Template, tmpl.Spec.Template)
}

// StatefulSet writes d over sts, the partition in rollingUpdate.
func (d Desired) StatefulSet(sts *appsv1.StatefulSet) error {
	tmpl := d.UD.Spec.Template.StatefulSetTemplate
	sts.Spec = *tmpl.Spec.DeepCopy()
	if p := d.rollingPartition(&sts.Spec.UpdateStrategy.Type); p != nil {
		if sts.Spec.UpdateStrategy.RollingUpdate == nil {
			sts.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
		sts.Spec.UpdateStrategy.RollingUpdate.Partition = p
	}
	return d.common(&sts.ObjectMeta, &sts.Spec.Selector, &sts.Spec.Replicas, &sts.Spec.Template, tmpl.Spec.Template)
}

// AdvancedStatefulSet writes d over asts, the partition as for StatefulSet.
func (d Desired) AdvancedStatefulSet(asts *appsv1beta1.StatefulSet) error {
	tmpl := d.UD.Spec.Template.AdvancedStatefulSetTemplate
	asts.Spec = *tmpl.Spec.DeepCopy()
	if p := d.rollingPartition(&asts.Spec.UpdateStrategy.Type); p != nil {
		if asts.Spec.UpdateStrategy.RollingUpdate == nil {
			asts.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{}
		}
		asts.Spec.UpdateStrategy.RollingUpdate.Partition = p
	}
	return d.common(&asts.ObjectMeta, &asts.Spec.Selector, &asts.Spec.Replicas, &asts.Spec.Template, tmpl.Spec.Template)
}
