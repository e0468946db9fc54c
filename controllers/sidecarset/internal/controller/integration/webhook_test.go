package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/flotilla-dev/flotilla/apis/apps/v1alpha1"
	flotillainformers "github.com/flotilla-dev/flotilla/client/informers/externalversions"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/sidecarcontrol"
	"github.com/flotilla-dev/flotilla/controllers/sidecarset/internal/webhook"
	"github.com/flotilla-dev/flotilla/kit/testenv"
	kitwebhook "github.com/flotilla-dev/flotilla/kit/webhook"
)

// startWebhook serves the pod injection webhook in-process on 127.0.0.1
// (certificates in a Secret of the test namespace) behind a
// MutatingWebhookConfiguration of the test's own that only this namespace's
// pods reach, and returns once the API server can call it.
func (h *harness) startWebhook() {
	t := h.T
	t.Helper()
	config := "flotilla-sc-test-" + h.NS
	wh := h.NewWebhook(h.NS, "sidecarset-webhook", kitwebhook.ConfigRef{Kind: kitwebhook.Mutating, Name: config})
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	h.InstallMutating(&admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: config},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:         webhook.PodWebhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: wh.URL(webhook.PodPath)},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](5),
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: h.NS}},
		}},
	})

	sets := flotillainformers.NewSharedInformerFactoryWithOptions(h.Client, 0,
		flotillainformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = labels.Set{testLabel: h.NS}.String() }))
	setInf := sets.Apps().V1alpha1().SidecarSets()
	kube := informers.NewSharedInformerFactory(h.Env.Kube, 0)
	nsInf := kube.Core().V1().Namespaces()
	sys := informers.NewSharedInformerFactoryWithOptions(h.Env.Kube, 0, informers.WithNamespace(h.revNS))
	revInf := sys.Apps().V1().ControllerRevisions()
	require.NoError(t, revInf.Informer().AddIndexers(cache.Indexers{sidecarcontrol.RevisionIndex: sidecarcontrol.IndexRevisionBySidecarSet}))
	cmInf := sys.Core().V1().ConfigMaps()
	(&webhook.Handlers{
		Sets: setInf.Lister(), Namespaces: nsInf.Lister(), Kube: h.Env.Kube,
		Revisions:  sidecarcontrol.RevisionIndexer{Indexer: revInf.Informer().GetIndexer()},
		ConfigMaps: cmInf.Lister(), SystemNamespace: h.revNS,
	}).Register(wh.Server)
	wh.Informers(sets, kube, sys)
	wh.Serve()
}

// End to end through the webhook: a Deployment's pods are injected by the
// API server calling the webhook (cold and hot sidecars, the pinned
// revision), the controller counts them, and a sidecar image change rolls
// them in place — the Deployment, whose template did not change, recreates
// nothing.
func TestWebhookInjectionAndUpgrade(t *testing.T) {
	h := newHarness(t)
	h.startController()
	h.startWebhook()
	set := h.createSet(h.newSet("web", sideV1, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers = append(s.Spec.Containers, appsv1alpha1.SidecarContainer{
			Container: corev1.Container{Name: "proxy", Image: sideV1},
			UpgradeStrategy: appsv1alpha1.SidecarContainerUpgradeStrategy{
				UpgradeType: appsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: emptyImage,
			},
		})
		s.Spec.UpdateStrategy.Type = appsv1alpha1.NotUpdateSidecarSetStrategyType
	}))
	h.waitStatus("web", "latest revision", func(s appsv1alpha1.SidecarSetStatus) bool { return s.LatestRevision != "" })
	// Wait for the webhook's caches to know the SidecarSet: a probe pod is injected.
	testenv.Eventually(t, waitTimeout, func() (bool, error) {
		p, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Labels: map[string]string{"app": "web", "probe": "true"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.local/app:v1"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, err
		}
		_ = h.Env.Kube.CoreV1().Pods(h.NS).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		return sidecarcontrol.IsInjected(p, set.Name), nil
	})

	_, err := h.Env.Kube.AppsV1().Deployments(h.NS).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "probe": "false"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "probe": "false"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.local/app:v1"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	onlyDeployment := func(ps []corev1.Pod) []corev1.Pod {
		var out []corev1.Pod
		for _, p := range ps {
			if p.Labels["probe"] == "false" {
				out = append(out, p)
			}
		}
		return out
	}
	var before []corev1.Pod
	h.waitPods("web", "3 injected pods ready", func(ps []corev1.Pod) bool {
		before = onlyDeployment(ps)
		return allReady(3)(before)
	})
	for i := range before {
		p := &before[i]
		assert.Equal(t, []string{"side", "proxy-1", "proxy-2", "main"}, containerNames(p.Spec.Containers), p.Name)
		assert.Equal(t, set.Name, p.Annotations[sidecarcontrol.InjectedListAnnotation])
		assert.Equal(t, sidecarcontrol.Hash(set), sidecarcontrol.PodHash(p, set.Name))
	}
	h.waitStatus("web", "3 matched and ready", func(s appsv1alpha1.SidecarSetStatus) bool {
		return s.MatchedPods == 3 && s.UpdatedReadyPods == 3
	})

	h.sets.Modify(set.Name, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Type = appsv1alpha1.RollingUpdateSidecarSetStrategyType
		setImage("side", sideV2)(s)
		setImage("proxy", sideV2)(s)
	})
	var after []corev1.Pod
	h.waitPods("web", "3 pods on v2, flipped", func(ps []corev1.Pod) bool {
		after = onlyDeployment(ps)
		if !allOn(3, "side", sideV2)(after) {
			return false
		}
		for i := range after {
			if w, idle := sidecarcontrol.HotUpgradeContainers("proxy", &after[i]); image(&after[i], w) != sideV2 || statusImage(&after[i], idle) != emptyImage {
				return false
			}
		}
		return true
	})
	assert.Equal(t, testenv.PodUIDs(before), testenv.PodUIDs(after), "upgraded in place; the Deployment recreated nothing")
	h.waitStatus("web", "3 updated and ready", func(s appsv1alpha1.SidecarSetStatus) bool {
		return s.MatchedPods == 3 && s.UpdatedPods == 3 && s.UpdatedReadyPods == 3
	})

	// A pod the SidecarSet does not select is created untouched.
	other, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{"app": "other"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.local/app:v1"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Len(t, other.Spec.Containers, 1)
	assert.Empty(t, other.Annotations[sidecarcontrol.InjectedListAnnotation])

	// namespaceSelector (instead of spec.namespace), then injectionStrategy.paused and back.
	ns := h.createSet(h.newSet("nssel", sideV1, func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Namespace = ""
		s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: h.NS}}
	}))
	i := 0
	injected := func() bool {
		i++
		p, err := h.Env.Kube.CoreV1().Pods(h.NS).Create(context.Background(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("nssel-%d", i), Labels: map[string]string{"app": "nssel"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.local/app:v1"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return sidecarcontrol.IsInjected(p, ns.Name)
	}
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return injected(), nil })
	h.sets.Modify(ns.Name, func(s *appsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true })
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return !injected(), nil })
	h.sets.Modify(ns.Name, func(s *appsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Paused = false })
	testenv.Eventually(t, waitTimeout, func() (bool, error) { return injected(), nil })
}
