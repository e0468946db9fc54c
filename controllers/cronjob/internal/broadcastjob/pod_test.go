package broadcastjob

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
)

func TestNewPod(t *testing.T) {
	job := &appsv1alpha1.BroadcastJob{ObjectMeta: metav1.ObjectMeta{Name: "bcj", Namespace: "ns", UID: "uid-1"}}
	job.Spec.Template.Labels = map[string]string{"app": "x"}
	job.Spec.Template.Annotations = map[string]string{"a": "b"}
	job.Spec.Template.Spec.Containers = []corev1.Container{{Name: "main", Image: "busybox"}}
	zone := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	job.Spec.Template.Spec.Affinity = requiredAffinity(
		corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{zone}},
		corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: nodeplacement.NodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{"other"}}}},
	)
	before := job.DeepCopy()

	pod := newPod(job, "n1")
	assert.Equal(t, before, job, "the job is not modified")
	assert.Equal(t, "bcj-", pod.GenerateName)
	assert.Equal(t, "ns", pod.Namespace)
	assert.Equal(t, map[string]string{"app": "x", LabelJobName: "bcj", LabelJobUID: "uid-1"}, pod.Labels)
	assert.Equal(t, map[string]string{"a": "b"}, pod.Annotations)
	ref := metav1.GetControllerOf(pod)
	require.NotNil(t, ref)
	assert.Equal(t, "apps.kruise.io/v1alpha1", ref.APIVersion)
	assert.Equal(t, "BroadcastJob", ref.Kind)
	assert.Equal(t, job.UID, ref.UID)
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy, "empty restartPolicy becomes Never")
	assert.Empty(t, pod.Spec.NodeName, "the scheduler binds the pod")
	assert.Equal(t, "n1", nodeplacement.TargetNode(pod))

	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	require.Len(t, terms, 2)
	for _, term := range terms {
		assert.Equal(t, []corev1.NodeSelectorRequirement{{Key: nodeplacement.NodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}, term.MatchFields)
	}
	assert.Equal(t, []corev1.NodeSelectorRequirement{zone}, terms[0].MatchExpressions, "user expressions are kept")

	// The pinned pod is eligible for n1 only (given the user's own constraints hold).
	e := newEligibility(klog.Background(), &pod.Spec)
	ok, _ := e.Check(node("n1", map[string]string{"zone": "a"}))
	assert.True(t, ok)
	ok, _ = e.Check(node("n2", map[string]string{"zone": "a"}))
	assert.False(t, ok)
}

func TestNewPodLongNameAndBoundTemplate(t *testing.T) {
	job := &appsv1alpha1.BroadcastJob{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("j", 70), Namespace: "ns", UID: "u"}}
	job.Spec.Template.Spec.NodeName = "n1"
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	pod := newPod(job, "n1")
	assert.NotContains(t, pod.Labels, LabelJobName, "a name too long for a label value is left out")
	assert.Equal(t, "u", pod.Labels[LabelJobUID])
	assert.Nil(t, pod.Spec.Affinity, "a template bound to a node keeps its nodeName and needs no affinity")
	assert.Equal(t, corev1.RestartPolicyOnFailure, pod.Spec.RestartPolicy)
	assert.Equal(t, "n1", nodeplacement.TargetNode(pod))
	assert.Empty(t, nodeplacement.TargetNode(&corev1.Pod{}))
}
