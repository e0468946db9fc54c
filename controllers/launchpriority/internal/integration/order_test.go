package integration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// A SidecarSet's webhook runs before launch priority's (configuration name order), as in OpenKruise's one pod
// webhook: a sidecar injected before the app container gets the first priority, and an Ordered annotation a
// SidecarSet adds through patchPodMetadata (seed v1.1's example) takes effect although the pod as created had no
// annotation. A stand-in for sidecarset-controller's webhook (configuration "flotilla-sidecarset-<ns>") injects both.
func TestLaunchPriorityAfterSidecarInjection(t *testing.T) {
	h := newHarness(t)
	h.serveWebhook(admissionregistrationv1.Fail)
	h.startController()

	name := "flotilla-sidecarset-" + h.NS
	side := h.NewWebhook(h.NS, "sidecarset-test", kitwebhook.ConfigRef{Kind: kitwebhook.Mutating, Name: name})
	side.Server.Register("/inject", "test-sidecarset", kitwebhook.HandlerFunc(func(_ context.Context, req kitwebhook.Request) kitwebhook.Response {
		pod := &corev1.Pod{}
		if err := req.DecodeObject(pod); err != nil {
			return kitwebhook.Errored(400, err)
		}
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations["apps.kruise.io/container-launch-priority"] = "Ordered"
		pod.Spec.Containers = append([]corev1.Container{{Name: "sidecar", Image: "busybox"}}, pod.Spec.Containers...)
		return kitwebhook.Patched(req.Object.Raw, pod)
	}))
	policy := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	h.InstallMutating(&admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "inject.sidecarset.test.flotilla.dev", AdmissionReviewVersions: []string{"v1"}, SideEffects: &none,
			FailurePolicy: &policy, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: side.URL("/inject")},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: ptr.To(admissionregistrationv1.NamespacedScope)}}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": h.NS}},
			ObjectSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{"inject": "sidecar"}},
		}},
	})
	side.Serve()

	in := h.pod("injected", nil, nil, "app")
	in.Labels = map[string]string{"inject": "sidecar"}
	p, err := h.create(in)
	require.NoError(t, err)
	assert.Equal(t, "Ordered", p.Annotations["apps.kruise.io/container-launch-priority"])
	assert.Equal(t, []string{"injected-barrier/p_0", "injected-barrier/p_-1"}, barrierEnv(p), "sidecar first, then app")
	h.waitKeys("injected", "p_0")
}
