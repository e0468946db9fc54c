package openkruise

import (
	"encoding/json"
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// UnitedDeploymentRevision mirrors OpenKruise v1.9 pkg/controller/uniteddeployment revision.go newRevision for a
// UnitedDeployment with a deploymentTemplate: data from getUnitedDeploymentPatch (the whole object encoded,
// spec.template kept under a fresh "spec" with "$patch":"replace"; Kubernetes 1.32 types write the zero
// creationTimestamp of the Deployment template's and its pod template's metadata as null), named
// <ud>-<hash> (collision count 0) and labelled by history.NewControllerRevision with the deploymentTemplate's
// labels, controllerRef to the UnitedDeployment, in its namespace.
func UnitedDeploymentRevision(t testing.TB, ud *appsv1alpha1.UnitedDeployment, number int64) *appsv1.ControllerRevision {
	t.Helper()
	whole, err := json.Marshal(ud)
	if err != nil {
		t.Fatalf("openkruise: encoding UnitedDeployment: %v", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(whole, &raw); err != nil {
		t.Fatalf("openkruise: decoding UnitedDeployment: %v", err)
	}
	tmpl := raw["spec"].(map[string]any)["template"].(map[string]any)
	dep := tmpl["deploymentTemplate"].(map[string]any)
	nullTimestamp(dep)
	nullTimestamp(dep["spec"].(map[string]any)["template"].(map[string]any))
	tmpl["$patch"] = "replace"
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": tmpl}})
	if err != nil {
		t.Fatalf("openkruise: encoding revision data: %v", err)
	}
	hash := Hash(data, 0)
	labels := maps.Clone(ud.Spec.Template.DeploymentTemplate.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels["controller.kubernetes.io/hash"] = hash
	return &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: ud.Name + "-" + hash, Namespace: ud.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ud, appsv1alpha1.SchemeGroupVersion.WithKind("UnitedDeployment"))},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}
}

func nullTimestamp(obj map[string]any) {
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	if _, ok := meta["creationTimestamp"]; !ok {
		meta["creationTimestamp"] = nil
	}
}

// UnitedDeploymentDeployment mirrors OpenKruise v1.9 adapter/deployment_adapter.go ApplySubsetTemplate: the subset
// Deployment named name (generateName <ud>-<subset>-), labelled with the template's labels, the selector's
// matchLabels, apps.kruise.io/controller-revision-hash and apps.kruise.io/subset-name, the template's annotations
// and apps.kruise.io/subset-patch, a controllerRef to the UnitedDeployment, the template's spec with selector +
// subset label, replicas, the two labels on the pod template, the subset's match expressions appended to one
// required node-selector term and its tolerations appended.
func UnitedDeploymentDeployment(ud *appsv1alpha1.UnitedDeployment, subset appsv1alpha1.Subset, name, revision string, replicas int32) *appsv1.Deployment {
	tmpl := ud.Spec.Template.DeploymentTemplate
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: ud.Namespace, GenerateName: ud.Name + "-" + subset.Name + "-",
		Labels: map[string]string{}, Annotations: map[string]string{},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ud, appsv1alpha1.SchemeGroupVersion.WithKind("UnitedDeployment"))},
	}}
	maps.Copy(d.Labels, tmpl.Labels)
	maps.Copy(d.Labels, ud.Spec.Selector.MatchLabels)
	d.Labels["apps.kruise.io/controller-revision-hash"] = revision
	d.Labels["apps.kruise.io/subset-name"] = subset.Name
	maps.Copy(d.Annotations, tmpl.Annotations)
	d.Annotations["apps.kruise.io/subset-patch"] = string(subset.Patch.Raw)
	d.Spec = *tmpl.Spec.DeepCopy()
	sel := ud.Spec.Selector.DeepCopy()
	sel.MatchLabels["apps.kruise.io/subset-name"] = subset.Name
	d.Spec.Selector = sel
	d.Spec.Replicas = ptr.To(replicas)
	if d.Spec.Template.Labels == nil {
		d.Spec.Template.Labels = map[string]string{}
	}
	d.Spec.Template.Labels["apps.kruise.io/subset-name"] = subset.Name
	d.Spec.Template.Labels["apps.kruise.io/controller-revision-hash"] = revision
	pod := &d.Spec.Template.Spec
	if len(subset.NodeSelectorTerm.MatchExpressions) > 0 {
		pod.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: subset.NodeSelectorTerm.MatchExpressions}}}}}
	}
	pod.Tolerations = append(pod.Tolerations, subset.Tolerations...)
	return d
}
