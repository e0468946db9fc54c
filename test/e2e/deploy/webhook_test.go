package deploy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
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
	assert.Equal(t, 7, seen, "pub-, sidecarset-, deletionprotection-, launchpriority-, workloadspread- and persistentpodstate-controller serve admission webhooks, daemonset-controller (and sidecarset-controller) CRD conversion")
}

// Issue 23: a conversion webhook behind a Service of Ready endpoints only deadlocks a fresh install where objects of
// the kind already exist (taking over from OpenKruise, reinstalling the feature): the controller's readiness waits on
// an informer of the kind, listing at v1alpha1 needs conversion, and conversion needs a Ready endpoint. So every
// Service a CRD's conversion stanza names publishes not-ready addresses, on the stanza's port to the pods' webhook
// port, and selects the pods of a Deployment serving webhooks; while every Service an admission webhook
// configuration names keeps readiness gating (an unsynced replica would inject or decide nothing), so no Service is
// named by both.
func TestConversionServicesPublishNotReadyAddresses(t *testing.T) {
	root := repoRoot(t)
	objs := append(render(t, root, "crds"), render(t, root, "all")...)
	services := map[string]*corev1.Service{}
	var deployments []appsv1.Deployment
	admission := map[string]bool{}
	for _, o := range objs {
		switch o.GetKind() {
		case "Service":
			var s corev1.Service
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &s))
			services[s.Namespace+"/"+s.Name] = &s
		case "Deployment":
			var d appsv1.Deployment
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d))
			deployments = append(deployments, d)
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
			require.NoError(t, err)
			for _, h := range hooks {
				ns, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "service", "namespace")
				name, _, _ := unstructured.NestedString(h.(map[string]any), "clientConfig", "service", "name")
				if name != "" {
					admission[ns+"/"+name] = true
				}
			}
		}
	}
	require.NotEmpty(t, admission)
	converted := 0
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &crd))
		c := crd.Spec.Conversion
		if c == nil || c.Strategy != apiextensionsv1.WebhookConverter {
			continue
		}
		converted++
		require.NotNil(t, c.Webhook.ClientConfig.Service, "%s: conversion by Service", crd.Name)
		ref := c.Webhook.ClientConfig.Service
		key := ref.Namespace + "/" + ref.Name
		svc := services[key]
		require.NotNil(t, svc, "%s: conversion Service %s is not rendered by deploy/overlays/all", crd.Name, key)
		assert.True(t, svc.Spec.PublishNotReadyAddresses, "%s: conversion Service %s must publish not-ready addresses (issue 23)", crd.Name, key)
		assert.False(t, admission[key], "%s: conversion Service %s also serves admission, which must keep readiness gating", crd.Name, key)
		port := false
		for _, p := range svc.Spec.Ports {
			port = port || (ref.Port != nil && p.Port == *ref.Port && p.TargetPort.StrVal == "webhook")
		}
		assert.True(t, port, "%s: Service %s has no port %v to the pods' webhook port", crd.Name, key, ref.Port)
		selected := false
		for _, d := range deployments {
			if d.Namespace == svc.Namespace && d.Labels["flotilla.dev/webhook"] == "true" && len(svc.Spec.Selector) > 0 &&
				labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
				selected = true
			}
		}
		assert.True(t, selected, "%s: Service %s selects no webhook Deployment's pods", crd.Name, key)
	}
	assert.Equal(t, 2, converted, "the DaemonSet and SidecarSet CRDs convert by webhook")
	for key := range admission {
		if svc := services[key]; assert.NotNil(t, svc, "admission Service %s is rendered", key) {
			assert.False(t, svc.Spec.PublishNotReadyAddresses, "admission Service %s keeps readiness gating", key)
		}
	}
}
