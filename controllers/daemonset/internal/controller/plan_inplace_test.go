package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	"github.com/flotilla-dev/flotilla/kit/inplace"
)

// TestInPlaceSpecEnvFromMetadata: a template annotation that container env
// reads is an in-place change only with InPlaceUpdateEnvFromMetadata and a
// node agent's record on the pod (probe-agent restarts the container);
// otherwise the pod is recreated.
func TestInPlaceSpecEnvFromMetadata(t *testing.T) {
	rev := func(name, cfg string) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: runtime.RawExtension{Raw: []byte(
			`{"spec":{"template":{"metadata":{"annotations":{"cfg":"` + cfg + `"}},"spec":{"containers":[{"name":"app","image":"a:1",` +
				`"env":[{"name":"CFG","valueFrom":{"fieldRef":{"fieldPath":"metadata.annotations['cfg']"}}}]}]}}}}`)}}
	}
	v1, v2 := rev("ds-1111", "v1"), rev("ds-2222", "v2")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{pub.ControllerRevisionHashLabelKey: "ds-1111"}},
		Spec:       corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}},
	}
	recorded := pod.DeepCopy() // a node agent recorded its containers: it will restart them
	recorded.Annotations = map[string]string{pub.RuntimeContainerMetaKey: `{"containers":[]}`}
	for _, tc := range []struct {
		pod  *corev1.Pod
		gate bool
		why  string
	}{{recorded, true, ""}, {recorded, false, inplace.NotInPlaceEnvFromMetadata}, {pod, true, inplace.NotInPlaceNoAgentRecord}} {
		spec, why := inPlaceSpec(tc.pod, []*appsv1.ControllerRevision{v1, v2}, v2, tc.gate)
		assert.Equal(t, tc.why, why, "gate %v, recorded %v", tc.gate, tc.pod == recorded)
		if tc.why == "" {
			assert.Equal(t, "v2", spec.ContainerRefMetadata["app"].Annotations["cfg"])
		}
	}
}
