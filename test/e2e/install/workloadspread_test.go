package install

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	"github.com/flotilla-dev/flotilla/kit/testenv"
)

// workloadSpread: installed from its overlay (webhooks through its Service, failurePolicy Fail), a Deployment's
// pods are spread over the kwok zones (2 in the limited zone-0 subset, the rest in zone-1) and counted in the
// status; the uninstall removes both webhook configurations and the Deployment, keeps the WorkloadSpread, and a
// pod created afterwards is unplaced; the other features run on.
func workloadSpread(t *testing.T, in *installer) {
	ctx := context.Background()
	others := in.installed()
	in.install("workloadspread")
	ns := in.env.Namespace(t)
	spreads := in.client.AppsV1alpha1().WorkloadSpreads(ns)
	two := intstr.FromInt32(2)
	zone := func(z string) *corev1.NodeSelectorTerm {
		return &corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}}
	}
	_, err := spreads.Create(ctx, &appsv1alpha1.WorkloadSpread{ObjectMeta: metav1.ObjectMeta{Name: "spread"}, Spec: appsv1alpha1.WorkloadSpreadSpec{
		TargetReference: &appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "spread"},
		Subsets: []appsv1alpha1.WorkloadSpreadSubset{{Name: "fixed", RequiredNodeSelectorTerm: zone("zone-0"), MaxReplicas: &two},
			{Name: "elastic", RequiredNodeSelectorTerm: zone("zone-1")}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		w, err := spreads.Get(ctx, "spread", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range w.Status.Conditions {
			if c.Type == "WebhookInScope" && c.Status == metav1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	labels := map[string]string{"app": "spread"}
	deploys := in.env.Kube.AppsV1().Deployments(ns)
	_, err = deploys.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "spread"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(int32(4)), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"type": "kwok"}, Containers: []corev1.Container{{Name: "main", Image: "registry.example/app:v1"}}}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	subsets := func() map[string]int {
		out := map[string]int{}
		list, err := in.env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=spread"})
		require.NoError(t, err)
		for _, p := range list.Items {
			// The annotation is OpenKruise's JSON: {"name","subset"} and, for a pod placed in a limited subset
			// before it had a name, the "uid" the webhook gave it; count by subset.
			var a struct{ Name, Subset string }
			if v, ok := p.Annotations["apps.kruise.io/matched-workloadspread"]; ok {
				require.NoError(t, json.Unmarshal([]byte(v), &a), "pod %s: annotation %q", p.Name, v)
			}
			out[a.Name+"/"+a.Subset]++
		}
		return out
	}
	var last map[string]int
	defer func() {
		if t.Failed() {
			t.Logf("pods per subset annotation at the end: %v", last)
		}
	}()
	testenv.Eventually(t, 2*time.Minute, func() (bool, error) {
		s := subsets()
		last = s
		return s["spread/fixed"] == 2 && s["spread/elastic"] == 2, nil
	})
	testenv.Eventually(t, time.Minute, func() (bool, error) {
		w, err := spreads.Get(ctx, "spread", metav1.GetOptions{})
		return err == nil && len(w.Status.SubsetStatuses) == 2 && w.Status.SubsetStatuses[0].Replicas == 2 && w.Status.SubsetStatuses[1].Replicas == 2, err
	})

	in.uninstall("workloadspread")
	admission := in.env.Kube.AdmissionregistrationV1()
	_, err = admission.MutatingWebhookConfigurations().Get(ctx, "flotilla-workloadspread", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the mutating configuration is gone: %v", err)
	_, err = admission.ValidatingWebhookConfigurations().Get(ctx, "flotilla-workloadspread", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the validating configuration is gone: %v", err)
	_, err = spreads.Get(ctx, "spread", metav1.GetOptions{})
	assert.NoError(t, err, "the WorkloadSpread is kept")
	_, err = deploys.Patch(ctx, "spread", "application/merge-patch+json", []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	testenv.Eventually(t, time.Minute, func() (bool, error) { return subsets()["/"] == 1, nil })
	in.assertKept(others)
}
