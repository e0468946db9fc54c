package deploy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Deployments serving admission or conversion webhooks on every replica (label flotilla.dev/webhook=true): with every
// replica down, failurePolicy Fail holds what they guard (conversion: reads at the non-storage version), so the replicas prefer different nodes and run at
// system-cluster-critical priority (issue 26 item 6).
func TestWebhookDeploymentsSpreadAndCritical(t *testing.T) {
	root := repoRoot(t)
	seen := 0
	for _, o := range render(t, root, "all") {
		if o.GetKind() != "Deployment" || o.GetLabels()["flotilla.dev/webhook"] != "true" {
			continue
		}
		seen++
		var d appsv1.Deployment
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d))
		spec := d.Spec.Template.Spec
		assert.Equal(t, "system-cluster-critical", spec.PriorityClassName, "%s", d.Name)
		require.NotNil(t, spec.Affinity, "%s: no affinity", d.Name)
		require.NotNil(t, spec.Affinity.PodAntiAffinity, "%s: no pod anti-affinity", d.Name)
		anti := spec.Affinity.PodAntiAffinity
		assert.Empty(t, anti.RequiredDuringSchedulingIgnoredDuringExecution, "%s: required anti-affinity would leave a replica Pending on a one-node cluster", d.Name)
		require.Len(t, anti.PreferredDuringSchedulingIgnoredDuringExecution, 1, "%s", d.Name)
		term := anti.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
		assert.Equal(t, "kubernetes.io/hostname", term.TopologyKey, "%s", d.Name)
		sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		require.NoError(t, err)
		own, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		require.NoError(t, err)
		assert.Equal(t, own.String(), sel.String(), "%s: the term selects the Deployment's own pods", d.Name)
	}
	assert.Equal(t, 3, seen, "pub-controller and sidecarset-controller serve admission webhooks, daemonset-controller (and sidecarset-controller) CRD conversion")
}
