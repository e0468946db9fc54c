package broadcastjob

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
)

// Labels every BroadcastJob pod carries (the names OpenKruise uses, so tools that select its pods keep working).
const (
	LabelJobName = "broadcastjob-name"
	LabelJobUID  = "broadcastjob-controller-uid"
)

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
		pod.Spec.Affinity = nodeplacement.PinToNode(pod.Spec.Affinity, node)
	}
	return pod
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
