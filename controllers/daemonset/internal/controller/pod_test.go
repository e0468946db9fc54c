package controller

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/apis/apps/pub"
	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/nodeplacement"
)

func TestNewPod(t *testing.T) {
	ds := dsWith(ru(func(r *appsv1alpha1.RollingUpdateDaemonSet) { r.Type = appsv1alpha1.InplaceRollingUpdateType }),
		func(ds *appsv1alpha1.DaemonSet) {
			ds.Annotations = map[string]string{"deprecated.daemonset.template.generation": "3"}
			ds.Spec.Template.Labels = map[string]string{"app": "x"}
			ds.Spec.Template.Spec.Containers = []corev1.Container{{Name: "main", Image: "a:1"}}
		})
	p := newPod(ds, "n1", "h1")
	assert.Equal(t, "ds-", p.GenerateName)
	assert.True(t, strings.HasPrefix(p.Name, "ds-") && len(p.Name) == len("ds-")+5)
	assert.Equal(t, map[string]string{"app": "x", pub.ControllerRevisionHashLabelKey: "h1", podTemplateGenerationLabel: "3"}, p.Labels)
	assert.True(t, metav1.IsControlledBy(p, ds))
	assert.Equal(t, "n1", nodeplacement.TargetNode(p))
	assert.Empty(t, p.Spec.NodeName, "placed by the scheduler")
	assert.ElementsMatch(t, []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}, {ConditionType: pub.KruisePodReadyConditionType}},
		p.Spec.ReadinessGates)
	assert.Len(t, p.Spec.Tolerations, len(daemonTolerations))
	assert.Empty(t, ds.Spec.Template.Spec.Tolerations, "the template is not modified")

	// KruisePodReady on every pod (OpenKruise's pod webhook injects it into
	// every pod of its workloads), not only when markPodNotReady is set at
	// creation: a hook turned on later must be able to mark running pods.
	plain := newPod(dsWith(), "n1", "h1")
	assert.Equal(t, []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}, plain.Spec.ReadinessGates)

	long := dsWith(func(ds *appsv1alpha1.DaemonSet) { ds.Name = strings.Repeat("d", 70) })
	p = newPod(long, "n1", "h1")
	assert.Equal(t, strings.Repeat("d", 70)+"-", p.GenerateName)
	assert.Len(t, p.Name, 63, "cut like the API server's generated names")
}
