package controller

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	appsv1beta1 "github.com/flotilla-dev/flotilla/apis/apps/v1beta1"
)

func podTmpl() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Containers:  []corev1.Container{{Name: "main", Image: "web:v1"}},
			Tolerations: []corev1.Toleration{{Key: "base", Operator: corev1.TolerationOpExists}},
		},
	}
}

func baseUD() *appsv1alpha1.UnitedDeployment {
	return &appsv1alpha1.UnitedDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "ud-uid"},
		Spec: appsv1alpha1.UnitedDeploymentSpec{
			Replicas: ptr.To[int32](4),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}
}

func zone(name string) appsv1alpha1.Subset {
	return appsv1alpha1.Subset{
		Name: name,
		NodeSelectorTerm: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{name}}}},
		Tolerations: []corev1.Toleration{{Key: "zone-" + name, Operator: corev1.TolerationOpExists}},
	}
}

// checkMeta checks what every kind's subset workload carries, as OpenKruise writes it.
func checkMeta(t *testing.T, m metav1.ObjectMeta, sel *metav1.LabelSelector, tmpl corev1.PodTemplateSpec, subset, patch string) {
	t.Helper()
	assert.Equal(t, "ns", m.Namespace)
	assert.Equal(t, "web-"+subset+"-", m.GenerateName)
	assert.Equal(t, subset, m.Labels[appsv1alpha1.SubSetNameLabelKey])
	assert.Equal(t, "web-rev1", m.Labels[appsv1alpha1.UnitedDeploymentRevisionLabelKey])
	assert.Equal(t, "web", m.Labels["app"], "selector labels")
	assert.Equal(t, "t", m.Labels["tier"], "template labels")
	assert.Equal(t, "a", m.Annotations["note"], "template annotations")
	assert.Equal(t, patch, m.Annotations[appsv1alpha1.AnnotationSubsetPatchKey])
	ref := *metav1.GetControllerOfNoCopy(&metav1.ObjectMeta{OwnerReferences: m.OwnerReferences})
	assert.Equal(t, metav1.OwnerReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "UnitedDeployment", Name: "web", UID: "ud-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}, ref)
	assert.Equal(t, map[string]string{"app": "web", appsv1alpha1.SubSetNameLabelKey: subset}, sel.MatchLabels)
	assert.Equal(t, subset, tmpl.Labels[appsv1alpha1.SubSetNameLabelKey])
	assert.Equal(t, "web-rev1", tmpl.Labels[appsv1alpha1.UnitedDeploymentRevisionLabelKey])
	assert.Equal(t, []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{subset}}},
		tmpl.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions)
	assert.Equal(t, []corev1.Toleration{{Key: "base", Operator: corev1.TolerationOpExists}, {Key: "zone-" + subset, Operator: corev1.TolerationOpExists}},
		tmpl.Spec.Tolerations, "subset tolerations appended")
}

var templMeta = metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "t"}, Annotations: map[string]string{"note": "a"}}

func TestDesiredPerKind(t *testing.T) {
	s := zone("a")
	t.Run("CloneSet", func(t *testing.T) {
		ud := baseUD()
		ud.Spec.Template.CloneSetTemplate = &appsv1alpha1.CloneSetTemplateSpec{ObjectMeta: templMeta,
			Spec: appsv1alpha1.CloneSetSpec{Template: podTmpl(), MinReadySeconds: 3}}
		var cs appsv1alpha1.CloneSet
		require.NoError(t, Desired{UD: ud, Subset: &s, Revision: "web-rev1", Replicas: 3, Partition: 2}.CloneSet(&cs))
		checkMeta(t, cs.ObjectMeta, cs.Spec.Selector, cs.Spec.Template, "a", "")
		assert.Equal(t, int32(3), *cs.Spec.Replicas)
		assert.Equal(t, intstr.FromInt32(2), *cs.Spec.UpdateStrategy.Partition)
		assert.Equal(t, int32(3), cs.Spec.MinReadySeconds, "the rest of the template spec is kept")
		assert.Nil(t, ud.Spec.Template.CloneSetTemplate.Spec.Template.Spec.Affinity, "the UnitedDeployment is not modified")
	})
	t.Run("Deployment", func(t *testing.T) {
		ud := baseUD()
		ud.Spec.Template.DeploymentTemplate = &appsv1alpha1.DeploymentTemplateSpec{ObjectMeta: templMeta,
			Spec: appsv1.DeploymentSpec{Template: podTmpl(), Replicas: ptr.To[int32](99)}}
		var d appsv1.Deployment
		require.NoError(t, Desired{UD: ud, Subset: &s, Revision: "web-rev1", Replicas: 3, Partition: 2}.Deployment(&d))
		checkMeta(t, d.ObjectMeta, d.Spec.Selector, d.Spec.Template, "a", "")
		assert.Len(t, d.OwnerReferences, 1)
		assert.Equal(t, int32(3), *d.Spec.Replicas, "the template's replicas are not used")
	})
	t.Run("StatefulSet", func(t *testing.T) {
		ud := baseUD()
		ud.Spec.Template.StatefulSetTemplate = &appsv1alpha1.StatefulSetTemplateSpec{ObjectMeta: templMeta,
			Spec: appsv1.StatefulSetSpec{Template: podTmpl()}}
		var sts appsv1.StatefulSet
		require.NoError(t, Desired{UD: ud, Subset: &s, Revision: "web-rev1", Replicas: 3, Partition: 2}.StatefulSet(&sts))
		checkMeta(t, sts.ObjectMeta, sts.Spec.Selector, sts.Spec.Template, "a", "")
		assert.Equal(t, appsv1.RollingUpdateStatefulSetStrategyType, sts.Spec.UpdateStrategy.Type)
		assert.Equal(t, int32(2), *sts.Spec.UpdateStrategy.RollingUpdate.Partition)

		ud.Spec.Template.StatefulSetTemplate.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
		sts = appsv1.StatefulSet{}
		require.NoError(t, Desired{UD: ud, Subset: &s, Revision: "web-rev1", Replicas: 3, Partition: 2}.StatefulSet(&sts))
		assert.Nil(t, sts.Spec.UpdateStrategy.RollingUpdate, "OnDelete has no partition")
	})
	t.Run("AdvancedStatefulSet", func(t *testing.T) {
		ud := baseUD()
		ud.Spec.Template.AdvancedStatefulSetTemplate = &appsv1alpha1.AdvancedStatefulSetTemplateSpec{ObjectMeta: templMeta,
			Spec: appsv1beta1.StatefulSetSpec{Template: podTmpl()}}
		var sts appsv1beta1.StatefulSet
		require.NoError(t, Desired{UD: ud, Subset: &s, Revision: "web-rev1", Replicas: 3, Partition: 1}.AdvancedStatefulSet(&sts))
		checkMeta(t, sts.ObjectMeta, sts.Spec.Selector, sts.Spec.Template, "a", "")
		assert.Equal(t, int32(1), *sts.Spec.UpdateStrategy.RollingUpdate.Partition)
	})
}

