package broadcastjob

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// Labels every BroadcastJob pod carries (the names OpenKruise uses, so tools that select its pods keep working).
const (
	LabelJobName = "broadcastjob-name"
	LabelJobUID  = "broadcastjob-controller-uid"
)

// nodeNameField is the node field the scheduler matches in matchFields terms.
const nodeNameField = "metadata.name"

var controllerKind = appsv1alpha1.SchemeGroupVersion.WithKind("BroadcastJob")

// newPod builds the pod the job runs on node. The pod is not bound directly: each required node-affinity term
// gets `metadata.name In [node]` (ANDed with the user's own expressions), so kube-scheduler places it, honours
// the rest of the spec (resources, ports, ...) and reports why if it cannot.
func newPod(job *appsv1alpha1.BroadcastJob, node string) *corev1.Pod {
	tmpl := job.Spec.Template.DeepCopy()
	labels := make(map[string]string, len(tmpl.Labels)+2)
	for k, v := range tmpl.Labels {
		labels[k] = v
	}
	// A label value is at most 63 characters; longer job names are still found through the UID label.
	if len(validation.IsValidLabelValue(job.Name)) == 0 {
		labels[LabelJobName] = job.Name
	}
	labels[LabelJobUID] = string(job.UID)

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    job.Name + "-",
			Namespace:       job.Namespace,
			Labels:          labels,
			Annotations:     tmpl.Annotations,
			Finalizers:      tmpl.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, controllerKind)},
		},
		Spec: tmpl.Spec,
	}
	if pod.Spec.RestartPolicy == "" {
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	if pod.Spec.NodeName == "" {
		pod.Spec.Affinity = pinToNode(pod.Spec.Affinity, node)
	}
	return pod
}

// pinToNode returns affinity (which it may modify: pass a copy) whose required node affinity only matches node.
// Terms are ORed, so every term gets the node constraint; a user's own metadata.name fields are replaced.
func pinToNode(affinity *corev1.Affinity, node string) *corev1.Affinity {
	field := corev1.NodeSelectorRequirement{Key: nodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if affinity == nil {
		affinity = &corev1.Affinity{}
	}
	if affinity.NodeAffinity == nil {
		affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{field}}},
		}
		return affinity
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		fields := []corev1.NodeSelectorRequirement{field}
		for _, f := range terms[i].MatchFields {
			if f.Key != nodeNameField {
				fields = append(fields, f)
			}
		}
		terms[i].MatchFields = fields
	}
	return affinity
}

// targetNode is the node a job pod belongs to: where it is bound, else the node its affinity pins it to.
func targetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == nodeNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// podFinished reports whether the pod reached a terminal phase.
func podFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// containerRestarts sums the restart counts of the pod's containers (init containers included): with
// restartPolicy OnFailure each restart is a retry the kubelet made in place.
func containerRestarts(pod *corev1.Pod) int32 {
	var n int32
	for _, s := range pod.Status.InitContainerStatuses {
		n += s.RestartCount
	}
	for _, s := range pod.Status.ContainerStatuses {
		n += s.RestartCount
	}
	return n
}
