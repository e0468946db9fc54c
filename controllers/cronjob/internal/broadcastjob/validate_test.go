package broadcastjob

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
)

// runtimeInvalid are the specs the CRD admits but a BroadcastJob cannot run; the integration test reuses them.
var runtimeInvalid = []struct {
	name   string
	mutate func(*appsv1alpha1.BroadcastJob)
	want   string
}{
	{"restartPolicy Always", func(j *appsv1alpha1.BroadcastJob) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways }, "restartPolicy"},
	{"no containers", func(j *appsv1alpha1.BroadcastJob) { j.Spec.Template.Spec.Containers = nil }, "containers: Required"},
	{"container without image", func(j *appsv1alpha1.BroadcastJob) { j.Spec.Template.Spec.Containers[0].Image = "" }, "containers[0]"},
	{"bad node affinity operator", func(j *appsv1alpha1.BroadcastJob) {
		j.Spec.Template.Spec.Affinity = requiredAffinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "k", Operator: "Near", Values: []string{"v"}}}})
	}, "nodeAffinity"},
}

func TestValidate(t *testing.T) {
	valid := func() *appsv1alpha1.BroadcastJob {
		j := &appsv1alpha1.BroadcastJob{}
		j.Spec.Template.Spec.Containers = []corev1.Container{{Name: "main", Image: "busybox"}}
		j.Spec.Template.Spec.NodeSelector = map[string]string{"some": "label"} // checked before the affinity
		return j
	}
	assert.Empty(t, validate(valid()))
	for _, rp := range []corev1.RestartPolicy{"", corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure} {
		j := valid()
		j.Spec.Template.Spec.RestartPolicy = rp
		assert.Empty(t, validate(j), "restartPolicy %q", rp)
	}
	for _, tc := range runtimeInvalid {
		j := valid()
		tc.mutate(j)
		assert.Contains(t, validate(j), tc.want, tc.name)
	}
	j := valid()
	j.Spec.Parallelism = ptr.To(intstr.FromString("lots"))
	assert.Contains(t, validate(j), "spec.parallelism")
}