func TestDesiredPatchAndUpdateOverExisting(t *testing.T) {
	ud := baseUD()
	ud.Spec.Template.DeploymentTemplate = &appsv1alpha1.DeploymentTemplateSpec{ObjectMeta: templMeta,
		Spec: appsv1.DeploymentSpec{Template: podTmpl()}}
	s := zone("a")
	patch := `{"metadata":{"labels":{"patched":"yes"}},"spec":{"containers":[{"name":"main","env":[{"name":"ZONE","value":"a"}]}]}}`
	s.Patch = runtime.RawExtension{Raw: []byte(patch)}
	existing := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web-a-xyz", Labels: map[string]string{"added-by-user": "1"},
		Annotations:     map[string]string{"deployment.kubernetes.io/revision": "2"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "Other", Name: "keep"}}}}
	require.NoError(t, Desired{UD: ud, Subset: &s, Revision: "web-rev1", Replicas: 2}.Deployment(&existing))
	checkMeta(t, existing.ObjectMeta, existing.Spec.Selector, existing.Spec.Template, "a", patch)
	assert.Equal(t, "web-a-xyz", existing.Name, "an update keeps the name")
	assert.Equal(t, "keep", existing.OwnerReferences[0].Name, "other owners are kept")
	assert.Equal(t, "1", existing.Labels["added-by-user"], "labels others set are kept")
	assert.Equal(t, "2", existing.Annotations["deployment.kubernetes.io/revision"])
	assert.Equal(t, "yes", existing.Spec.Template.Labels["patched"])
	c := existing.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "web:v1", c.Image, "the patch merges by container name")
	assert.Equal(t, []corev1.EnvVar{{Name: "ZONE", Value: "a"}}, c.Env)

	bad := zone("b")
	bad.Patch = runtime.RawExtension{Raw: []byte(`{"spec":{"containers":"not a list"}}`)}
	var d appsv1.Deployment
	assert.ErrorContains(t, Desired{UD: ud, Subset: &bad, Revision: "r"}.Deployment(&d), "subset b")
}

func TestAttachNodeAffinity(t *testing.T) {
	term := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}
	own := corev1.NodeSelectorRequirement{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}
	gpu := corev1.NodeSelectorRequirement{Key: "gpu", Operator: corev1.NodeSelectorOpExists}
	spec := corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{own}}, {MatchExpressions: []corev1.NodeSelectorRequirement{gpu}}}}}}}
	AttachNodeAffinity(&spec, term)
	terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	assert.Equal(t, []corev1.NodeSelectorRequirement{own, term.MatchExpressions[0]}, terms[0].MatchExpressions, "ANDed into every term")
	assert.Equal(t, []corev1.NodeSelectorRequirement{gpu, term.MatchExpressions[0]}, terms[1].MatchExpressions)

	empty := corev1.PodSpec{}
	AttachNodeAffinity(&empty, corev1.NodeSelectorTerm{})
	assert.Nil(t, empty.Affinity, "a term without expressions adds nothing")
}

func TestSubsetPrefix(t *testing.T) {
	assert.Equal(t, "web-zone-a-", SubsetPrefix("web", "zone-a"))
	long := strings.Repeat("u", 200)
	assert.Equal(t, long+"-", SubsetPrefix(long, strings.Repeat("s", 60)), "too long for a name prefix: <ud>- only")
}
